# SPDX-License-Identifier: Apache-2.0
"""The Python front end's performance goals, side by side in one run (medians):

  eager a + b (8 float32)  deepflow from Python vs TensorFlow 2.21 and PyTorch from Python
  model.fit MLP / LeNet    deepflow from Python vs the same fit from C++ and vs TensorFlow
  custom training loop     the TF advanced quickstart's @tf.function step, deepflow vs TF
  traced tf.data map       deepflow from Python vs the same pipeline built in C++

  .venv/bin/python bench/python/compare.py [build] [--repetitions N]

Writes build/python-bench.json and prints the table. The TensorFlow and PyTorch processes
run with OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset (their BLAS picks its own kernels)."""
import json
import os
import re
import statistics
import subprocess
import sys

ROUNDS = 7
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run_json(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    sys.stderr.write(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def cpp_rows(build, reps, pattern="dispatch_add_8/real|data/fit_mlp/tensors|keras/lenet_fit|data/map_affine"):
    out = subprocess.run([os.path.join(build, "bench", "deepflow_bench"), f"--benchmark_filter={pattern}",
                          f"--benchmark_repetitions={reps}", "--benchmark_report_aggregates_only=true",
                          "--benchmark_format=json"], capture_output=True, text=True, check=True)
    rows = {}
    for b in json.loads(out.stdout)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        name = re.sub(r"/real_time.*", "", b["run_name"])
        unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3}[b["time_unit"]]
        rows[name] = b["real_time"] * unit
    return rows


def torch_add(reps):
    code = ("import torch, timeit, statistics; torch.set_num_threads(2); a=torch.arange(8,dtype=torch.float32); "
            "b=torch.ones(8); [a+b for _ in range(1000)]; "
            f"print(statistics.median(timeit.timeit(lambda: a+b, number=100000)/100000 for _ in range({reps})))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    try:
        out = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True, env=env, check=True)
        return float(out.stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        return None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    reps = 5
    if "--repetitions" in sys.argv:
        reps = int(sys.argv[sys.argv.index("--repetitions") + 1])
    build = os.path.abspath(args[0] if args else os.path.join(ROOT, "build"))
    peers = os.path.join(ROOT, ".venv-peers", "bin", "python")
    script = os.path.join(HERE, "tf_programs.py")
    cpp = cpp_rows(build, 3)
    ours = run_json([sys.executable, script, "--repetitions", str(reps)])
    # Python against C++ in rounds of back-to-back runs (this VM's speed drifts between
    # minutes): the ratio of each round, then their median.
    pairs = {"fit_mlp": ("keras/mlp_fit", 1e-6, "data/fit_mlp/tensors", 1 / 64),
             "fit_lenet": ("keras/lenet_fit", 1e-6, "keras/lenet_fit", 1 / 64),
             "map": ("data/map_traced", 1e-3, "data/map_affine/autotune", 1.0)}
    rounds = {k: [] for k in pairs}
    # Odd rounds run Python first and even rounds C++ first, so a drift within a round
    # weighs on both sides alike.
    for r in range(ROUNDS):
        def python_side():
            o = run_json([sys.executable, script, "--repetitions", "3", "--filter", "_fit"])
            o.update(run_json([sys.executable, script, "--repetitions", "3", "--filter", "data/map"]))
            return o
        if r == 0:
            c, o = cpp, ours
        elif r % 2:
            o = python_side()
            c = cpp_rows(build, 3, "data/fit_mlp/tensors|keras/lenet_fit|data/map_affine")
        else:
            c = cpp_rows(build, 3, "data/fit_mlp/tensors|keras/lenet_fit|data/map_affine")
            o = python_side()
        for k, (py, unit, cc, per) in pairs.items():
            rounds[k].append(o[py]["value"] * unit / (c[cc] * per))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    theirs = run_json([peers, script, "--framework", "tensorflow", "--repetitions", str(reps)], env)
    torch = torch_add(reps)
    s = lambda row, unit: row["value"] * unit  # noqa: E731
    add = s(ours["eager/add_f32x8"], 1e-9)
    table = {
        "eager a+b, deepflow from Python (us)": add * 1e6,
        "  vs TensorFlow 2.21 (x faster)": s(theirs["eager/add_f32x8"], 1e-9) / add,
        "  vs PyTorch (x faster)": (torch / add) if torch else None,
        "  deepflow C++ dispatch (us)": cpp["dispatch_add_8"] * 1e6,
        "fit MLP: Python / C++ step time (median of rounds)": statistics.median(rounds["fit_mlp"]),
        "  MLP vs TensorFlow's fit (x faster)": s(theirs["keras/mlp_fit"], 1e-6) / s(ours["keras/mlp_fit"], 1e-6),
        "fit LeNet: Python / C++ step time (median of rounds)": statistics.median(rounds["fit_lenet"]),
        "  LeNet vs TensorFlow's fit (x faster)": s(theirs["keras/lenet_fit"], 1e-6) / s(ours["keras/lenet_fit"], 1e-6),
        "custom loop (quickstart) vs TensorFlow (x faster)":
            s(theirs["loop/quickstart"], 1e-6) / s(ours["loop/quickstart"], 1e-6),
        "traced map: Python / C++ pass time (median of rounds)": statistics.median(rounds["map"]),
    }
    result = {"rounds": rounds, "deepflow_python": ours, "tensorflow": theirs, "cpp_seconds": cpp, "torch_add_s": torch,
              "summary": table}
    with open(os.path.join(build, "python-bench.json"), "w") as f:
        json.dump(result, f, indent=1)
    for k, v in table.items():
        print(f"{k:52s} {'n/a' if v is None else f'{v:10.3f}'}")


if __name__ == "__main__":
    main()
