# SPDX-License-Identifier: Apache-2.0
"""Issue 19's inference and load figures, deepflow against TensorFlow 2.21 in one run, on
the SavedModels TensorFlow wrote (the corpus's keras.applications tier: make tf-models-apps):

  tf/<model>/b1, b8   one serving_default call: deepflow (bench/bench_tf_models.cpp) vs TF at
                      its best (the faster of signatures[...] and a tf.function(jit_compile=True)
                      wrapper), both on 2 threads, medians
  tf/<model>/served_b1  the same at batch 1 through io::load_saved_model (what `deepflow
                      serve` runs), against TF's b1
  tf/<model>/load     load until the first answer: tf::load_tf_saved_model + one call vs
                      tf.saved_model.load + one call (imports not counted)

  .venv-peers/bin/python bench/tf/compare.py [build] [--models resnet50,...] [--repetitions N]

Prints one row per figure and writes <build>/tf-models-bench.json. TensorFlow runs with
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset, as the peer benchmarks do."""
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODELS = ["resnet50", "mobilenet_v2", "efficientnet_b0", "densenet121", "inception_v3"]

TF_SIDE = r'''
import json, os, statistics, sys, time
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
t0 = time.perf_counter()
import numpy as np, tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads(2)
tf.config.threading.set_inter_op_parallelism_threads(1)
d, reps = sys.argv[1], int(sys.argv[2])
out = {}
start = time.perf_counter()
m = tf.saved_model.load(d)
f = m.signatures["serving_default"]
(key, spec), = f.structured_input_signature[1].items()
hwc = spec.shape[1:]
f(**{key: tf.zeros([1, *hwc])})
out["load"] = time.perf_counter() - start
jit = tf.function(lambda x: f(**{key: x}), jit_compile=True)
for batch in (1, 8):
    x = tf.constant(np.random.default_rng(7).random([batch, *hwc], dtype=np.float32))
    best = None
    for name, call in (("signature", lambda: f(**{key: x})), ("jit", lambda: jit(x))):
        try:
            call(); call()
        except Exception:
            continue
        times = []
        for _ in range(reps):
            s = time.perf_counter(); call(); times.append(time.perf_counter() - s)
        med = statistics.median(times)
        if best is None or med < best[0]:
            best = (med, name)
    out[f"b{batch}"] = best
print(json.dumps(out))
'''


def ours(build, models, reps):
    pattern = "|".join(f"tf/{m}/" for m in models)
    env = dict(os.environ, OMP_NUM_THREADS="2")
    run = subprocess.run([os.path.join(build, "bench", "deepflow_bench"), f"--benchmark_filter={pattern}",
                          f"--benchmark_repetitions={reps}", "--benchmark_report_aggregates_only=true",
                          "--benchmark_format=json"], capture_output=True, text=True, check=True, env=env)
    rows = {}
    for b in json.loads(run.stdout)["benchmarks"]:
        if b.get("aggregate_name") == "median" or b.get("run_type") == "iteration" and "/load" in b["run_name"]:
            name = re.sub(r"/(iterations:\d+/)?real_time.*", "", b["run_name"])
            rows.setdefault(name, b["real_time"] * {"ms": 1e-3, "us": 1e-6, "ns": 1e-9}[b["time_unit"]])
    return rows


def theirs(model, reps):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    d = os.path.join(ROOT, "data", "tf_models", model, "saved_model")
    run = subprocess.run([os.path.join(ROOT, ".venv-peers", "bin", "python"), "-c", TF_SIDE, d, str(reps)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    build = os.path.abspath(args[0] if args else os.path.join(ROOT, "build"))
    models = MODELS
    if "--models" in sys.argv:
        models = sys.argv[sys.argv.index("--models") + 1].split(",")
    reps = int(sys.argv[sys.argv.index("--repetitions") + 1]) if "--repetitions" in sys.argv else 5
    mine = ours(build, models, reps)
    table = {}
    for m in models:
        tf_rows = theirs(m, reps)
        # served_b1: the path `deepflow serve` runs (io::load_saved_model), against TF's b1.
        for b, tf_b in (("b1", "b1"), ("b8", "b8"), ("served_b1", "b1")):
            ours_s = mine.get(f"tf/{m}/{b}")
            if ours_s and tf_rows.get(tf_b):
                table[f"tf/{m}/{b}"] = {"deepflow_ms": ours_s * 1e3, "tensorflow_ms": tf_rows[tf_b][0] * 1e3,
                                        "tensorflow_path": tf_rows[tf_b][1], "x_faster": tf_rows[tf_b][0] / ours_s}
        if mine.get(f"tf/{m}/load"):
            table[f"tf/{m}/load"] = {"deepflow_ms": mine[f"tf/{m}/load"] * 1e3, "tensorflow_ms": tf_rows["load"] * 1e3,
                                     "x_faster": tf_rows["load"] / mine[f"tf/{m}/load"]}
    with open(os.path.join(build, "tf-models-bench.json"), "w") as f:
        json.dump(table, f, indent=1)
    for k, v in table.items():
        print(f"{k:28s} deepflow {v['deepflow_ms']:9.1f} ms   TF {v['tensorflow_ms']:9.1f} ms"
              f"{' (' + v['tensorflow_path'] + ')' if 'tensorflow_path' in v else '':13s}  {v['x_faster']:6.2f}x")


if __name__ == "__main__":
    main()
