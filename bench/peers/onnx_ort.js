// SPDX-License-Identifier: Apache-2.0
// The ONNX Runtime peer of bench/bench_onnx.cpp: times one model's inference on the CPU.
//
//   NODE_PATH=/tmp/ort/node_modules node bench/peers/onnx_ort.js model.onnx BATCH THREADS ITERS
//
// Input: <model dir>/b<BATCH>/test_data_set_0/input_0.pb when present (what
// scripts/make-onnx-models.py writes, the inputs deepflow's benchmark runs on), else
// uniform [-1, 1) values of the model's input shape at batch BATCH. The session runs with
// intraOpNumThreads THREADS, interOpNumThreads 1, sequential execution, every graph
// optimization; warmup runs (3, or until 1 s) are not timed. Prints one JSON line:
//   {"model", "batch", "threads", "iters", "median_ms", "min_ms", "mean_ms", "cpu_median_ms",
//    "input", "ort"}
// (cpu_median_ms: the process's CPU time per run, all threads; on a loaded machine it
// shows the work apart from the waiting.)
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// TensorProto.DataType -> [ort type, typed array]
const kTypes = { 1: ['float32', Float32Array], 7: ['int64', BigInt64Array], 11: ['float64', Float64Array] };

function readVarint(buf, pos) {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    const b = buf[pos++];
    value |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [value, pos];
    shift += 7n;
  }
}

// The fields a TensorProto file from make-onnx-models.py (or the ONNX test data) uses:
// dims (1, packed or not), data_type (2), raw_data (9); typed fields are not read.
function readTensorProto(file) {
  const buf = fs.readFileSync(file);
  const dims = [];
  let dataType = 0;
  let raw = null;
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      let v;
      [v, pos] = readVarint(buf, pos);
      if (field === 1) dims.push(Number(v));
      if (field === 2) dataType = Number(v);
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      const end = pos + Number(len);
      if (field === 1) {
        while (pos < end) {
          let d;
          [d, pos] = readVarint(buf, pos);
          dims.push(Number(d));
        }
      } else if (field === 9) {
        raw = buf.subarray(pos, end);
      }
      pos = end;
    } else if (wire === 1) {
      pos += 8;
    } else if (wire === 5) {
      pos += 4;
    } else {
      throw new Error(`${file}: unsupported protobuf wire type ${wire}`);
    }
  }
  const [type, Arr] = kTypes[dataType] || [];
  if (!type) throw new Error(`${file}: TensorProto data_type ${dataType} is not supported`);
  if (!raw) throw new Error(`${file}: no raw_data`);
  const copy = new Uint8Array(raw.length);  // aligned for the typed array
  copy.set(raw);
  return new ort.Tensor(type, new Arr(copy.buffer, 0, copy.length / Arr.BYTES_PER_ELEMENT), dims);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function main() {
  const [modelPath, batchArg, threadsArg, itersArg] = process.argv.slice(2);
  if (!modelPath) {
    console.error('usage: node onnx_ort.js model.onnx BATCH THREADS ITERS');
    process.exit(2);
  }
  const batch = Number(batchArg || 1);
  const threads = Number(threadsArg || 2);
  const iters = Number(itersArg || 20);
  const session = await ort.InferenceSession.create(modelPath, {
    executionProviders: ['cpu'],
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
  const inputName = session.inputNames[0];
  const outputName = session.outputNames[0];

  let input;
  let inputSource;
  const pb = path.join(path.dirname(modelPath), `b${batch}`, 'test_data_set_0', 'input_0.pb');
  if (fs.existsSync(pb)) {
    input = readTensorProto(pb);
    inputSource = pb;
  } else {
    // The models here are image classifiers: [N, 3, 224, 224] unless the caller has data.
    const dims = [batch, 3, 224, 224];
    const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
    let seed = 12345;
    for (let i = 0; i < data.length; ++i) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      data[i] = (seed / 2 ** 32) * 2 - 1;
    }
    input = new ort.Tensor('float32', data, dims);
    inputSource = 'random';
  }

  const feeds = { [inputName]: input };
  const warmStart = process.hrtime.bigint();
  for (let i = 0; i < 3 || (i < 50 && Number(process.hrtime.bigint() - warmStart) < 1e9); ++i) {
    await session.run(feeds, [outputName]);
  }
  const times = [];
  const cpuTimes = [];  // the process's user + system time: on a loaded machine, the work done
  for (let i = 0; i < iters; ++i) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await session.run(feeds, [outputName]);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    const c = process.cpuUsage(c0);
    cpuTimes.push((c.user + c.system) / 1e3);
  }
  const ortVersion = (() => {
    try {
      return require('onnxruntime-node/package.json').version;
    } catch (e) {
      return null;
    }
  })();
  console.log(JSON.stringify({
    model: modelPath, batch, threads, iters,
    median_ms: median(times), min_ms: Math.min(...times),
    mean_ms: times.reduce((a, b) => a + b, 0) / times.length, cpu_median_ms: median(cpuTimes),
    input: inputSource, ort: ortVersion,
  }));
}

main().catch((e) => {
  console.error(`onnx_ort: ${e.message || e}`);
  process.exit(1);
});
