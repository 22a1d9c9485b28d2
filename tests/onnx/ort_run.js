// SPDX-License-Identifier: Apache-2.0
// Runs an ONNX model in ONNX Runtime (npm onnxruntime-node) for tests/onnx/export_test.cpp:
//
//   NODE_PATH=data/node_modules node tests/onnx/ort_run.js model.onnx OUTDIR name=in.npy ...
//
// Reads each input from a .npy file (little-endian, C order), runs the model on the CPU
// with 2 threads, and writes each output to OUTDIR/<output name>.npy. Prints one line per
// output ("name dtype [dims]"); exits 1 with the error on failure.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const kDescr = {
  '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '|b1': ['bool', Uint8Array], '|u1': ['uint8', Uint8Array],
  '|i1': ['int8', Int8Array],
};

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 0, 6) !== '\x93NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + headerLen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: Fortran order is not supported`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').map((s) => s.trim()).filter((s) => s)
    .map(Number);
  const [type, Arr] = kDescr[descr] || [];
  if (!type) throw new Error(`${file}: dtype ${descr} is not supported`);
  const bytes = buf.subarray(start + headerLen);
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  let data = new Arr(copy.buffer, 0, copy.length / Arr.BYTES_PER_ELEMENT);
  if (type === 'bool') data = Uint8Array.from(data, (v) => (v ? 1 : 0));
  return new ort.Tensor(type, data, shape);
}

function writeNpy(file, tensor) {
  const entry = Object.entries(kDescr).find(([, [t]]) => t === tensor.type);
  if (!entry) throw new Error(`output type ${tensor.type} is not supported`);
  const dims = tensor.dims.map(String);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '${entry[0]}', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const data = tensor.type === 'bool' ? Uint8Array.from(tensor.data, (v) => (v ? 1 : 0)) : tensor.data;
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'),
    Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

async function main() {
  const [model, outdir, ...specs] = process.argv.slice(2);
  if (!model || !outdir) throw new Error('usage: ort_run.js model.onnx outdir name=file.npy ...');
  const feeds = {};
  for (const spec of specs) {
    const eq = spec.indexOf('=');
    feeds[spec.slice(0, eq)] = readNpy(spec.slice(eq + 1));
  }
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: 2, interOpNumThreads: 1 });
  const results = await session.run(feeds);
  fs.mkdirSync(outdir, { recursive: true });
  for (const name of session.outputNames) {
    const t = results[name];
    writeNpy(path.join(outdir, `${name}.npy`), t);
    console.log(`${name} ${t.type} [${t.dims.join(',')}]`);
  }
}

main().catch((e) => {
  console.error(`ort_run: ${e.message}`);
  process.exit(1);
});
