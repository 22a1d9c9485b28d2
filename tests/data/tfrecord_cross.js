// SPDX-License-Identifier: Apache-2.0
// Cross-check of our TFRecord and tf.train.Example bytes with an independent
// implementation, the npm package @roboflow/tfrecords (its own CRC32C, google-protobuf
// for the Example; its TFRecordsImageMessage has Example's field 1 = Features).
// Driven by tests/data/tfrecord_node_test.cpp; NODE_PATH must reach the package.
//
//   node tfrecord_cross.js write OUT N   writes N examples (values below) to OUT
//   node tfrecord_cross.js read IN       prints every record of IN, one line each:
//       record 0: b=bytes:00ff f=float:3f000000,80000000 i=int64:0,-0 ...
//     features sorted by name; floats as the hex of their float32 bits, bytes as hex.
"use strict";
const fs = require("fs");
const { TFRecordsBuilder, FeatureType } = require("@roboflow/tfrecords");
const { TFRecordsReader } = require("@roboflow/tfrecords/src/tensorFlowReader");

// Example i: the values tfrecord_node_test.cpp expects.
function build(i) {
  const b = new TFRecordsBuilder();
  b.addArrayFeature("f", FeatureType.Float, [i + 0.5, -i * 0.25, 1e-3 * i]);
  b.addArrayFeature("i", FeatureType.Int64, [i, -1000 * i, 2 ** 40 + i]);
  b.addArrayFeature("s", FeatureType.String, ["name" + i, "\u00fcn\u00efcode"]);
  const bytes = new Uint8Array(i + 1);
  for (let k = 0; k <= i; ++k) bytes[k] = (k * 37 + 255) & 0xff;
  b.addArrayFeature("b", FeatureType.Binary, [bytes]);
  if (i === 0) b.addArrayFeature("e", FeatureType.Float, []);
  return b.build();
}

function hex(u8) {
  return Buffer.from(u8).toString("hex");
}

function floatBits(x) {
  const dv = new DataView(new ArrayBuffer(4));
  dv.setFloat32(0, x, true);
  return dv.getUint32(0, true).toString(16).padStart(8, "0");
}

function describe(feature) {
  if (feature.hasFloatList()) return "float:" + feature.getFloatList().getValueList().map(floatBits).join(",");
  if (feature.hasInt64List()) return "int64:" + feature.getInt64List().getValueList().map(String).join(",");
  if (feature.hasBytesList()) return "bytes:" + feature.getBytesList().getValueList_asU8().map(hex).join(",");
  return "none:";
}

const [mode, file, n] = process.argv.slice(2);
if (mode === "write") {
  const records = [];
  for (let i = 0; i < Number(n); ++i) records.push(build(i));
  fs.writeFileSync(file, TFRecordsBuilder.buildTFRecords(records));
} else if (mode === "read") {
  const reader = new TFRecordsReader(fs.readFileSync(file));
  // The reader has no per-record accessor for the feature map; use its messages.
  const messages = reader.imageMessages;
  messages.forEach((m, r) => {
    const entries = [];
    m.getContext().getFeatureMap().forEach((f, name) => entries.push([name, describe(f)]));
    entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    console.log(`record ${r}: ` + entries.map(([k, v]) => `${k}=${v}`).join(" "));
  });
  console.log(`count ${messages.length}`);
} else {
  console.error("usage: tfrecord_cross.js write OUT N | read IN");
  process.exit(2);
}
