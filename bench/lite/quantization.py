# SPDX-License-Identifier: Apache-2.0
"""The quantization study behind docs/quantization.md: an MNIST CNN trained here (deepflow's
Keras), converted by deepflow's converter in each mode (float32, float16 weights, dynamic
range, full integer int8 calibrated on 200 training images, int8 with int8 I/O, and int8 after
one epoch of quantization-aware training with its learned ranges), then
per mode: file size, test accuracy on the 10,000 test images (deepflow_lite), and batch-1
latency medians in deepflow_lite and in LiteRT 2.3 (XNNPACK default kernels), 1 thread.

    .venv/bin/python bench/lite/quantization.py --out build/quantization [--epochs 2]

Writes OUT/results.json, OUT/table.md and OUT/quantization.svg (size vs accuracy drop and
latency), and the .tflite files. LiteRT runs in .venv-peers (env DEEPFLOW_PEERS_PYTHON)."""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import deepflow as tf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEERS = os.environ.get("DEEPFLOW_PEERS_PYTHON", os.path.join(ROOT, ".venv-peers", "bin", "python"))

MODES = ["float32", "float16", "dynamic_range", "int8", "int8_io"]

_LITERT_TIMER = r"""
import json, sys, time, numpy as np
from ai_edge_litert import interpreter as litert
out = {}
x = np.load(sys.argv[1])
for path in sys.argv[2:]:
    lr = litert.Interpreter(model_path=path, num_threads=1)
    lr.allocate_tensors()
    d = lr.get_input_details()[0]
    xi = x[:1]
    if d["dtype"] != np.float32:
        s, z = d["quantization"]
        xi = np.clip(np.round(xi / s) + z, -128, 127).astype(d["dtype"])
    lr.set_tensor(d["index"], xi)
    for _ in range(20):
        lr.invoke()
    times = []
    for _ in range(200):
        t = time.perf_counter(); lr.invoke(); times.append(time.perf_counter() - t)
    out[path] = float(np.median(times) * 1e6)
print(json.dumps(out))
"""


def build_model():
    keras = tf.keras
    tf.random.set_seed(0)
    inp = keras.Input((28, 28, 1), name="image")
    h = keras.layers.Conv2D(16, 3, activation="relu")(inp)
    h = keras.layers.BatchNormalization()(h)
    h = keras.layers.MaxPooling2D()(h)
    h = keras.layers.Conv2D(32, 3, activation="relu")(h)
    h = keras.layers.MaxPooling2D()(h)
    h = keras.layers.Flatten()(h)
    h = keras.layers.Dense(64, activation="relu")(h)
    out = keras.layers.Dense(10, activation="softmax")(h)
    model = keras.Model(inp, out)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def convert(model, mode, calib):
    c = tf.lite.TFLiteConverter.from_keras_model(model)
    if mode != "float32":
        c.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "float16":
        c.target_spec.supported_types = [tf.float16]
    if mode.startswith("int8"):
        c.representative_dataset = lambda: ([calib[i:i + 1]] for i in range(len(calib)))
    if mode == "int8_io":
        c.inference_input_type = tf.int8
        c.inference_output_type = tf.int8
    return c.convert()


def accuracy(content, x, y, batch=500):
    interp = tf.lite.Interpreter(model_content=content, num_threads=2)
    d = interp.get_input_details()[0]
    interp.resize_tensor_input(d["index"], (batch,) + x.shape[1:])
    interp.allocate_tensors()
    d = interp.get_input_details()[0]
    o = interp.get_output_details()[0]
    correct = 0
    for i in range(0, len(x), batch):
        xb = x[i:i + batch]
        if d["dtype"] != np.float32:
            s, z = d["quantization"]
            xb = np.clip(np.round(xb / s) + z, -128, 127).astype(d["dtype"])
        interp.set_tensor(d["index"], xb)
        interp.invoke()
        correct += int((interp.get_tensor(o["index"]).argmax(-1) == y[i:i + batch]).sum())
    return 100.0 * correct / len(x)


def latency_ours(content, x):
    interp = tf.lite.Interpreter(model_content=content, num_threads=1)
    interp.allocate_tensors()
    d = interp.get_input_details()[0]
    xi = x[:1]
    if d["dtype"] != np.float32:
        s, z = d["quantization"]
        xi = np.clip(np.round(xi / s) + z, -128, 127).astype(d["dtype"])
    interp.set_tensor(d["index"], xi)
    for _ in range(20):
        interp.invoke()
    times = []
    for _ in range(200):
        t = time.perf_counter()
        interp.invoke()
        times.append(time.perf_counter() - t)
    return float(np.median(times) * 1e6)


def svg(results, path):
    """Two bar charts side by side: file size (KB) and batch-1 latency (us) per mode."""
    w, h, pad = 720, 300, 50
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="11">']
    for panel, (key, title) in enumerate([("size_kb", "file size (KB)"), ("latency_us", "batch-1 latency, deepflow_lite (us)")]):
        x0 = panel * w // 2 + pad
        vals = [r[key] for r in results]
        top = max(vals) * 1.15 or 1
        bw = (w // 2 - 2 * pad) / len(results)
        parts.append(f'<text x="{x0}" y="20" font-size="13">{title}</text>')
        for i, (r, v) in enumerate(zip(results, vals)):
            bh = (h - 2 * pad) * v / top
            x = x0 + i * bw
            parts.append(f'<rect x="{x + 4:.1f}" y="{h - pad - bh:.1f}" width="{bw - 8:.1f}" height="{bh:.1f}" fill="#4a7ab0"/>')
            parts.append(f'<text x="{x + bw / 2:.1f}" y="{h - pad - bh - 4:.1f}" text-anchor="middle">{v:.1f}</text>')
            parts.append(f'<text x="{x + bw / 2:.1f}" y="{h - pad + 14:.1f}" text-anchor="middle">{r["mode"]}</text>')
            parts.append(f'<text x="{x + bw / 2:.1f}" y="{h - pad + 28:.1f}" text-anchor="middle">{r["accuracy"]:.2f}%</text>')
        parts.append(f'<line x1="{x0}" y1="{h - pad}" x2="{x0 + len(results) * bw}" y2="{h - pad}" stroke="black"/>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "quantization"))
    ap.add_argument("--epochs", type=int, default=2)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.mnist.load_data()
    x_train = (x_train.astype(np.float32) / 255.0)[..., None]
    x_test = (x_test.astype(np.float32) / 255.0)[..., None]
    model = build_model()
    t = time.time()
    model.fit(x_train, y_train, batch_size=128, epochs=args.epochs, verbose=0)
    print(f"trained {args.epochs} epochs in {time.time() - t:.0f} s", file=sys.stderr)
    keras_acc = 100.0 * float((np.asarray(model.predict(x_test, verbose=0)).argmax(-1) == y_test).mean())
    calib = x_train[:200]
    results, paths = [], []
    for mode in MODES:
        content = convert(model, mode, calib)
        path = os.path.join(args.out, f"mnist_{mode}.tflite")
        with open(path, "wb") as f:
            f.write(content)
        paths.append(path)
        results.append({"mode": mode, "size_kb": len(content) / 1024, "accuracy": accuracy(content, x_test, y_test),
                        "latency_us": latency_ours(content, x_test)})
    # QAT last: it fine-tunes the model's own weights.
    qat = tf.quantization.keras.quantize_model(model)
    qat.compile(optimizer=tf.keras.optimizers.Adam(1e-4), loss="sparse_categorical_crossentropy")
    qat.fit(x_train, y_train, batch_size=128, epochs=1, verbose=0)
    c = tf.lite.TFLiteConverter.from_keras_model(qat)
    c.optimizations = [tf.lite.Optimize.DEFAULT]
    content = c.convert()
    path = os.path.join(args.out, "mnist_qat_int8.tflite")
    with open(path, "wb") as f:
        f.write(content)
    paths.append(path)
    qat_float = accuracy(tf.lite.TFLiteConverter.from_keras_model(qat).convert(), x_test, y_test)
    results.append({"mode": "qat_int8", "size_kb": len(content) / 1024, "accuracy": accuracy(content, x_test, y_test),
                    "latency_us": latency_ours(content, x_test), "qat_float_accuracy": qat_float})
    np.save(os.path.join(args.out, "x.npy"), x_test[:1])
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    litert = {}
    if os.path.exists(PEERS):
        r = subprocess.run([PEERS, "-c", _LITERT_TIMER, os.path.join(args.out, "x.npy")] + paths, env=env,
                           capture_output=True, text=True)
        litert = json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else {}
    f32 = results[0]
    lines = [f"Keras (deepflow) float accuracy: {keras_acc:.2f}%", "",
             "| mode | size (KB) | vs float32 | test accuracy | vs float32 (points) | deepflow_lite (us) | LiteRT XNNPACK (us) |",
             "|---|---|---|---|---|---|---|"]
    for r, p in zip(results, paths):
        r["litert_latency_us"] = litert.get(p)
        lr = f"{r['litert_latency_us']:.1f}" if r["litert_latency_us"] else "-"
        lines.append(f"| {r['mode']} | {r['size_kb']:.1f} | {r['size_kb'] / f32['size_kb']:.2f}x | {r['accuracy']:.2f}% | "
                     f"{r['accuracy'] - f32['accuracy']:+.2f} | {r['latency_us']:.1f} | {lr} |")
    lines.append(f"\nqat_int8: the QAT model (one more epoch) is {qat_float:.2f}% in float; its int8 file "
                 f"{results[-1]['accuracy'] - qat_float:+.2f} points from that.")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(args.out, "table.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"keras_accuracy": keras_acc, "results": results}, f, indent=1)
    svg(results, os.path.join(args.out, "quantization.svg"))


if __name__ == "__main__":
    main()
