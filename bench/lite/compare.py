# SPDX-License-Identifier: Apache-2.0
"""Issue 20's interpreter figures: deepflow_lite against LiteRT 2.3 (ai-edge-litert, its
default XNNPACK delegate) on the same .tflite files, 1 and 2 threads, medians, one run:

  lite/<model>/t<threads>   invoke() at batch 1: `deepflow lite benchmark` vs LiteRT's
                            Interpreter.invoke (set_tensor not timed on either side)

The files are written by TensorFlow 2.21's converter (float32) into <build>/lite-bench/:
MobileNetV2 224 (keras.applications, weights=None, fixed seed) and an MNIST-shaped CNN.

  .venv-peers/bin/python bench/lite/compare.py [build] [--runs N] [--models a,b]

Prints one row per figure (ratio = LiteRT's median / deepflow's: > 1 means deepflow is
faster) and writes <build>/lite-bench.json. LiteRT runs with OPENBLAS_* unset."""
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def make_models(out):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    import tensorflow as tf
    paths = {}
    builders = {
        "mobilenet_v2": lambda: keras.applications.MobileNetV2(weights=None, input_shape=(224, 224, 3)),
        "mnist_cnn": lambda: keras.Sequential([
            keras.Input((28, 28, 1)), keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.MaxPooling2D(), keras.layers.Conv2D(64, 3, activation="relu"),
            keras.layers.MaxPooling2D(), keras.layers.Flatten(), keras.layers.Dense(128, activation="relu"),
            keras.layers.Dense(10, activation="softmax")]),
    }
    for name, build in builders.items():
        path = os.path.join(out, name + ".tflite")
        if not os.path.exists(path):
            keras.utils.set_random_seed(1)
            content = tf.lite.TFLiteConverter.from_keras_model(build()).convert()
            with open(path + ".tmp", "wb") as f:
                f.write(content)
            os.replace(path + ".tmp", path)
        paths[name] = path
    return paths


def litert_median(path, threads, runs):
    import numpy as np
    from ai_edge_litert import interpreter as litert
    interp = litert.Interpreter(model_path=path, num_threads=threads)
    interp.allocate_tensors()
    for d in interp.get_input_details():
        interp.set_tensor(d["index"], np.random.default_rng(1).random(d["shape"], dtype=np.float32))
    for _ in range(5):
        interp.invoke()
    times = []
    for _ in range(runs):
        s = time.perf_counter()
        interp.invoke()
        times.append((time.perf_counter() - s) * 1e3)
    return statistics.median(times)


def deepflow_median(build, path, threads, runs):
    out = subprocess.run([os.path.join(build, "tools", "cli", "deepflow"), "lite", "benchmark", path,
                          "--threads", str(threads), "--runs", str(runs)], check=True, capture_output=True, text=True)
    return float(re.search(r"median ([0-9.e+-]+) ms", out.stdout).group(1))


def main(argv):
    build = os.path.join(ROOT, "build")
    runs = 30
    models = None
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--runs":
            runs = int(args.pop(0))
        elif a == "--models":
            models = args.pop(0).split(",")
        else:
            build = os.path.abspath(a)
    out_dir = os.path.join(build, "lite-bench")
    os.makedirs(out_dir, exist_ok=True)
    paths = make_models(out_dir)
    rows = {}
    for name, path in paths.items():
        if models and name not in models:
            continue
        for threads in (1, 2):
            ours = deepflow_median(build, path, threads, runs)
            theirs = litert_median(path, threads, runs)
            key = f"lite/{name}/t{threads}"
            rows[key] = {"deepflow_ms": ours, "litert_ms": theirs, "ratio": theirs / ours}
            print(f"{key:28s} deepflow {ours:9.3f} ms   LiteRT {theirs:9.3f} ms   {theirs / ours:5.2f}x", flush=True)
    with open(os.path.join(build, "lite-bench.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
