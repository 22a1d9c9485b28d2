# SPDX-License-Identifier: Apache-2.0
"""What the serving optimizer's INT8 costs in accuracy: a residual MNIST CNN (no pooling
between its convolutions, so they form one chain) trained here with deepflow's Keras,
exported as a SavedModel, converted by tf.experimental.tensorrt to FP32 and INT8
(calibrated on 512 training images, each calibration method), and evaluated on the 10,000
test images. Prints a markdown table (docs/quantization.md) and a JSON line.

    .venv/bin/python bench/serving/optimizer_accuracy.py [--epochs 3] [--out build/serving_optimizer]
"""
import argparse
import json
import os
import shutil

import numpy as np

import deepflow as tf

trt = tf.experimental.tensorrt


def build_model():
    keras = tf.keras
    tf.random.set_seed(0)
    inp = keras.Input((28, 28, 1), name="image")
    h = keras.layers.Conv2D(16, 3, padding="same", activation="relu")(inp)
    r = keras.layers.Conv2D(16, 3, padding="same", activation="relu")(h)
    r = keras.layers.Conv2D(16, 3, padding="same")(r)
    h = keras.layers.Activation("relu")(keras.layers.Add()([h, r]))
    h = keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu")(h)
    h = keras.layers.Conv2D(32, 3, strides=2, padding="same", activation="relu")(h)
    h = keras.layers.GlobalAveragePooling2D()(h)
    out = keras.layers.Dense(10)(h)
    return keras.Model(inp, out)


def accuracy(path, x, y, batch=500):
    f = tf.saved_model.load(path).signatures["serving_default"]
    key = list(f.structured_input_signature[1].keys())[0]
    hits = 0
    for i in range(0, len(x), batch):
        logits = list(f(**{key: tf.constant(x[i:i + batch])}).values())[0].numpy()
        hits += int((logits.argmax(1) == y[i:i + batch]).sum())
    return 100.0 * hits / len(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--out", default="build/serving_optimizer")
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.mnist.load_data()
    x_train = (x_train[..., None] / 255.0).astype(np.float32)
    x_test = (x_test[..., None] / 255.0).astype(np.float32)
    model = build_model()
    model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(x_train, y_train, epochs=args.epochs, batch_size=128, verbose=0)
    src = os.path.join(args.out, "float")
    tf.saved_model.save(model, src)
    rows = [("float32 (as saved)", accuracy(src, x_test, y_test))]
    fp32 = trt.TrtGraphConverterV2(input_saved_model_dir=src, precision_mode="FP32")
    fp32.convert()
    fp32.save(os.path.join(args.out, "fp32"))
    rows.append(("FP32 (optimized)", accuracy(os.path.join(args.out, "fp32"), x_test, y_test)))

    def calibration():
        for i in range(0, 512, 64):
            yield (x_train[i:i + 64],)

    for method in ("min_max", "percentile", "entropy"):
        c = trt.TrtGraphConverterV2(input_saved_model_dir=src, precision_mode="INT8", calibration_method=method)
        c.convert(calibration_input_fn=calibration)
        c.save(os.path.join(args.out, "int8_" + method))
        rows.append((f"INT8, {method} calibration", accuracy(os.path.join(args.out, "int8_" + method), x_test, y_test)))
    base = rows[0][1]
    print("| model | test accuracy | vs float32 |\n|---|---|---|")
    for name, acc in rows:
        print(f"| {name} | {acc:.2f}% | {acc - base:+.2f} |")
    print(json.dumps({"epochs": args.epochs, "accuracy": dict(rows)}))


if __name__ == "__main__":
    main()
