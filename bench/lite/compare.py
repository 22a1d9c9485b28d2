# SPDX-License-Identifier: Apache-2.0
"""Issue 20's interpreter figures: deepflow_lite against LiteRT 2.3 (ai-edge-litert, its
default XNNPACK delegate) on the same .tflite files, 1 and 2 threads, medians, one run:

  lite/<model>/<mode>/t<threads>   invoke() at batch 1: `deepflow lite benchmark` vs
                                   LiteRT's Interpreter.invoke (set_tensor not timed)
  lite/<model>/int8_vs_float/t<n>  deepflow's own int8 speed-up: float32 median / int8 median
  lite/<model>/int8_fast/t<n>      the int8 file with --fast-int8 (float requantization, as
                                   LiteRT's default), and its speed-up over our float32
  lite/tiny/float32/t1             a two-op model ([1, 8]: MUL, ADD): what an invoke costs
                                   beyond its kernels (the goal: under 10 us)

The files are written by TensorFlow 2.21's converter into <build>/lite-bench/, each model in
float32 and in full integer int8 (calibrated on 8 random inputs: speed does not depend on the
ranges; int8 kernels, float interface through QUANTIZE / DEQUANTIZE): MobileNetV2 224
(keras.applications, weights=None, fixed seed), an MNIST-shaped CNN and an MLP (784-1024-1024-10).

  .venv-peers/bin/python bench/lite/compare.py [build] [--runs N] [--models a,b] [--modes float32,int8]

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
        "mlp": lambda: keras.Sequential([
            keras.Input((784,)), keras.layers.Dense(1024, activation="relu"),
            keras.layers.Dense(1024, activation="relu"), keras.layers.Dense(10)]),
    }
    import numpy as np
    tiny = os.path.join(out, "tiny_float32.tflite")
    if not os.path.exists(tiny):
        @tf.function(input_signature=[tf.TensorSpec([1, 8], tf.float32)])
        def f(x):
            return x * 2.0 + 1.0
        content = tf.lite.TFLiteConverter.from_concrete_functions([f.get_concrete_function()], f).convert()
        with open(tiny + ".tmp", "wb") as fh:
            fh.write(content)
        os.replace(tiny + ".tmp", tiny)
    paths[("tiny", "float32")] = tiny
    for name, build in builders.items():
        for mode in ("float32", "int8"):
            path = os.path.join(out, f"{name}_{mode}.tflite")
            if not os.path.exists(path):
                keras.utils.set_random_seed(1)
                model = build()
                converter = tf.lite.TFLiteConverter.from_keras_model(model)
                if mode == "int8":
                    shape = (1,) + tuple(model.input_shape[1:])
                    rng = np.random.default_rng(0)
                    converter.optimizations = [tf.lite.Optimize.DEFAULT]
                    converter.representative_dataset = lambda: ([rng.random(shape, dtype=np.float32)] for _ in range(8))
                    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
                content = converter.convert()
                with open(path + ".tmp", "wb") as f:
                    f.write(content)
                os.replace(path + ".tmp", path)
            paths[(name, mode)] = path
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


def deepflow_median(build, path, threads, runs, fast=False):
    out = subprocess.run([os.path.join(build, "tools", "cli", "deepflow"), "lite", "benchmark", path,
                          "--threads", str(threads), "--runs", str(runs)] + (["--fast-int8"] if fast else []),
                         check=True, capture_output=True, text=True)
    return float(re.search(r"median ([0-9.e+-]+) ms", out.stdout).group(1))


def main(argv):
    build = os.path.join(ROOT, "build")
    runs = 30
    models = None
    modes = ("float32", "int8")
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--runs":
            runs = int(args.pop(0))
        elif a == "--models":
            models = args.pop(0).split(",")
        elif a == "--modes":
            modes = args.pop(0).split(",")
        else:
            build = os.path.abspath(a)
    out_dir = os.path.join(build, "lite-bench")
    os.makedirs(out_dir, exist_ok=True)
    paths = make_models(out_dir)
    rows = {}
    for (name, mode), path in paths.items():
        if (models and name not in models) or mode not in modes:
            continue
        for threads in (1, 2):
            ours = deepflow_median(build, path, threads, runs)
            theirs = litert_median(path, threads, runs)
            key = f"lite/{name}/{mode}/t{threads}"
            rows[key] = {"deepflow_ms": ours, "litert_ms": theirs, "ratio": theirs / ours}
            print(f"{key:36s} deepflow {ours * 1e3:10.2f} us   LiteRT {theirs * 1e3:10.2f} us   {theirs / ours:5.2f}x",
                  flush=True)
            f32 = rows.get(f"lite/{name}/float32/t{threads}")
            if mode == "int8":
                # The same file with float requantization (--fast-int8), LiteRT's default's way.
                fast = deepflow_median(build, path, threads, runs, fast=True)
                key = f"lite/{name}/int8_fast/t{threads}"
                rows[key] = {"deepflow_ms": fast, "litert_ms": theirs, "ratio": theirs / fast}
                print(f"{key:36s} deepflow {fast * 1e3:10.2f} us   LiteRT {theirs * 1e3:10.2f} us   {theirs / fast:5.2f}x",
                      flush=True)
                if f32:
                    key = f"lite/{name}/int8_fast_vs_float/t{threads}"
                    rows[key] = {"ratio": f32["deepflow_ms"] / fast}
                    print(f"{key:36s} deepflow float32 {f32['deepflow_ms'] * 1e3:10.2f} us / int8 fast "
                          f"{fast * 1e3:10.2f} us = {f32['deepflow_ms'] / fast:5.2f}x", flush=True)
            if mode == "int8" and f32:
                key = f"lite/{name}/int8_vs_float/t{threads}"
                rows[key] = {"ratio": f32["deepflow_ms"] / ours}
                print(f"{key:36s} deepflow float32 {f32['deepflow_ms'] * 1e3:10.2f} us / int8 {ours * 1e3:10.2f} us = "
                      f"{f32['deepflow_ms'] / ours:5.2f}x", flush=True)
    with open(os.path.join(build, "lite-bench.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
