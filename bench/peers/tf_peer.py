# SPDX-License-Identifier: Apache-2.0
"""TensorFlow peer of bench/bench_ops.cpp, bench_keras.cpp and bench_data.cpp: the same
shapes, the same units, the same names.

Prints one JSON object: {"meta": {...}, "results": {name: {"value": v, "unit": u, ...}}},
progress on stderr. Each benchmark is warmed up, then timed in `--repetitions` blocks of
calls lasting at least `--min-time` seconds each; the value is the median over blocks (as
torch_peer.py). TensorFlow runs at its best: oneDNN on (the x86 default), intra- and
inter-op threads = --threads, and for keras/ the fastest of Keras `fit`, a tf.function
train step and the same step compiled by XLA. Run it the way scripts/run-bench.sh does; see
docs/benchmarks.md.

    .venv-peers/bin/python bench/peers/tf_peer.py --threads 2 --repetitions 5 --min-time 0.2

Every data/ row of bench_data.cpp has a tf.data counterpart, so none is skipped. Two
stand-ins keep them like for like: the 2 ms of arithmetic per element is the same float64
chain as burn() compiled by XLA (a plain graph while_loop costs microseconds per step),
and tune_latency's C++ generators are SleepDataset pipelines (tf.data.Dataset.from_generator
would run Python under the GIL, which deepflow's C++ lambdas do not).
"""
import contextlib
import json
import os
import re
import statistics
import sys
import tempfile
import time

import numpy as np

from peer_timing import parse_args, time_per_call  # bench/peers is on sys.path when run as a script

# Before TensorFlow loads (in main): its C++ logging reads this once.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

N16M = 1 << 24


@contextlib.contextmanager
def quiet_stderr():
    """Keeps the banners TF's libraries write to fd 2 at import and device set-up out of
    the progress (absl logs them before TF_CPP_MIN_LOG_LEVEL applies); replays them on error."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            log.seek(0)
            sys.stderr.write(log.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def bench_ops(tf, args, run, results):
    def uniform(shape, lo=-1.0, hi=1.0, seed=1):
        return tf.random.uniform(shape, lo, hi, tf.float32, seed=seed)

    # --- matmul: [n, n] x [n, n]; 2 n^3 flops ---
    for n in (512, 1024, 2048):
        a, b = uniform((n, n), seed=1), uniform((n, n), seed=2)
        run(f"matmul_f32_{n}", lambda: tf.linalg.matmul(a, b), "GFLOP/s", 2.0 * n**3)

    # --- conv2d: NHWC, TF's native layout (oneDNN kernels with oneDNN on) ---
    convs = [
        ("conv2d_8x56x56x64_3x3x64_same", (8, 56, 56, 64), (3, 3, 64, 64), "SAME"),
        ("conv2d_32x28x28x32_3x3x64_valid", (32, 28, 28, 32), (3, 3, 32, 64), "VALID"),
    ]
    for name, (n, h, w, c), (kh, kw, ci, co), padding in convs:
        x, f = uniform((n, h, w, c), seed=3), uniform((kh, kw, ci, co), seed=4)
        oh, ow = (h, w) if padding == "SAME" else (h - kh + 1, w - kw + 1)
        flops = 2.0 * n * oh * ow * co * kh * kw * ci
        run(name, lambda: tf.nn.conv2d(x, f, 1, padding), "GFLOP/s", flops)

    # --- 16M floats; GB/s counts each byte read or written once ---
    a, b = uniform((N16M,), seed=5), uniform((N16M,), seed=6)
    run("add_16M", lambda: tf.add(a, b), "GB/s", 3 * 4 * N16M)
    run("relu_16M", lambda: tf.nn.relu(a), "GB/s", 2 * 4 * N16M)
    del a, b

    logits = uniform((256, 1000), -4.0, 4.0, seed=11)
    run("softmax_256x1000", lambda: tf.nn.softmax(logits, axis=-1), "GB/s", 2 * 4 * 256 * 1000)

    # --- eager dispatch of add on 8 floats, the Python call included ---
    a, b = uniform((8,), seed=12), uniform((8,), seed=13)
    if run("dispatch_add_8", lambda: tf.add(a, b), "ns", note="TF eager from Python") is not None:
        # For information: the generated op wrapper, below tf.add's Python dispatch layers.
        seconds = time_per_call(lambda: tf.raw_ops.AddV2(x=a, y=b), args.repetitions, args.min_time)
        results["dispatch_add_8"]["raw_ops_add_v2"] = seconds * 1e9


def bench_keras(tf, keras, args, wanted, results):
    """keras/ rows: us per training step, the fastest of three ways to run the step."""
    layers = keras.layers

    def mlp():
        return keras.Sequential([keras.Input((784,)), layers.Dense(512, "relu"),
                                 layers.Dense(512, "relu"), layers.Dense(10)])

    def lenet():
        return keras.Sequential([
            keras.Input((28, 28, 1)),
            layers.Conv2D(32, 5, padding="same", activation="relu"), layers.MaxPooling2D(2),
            layers.Conv2D(64, 5, padding="same", activation="relu"), layers.MaxPooling2D(2),
            layers.Flatten(), layers.Dense(1024, "relu"), layers.Dense(10)])

    cases = [("keras/mlp_sgd_b128", mlp, lambda: keras.optimizers.SGD(learning_rate=0.01), 128, (784,)),
             ("keras/lenet_adam_b64", lenet, lambda: keras.optimizers.Adam(learning_rate=1e-3), 64, (28, 28, 1))]
    for name, build, optimizer, batch, shape in cases:
        if not wanted(name):
            continue
        keras.utils.set_random_seed(1)
        x = tf.random.uniform((batch,) + shape, 0, 1, seed=21)
        y = tf.random.uniform((batch,), 0, 10, tf.int32, seed=23)
        loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        variants, errors = {}, {}
        for variant in ("fit", "tf_function", "tf_function_xla"):
            try:
                model, opt = build(), optimizer()
                if variant == "fit":
                    model.compile(optimizer=opt, loss=loss_fn)
                    seconds = fit_step_seconds(tf, keras, model, x, y, args.repetitions, args.min_time)
                else:
                    step = train_step(tf, model, opt, loss_fn, x, y, variant == "tf_function_xla")
                    seconds = time_per_call(step, args.repetitions, args.min_time)
                variants[variant] = seconds * 1e6
            except Exception as e:  # one variant failing must not cost the row
                errors[variant] = f"{type(e).__name__}: {e}"[:200]
            print(f"tf_peer: {name + ' ' + variant:40s} {variants.get(variant, float('nan')):12.3f} us",
                  file=sys.stderr)
        if not variants:
            results[name] = {"value": None, "unit": "us", "error": "; ".join(errors.values())}
            continue
        winner = min(variants, key=variants.get)
        results[name] = {"value": variants[winner], "unit": "us", **variants, "winner": winner,
                         "samples_per_s": batch * 1e6 / variants[winner]}
        if errors:
            results[name]["errors"] = errors


def train_step(tf, model, opt, loss_fn, x, y, jit):
    """A custom train step as the TF guide writes it; the loss comes back to the host each
    call, as train_on_batch's does."""
    opt.build(model.trainable_variables)

    @tf.function(jit_compile=jit)
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return lambda: step(x, y).numpy()


def fit_step_seconds(tf, keras, model, x, y, repetitions, min_time):
    """Median seconds per step of `model.fit` on the fixed batch repeated in memory; one
    sample per epoch, measured between step starts so the epoch's set-up stays out."""
    ds = tf.data.Dataset.from_tensors((x, y)).repeat()
    marks = []

    # on_train_batch_begin, not _end: a batch-end hook turns off Keras's asynchronous
    # batch-end dispatch and would slow the step it measures.
    class Marks(keras.callbacks.Callback):
        def on_train_batch_begin(self, batch, logs=None):
            marks.append(time.perf_counter())

    def epoch(steps):
        marks.clear()
        model.fit(ds, epochs=1, steps_per_epoch=steps, verbose=0, shuffle=False, callbacks=[Marks()])
        return (marks[-1] - marks[2]) / (len(marks) - 3)

    epoch(10)  # the warm-up epoch: traces the train function
    steps = max(50, int(min_time / epoch(10)) + 3)
    return statistics.median(epoch(steps) for _ in range(repetitions))


def bench_data(tf, keras, args, wanted, record):
    """data/ rows: ms per full pass over a fresh iterator, as bench_data.cpp times them."""
    from tensorflow.python.data.experimental.ops import testing  # SleepDataset: C++ sleeps

    autotune = tf.data.AUTOTUNE

    # burn() of bench_data.cpp: the same 1.5M dependent x * 0.9999999 + 1e-7 steps in
    # float64; unrolled 50 times per loop trip so XLA's loop overhead does not dominate.
    @tf.function(jit_compile=True)
    def burn(seed):
        def body(i, x):
            for _ in range(50):
                x = x * 0.9999999 + 1e-7
            return i + 1, x
        return tf.while_loop(lambda i, x: i < 1500000 // 50, body, (0, tf.cast(seed, tf.float64)))[1]

    def spin(seconds):  # a wall-clock spin on one core, as spin_for()
        def fn(e):
            end = tf.timestamp() + seconds
            done = tf.while_loop(lambda t: t < end, lambda t: tf.timestamp(), [tf.timestamp()])
            with tf.control_dependencies(done):
                return tf.identity(e)
        return fn

    def options(sequential=False, no_prefetch=False):
        # deepflow's p1 is the sequential map and b0 has no prefetch: keep TF's optimizer from
        # parallelizing or prefetching behind the row's back.
        opts = tf.data.Options()
        if sequential:
            opts.experimental_optimization.map_parallelization = False
        if no_prefetch:
            opts.experimental_optimization.inject_prefetch = False
        return opts

    def calls(p):
        return None if p == 1 else autotune if p == "autotune" else p

    def drain(ds):
        # In-graph, like deepflow's C++ drain(): no Python between elements.
        count = tf.function(lambda: ds.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))
        return lambda: int(count())

    element_ms = None
    if any(wanted(f"data/{k}_expensive/{p}") for k in ("map", "tune") for p in ("p1", "p2", "p4", "autotune")):
        try:
            element_ms = time_per_call(lambda: burn(tf.constant(1, tf.int64)).numpy(), 3, 0.05) * 1e3
        except Exception:  # the rows themselves then fail, each with the error
            pass

    for p in (1, 2, 4):
        ds = tf.data.Dataset.range(64).map(burn, num_parallel_calls=calls(p)).with_options(options(p == 1))
        record(f"data/map_expensive/p{p}", drain(ds), 64, element_ms=element_ms)

    n = 40
    for kind in ("sleep", "compute"):
        for b in (0, 1, 2, "autotune"):
            name = f"data/prefetch_{kind}/" + (f"b{b}" if b != "autotune" else b)
            if not wanted(name):
                continue
            ds = tf.data.Dataset.range(n)
            ds = ds.apply(testing.sleep(2000)) if kind == "sleep" else ds.map(spin(2e-3))
            if b != 0:
                ds = ds.prefetch(autotune if b == "autotune" else b)
            ds = ds.with_options(options(sequential=True, no_prefetch=b == 0))
            consume = time.sleep if kind == "sleep" else python_spin

            def prefetch_pass(ds=ds, consume=consume):  # the consumer is the Python loop
                for _ in ds:
                    consume(3e-3)

            row = record(name, prefetch_pass, n)
            if row:  # as the deepflow counter: time per pass / (n x 3 ms)
                row["vs_slower"] = row["value"] / (n * 3.0)

    def latency_pipeline(p):
        def inner(i):  # 24 elements, 2 ms of waiting before each (a remote read's latency)
            return tf.data.Dataset.range(24).apply(testing.sleep(2000)).map(lambda j: i * 1000 + j)
        return tf.data.Dataset.range(4).interleave(inner, cycle_length=4, num_parallel_calls=calls(p))

    for p in (1, 2, 4, "autotune"):
        suffix, seq = (f"p{p}" if p != "autotune" else p), p == 1
        cheap = tf.data.Dataset.range(8192).map(lambda x: x * 2 + 1, num_parallel_calls=calls(p)).batch(32)
        record(f"data/tune_cheap/{suffix}", drain(cheap.with_options(options(seq))), 8192 // 32)
        expensive = tf.data.Dataset.range(64).map(burn, num_parallel_calls=calls(p)).batch(8)
        record(f"data/tune_expensive/{suffix}", drain(expensive.with_options(options(seq))), 8,
               element_ms=element_ms)
        record(f"data/tune_latency/{suffix}", drain(latency_pipeline(p).with_options(options(seq))), 96)

    fits = [v for v in ("tensors", "dataset", "dataset_no_prefetch") if wanted(f"data/fit_mlp/{v}")]
    if not fits:
        return
    keras.utils.set_random_seed(1)
    rng = np.random.default_rng(31)
    x = rng.random((8192, 784), dtype=np.float32)
    y = rng.integers(0, 10, 8192).astype(np.int32)
    for variant in fits:
        model = keras.Sequential([keras.Input((784,)), keras.layers.Dense(512, "relu"),
                                  keras.layers.Dense(512, "relu"), keras.layers.Dense(10)])
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        if variant == "tensors":
            def epoch(model=model):
                model.fit(x, y, batch_size=128, epochs=1, verbose=0, shuffle=False)
        else:
            ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(128)
            ds = ds.prefetch(autotune) if variant == "dataset" else ds.with_options(options(no_prefetch=True))

            def epoch(model=model, ds=ds):
                model.fit(ds, epochs=1, verbose=0, shuffle=False)
        row = record(f"data/fit_mlp/{variant}", epoch, 8192, jit_compile=model.jit_compile)
        if row:  # the counter deepflow's fit rows carry
            row["samples_per_s"] = row.pop("elements_per_s")


def python_spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main():
    args = parse_args(__doc__.splitlines()[0])

    with quiet_stderr():
        import tensorflow as tf
        import keras
        from tensorflow.python.util import _pywrap_util_port
        # Before any op: TF fixes its thread pools when the first op creates the context.
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
        tf.random.set_seed(0)
        # Its Python warnings too: each data/ row traces its own drain function once, which
        # tf.function's retracing heuristic reports as retracing.
        tf.get_logger().setLevel("ERROR")
        tf.constant(0.0).numpy()  # device set-up, which logs its CUDA probe here
    results = {}

    def wanted(name):
        return re.search(args.filter, name) is not None

    def run(name, fn, unit, amount=None, **extra):
        """unit GFLOP/s or GB/s: amount is giga-units per call; ns or us: time per call."""
        if not wanted(name):
            return None
        try:
            seconds = time_per_call(fn, args.repetitions, args.min_time)
        except Exception as e:  # one row failing must not cost the others
            results[name] = {"value": None, "unit": unit, "error": f"{type(e).__name__}: {e}"[:200]}
            print(f"tf_peer: {name:40s} failed: {results[name]['error']}", file=sys.stderr)
            return None
        if unit in ("GFLOP/s", "GB/s"):
            value = amount * 1e-9 / seconds
        else:
            value = seconds * {"ns": 1e9, "us": 1e6, "ms": 1e3}[unit]
        results[name] = {"value": value, "unit": unit, **extra}
        print(f"tf_peer: {name:40s} {value:12.3f} {unit}", file=sys.stderr)
        return value

    def record(name, fn, elements, **extra):
        """A data/ row: ms per call of fn (one pass or epoch), elements_per_s; the row or None."""
        ms = run(name, fn, "ms", **{k: v for k, v in extra.items() if v is not None})
        if ms is None:
            return None
        results[name]["elements_per_s"] = elements * 1e3 / ms
        return results[name]

    bench_ops(tf, args, run, results)
    bench_keras(tf, keras, args, wanted, results)
    bench_data(tf, keras, args, wanted, record)

    meta = {
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
        "threads": {"intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
                    "inter_op": tf.config.threading.get_inter_op_parallelism_threads()},
        "onednn": bool(_pywrap_util_port.IsMklEnabled()),
        "variant_winners": {k: v["winner"] for k, v in results.items() if "winner" in v},
        "repetitions": args.repetitions,
        "min_time_s": args.min_time,
        "env": {k: os.environ.get(k) for k in ("TF_ENABLE_ONEDNN_OPTS", "OMP_NUM_THREADS", "TF_CPP_MIN_LOG_LEVEL")},
    }
    json.dump({"meta": meta, "results": results}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
