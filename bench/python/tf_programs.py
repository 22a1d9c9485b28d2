# SPDX-License-Identifier: Apache-2.0
"""The Python front end's benchmarks: the same TensorFlow program timed with
`import deepflow as tf` and with TensorFlow 2.21 (--framework), so the two columns run
one code path. Prints one JSON object {row: {"value": us, ...}} on stdout.

  eager/add_f32x8        a + b on two float32 tensors of 8 elements (ns per call)
  keras/mlp_fit          model.fit: Dense 784-512-512-10, SGD 0.01, batch 128, 8192 samples
                         of MNIST shape, shuffle off (us per step)
  keras/lenet_fit        model.fit: the LeNet of bench_keras.cpp, Adam 1e-3, batch 64,
                         4096 samples (us per step)
  loop/quickstart        the TF advanced quickstart's @tf.function train step with
                         GradientTape (Conv2D 32 3x3 relu, Flatten, Dense 128 relu, Dense 10;
                         Adam, batch 32; us per step)
  data/map_traced        Dataset.range(65536).map(x -> x * 3 + 1 as float32, AUTOTUNE)
                         .batch(256): one pass (ms), the map traced into a graph
"""
import argparse
import json
import os
import statistics
import sys
import time
import timeit


def median_block(fn, repetitions, number):
    return statistics.median(timeit.timeit(fn, number=number) / number for _ in range(repetitions))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--framework", choices=["deepflow", "tensorflow"], default="deepflow")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repetitions", type=int, default=5)
    p.add_argument("--filter", default="")
    args = p.parse_args()
    if args.framework == "tensorflow":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        import tensorflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    else:
        import deepflow as tf
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    import numpy as np
    keras = tf.keras
    out = {}

    def wanted(name):
        return args.filter in name

    def log(name, value, unit):
        print(f"{args.framework:10s} {name:22s} {value:12.3f} {unit}", file=sys.stderr)

    if wanted("eager/add_f32x8"):
        a = tf.constant(np.arange(8, dtype=np.float32))
        b = tf.constant(np.ones(8, dtype=np.float32))
        for _ in range(1000):
            a + b
        ns = median_block(lambda: a + b, args.repetitions, 100000) * 1e9
        out["eager/add_f32x8"] = {"value": ns, "unit": "ns"}
        log("eager/add_f32x8", ns, "ns")

    rng = np.random.default_rng(1)

    def fit_row(name, model, opt, x, y, batch):
        model.compile(optimizer=opt, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(x[:batch * 4], y[:batch * 4], batch_size=batch, epochs=1, shuffle=False, verbose=0)  # traces
        steps = len(x) // batch
        samples = []
        for _ in range(args.repetitions):
            t = time.perf_counter()
            model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
            samples.append((time.perf_counter() - t) / steps * 1e6)
        us = statistics.median(samples)
        out[name] = {"value": us, "unit": "us", "samples_per_s": batch * 1e6 / us}
        log(name, us, "us")

    L = keras.layers
    if wanted("keras/mlp_fit"):
        x = rng.random((8192, 784), dtype=np.float32)
        y = rng.integers(0, 10, 8192).astype(np.int32)
        model = keras.Sequential([keras.Input((784,)), L.Dense(512, activation="relu"),
                                  L.Dense(512, activation="relu"), L.Dense(10)])
        fit_row("keras/mlp_fit", model, keras.optimizers.SGD(learning_rate=0.01), x, y, 128)
    if wanted("keras/lenet_fit"):
        x = rng.random((4096, 28, 28, 1), dtype=np.float32)
        y = rng.integers(0, 10, 4096).astype(np.int32)
        model = keras.Sequential([
            keras.Input((28, 28, 1)),
            L.Conv2D(32, 5, padding="same", activation="relu"), L.MaxPooling2D(2),
            L.Conv2D(64, 5, padding="same", activation="relu"), L.MaxPooling2D(2),
            L.Flatten(), L.Dense(1024, activation="relu"), L.Dense(10)])
        fit_row("keras/lenet_fit", model, keras.optimizers.Adam(learning_rate=1e-3), x, y, 64)

    if wanted("loop/quickstart"):
        class MyModel(keras.Model):
            def __init__(self):
                super().__init__()
                self.conv1 = L.Conv2D(32, 3, activation="relu")
                self.flatten = L.Flatten()
                self.d1 = L.Dense(128, activation="relu")
                self.d2 = L.Dense(10)

            def call(self, x):
                x = self.conv1(x)
                x = self.flatten(x)
                x = self.d1(x)
                return self.d2(x)

        model = MyModel()
        loss_object = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        optimizer = keras.optimizers.Adam()
        train_loss = keras.metrics.Mean(name="train_loss")
        train_accuracy = keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")

        @tf.function
        def train_step(images, labels):
            with tf.GradientTape() as tape:
                predictions = model(images, training=True)
                loss = loss_object(labels, predictions)
            gradients = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables))
            train_loss(loss)
            train_accuracy(labels, predictions)

        images = tf.constant(rng.random((32, 28, 28, 1), dtype=np.float32))
        labels = tf.constant(rng.integers(0, 10, 32).astype(np.int64))
        for _ in range(5):
            train_step(images, labels)
        us = median_block(lambda: train_step(images, labels), args.repetitions, 50) * 1e6
        out["loop/quickstart"] = {"value": us, "unit": "us"}
        log("loop/quickstart", us, "us")

    if wanted("data/map_traced") and hasattr(tf, "data"):
        def pipeline():
            return (tf.data.Dataset.range(65536)
                    .map(lambda v: tf.cast(v * 3 + 1, tf.float32), num_parallel_calls=tf.data.AUTOTUNE)
                    .batch(256))

        def one_pass():
            for _ in pipeline():
                pass
        one_pass()
        ms = median_block(one_pass, args.repetitions, 1) * 1e3
        out["data/map_traced"] = {"value": ms, "unit": "ms"}
        log("data/map_traced", ms, "ms")

    print(json.dumps(out))


if __name__ == "__main__":
    main()
