# SPDX-License-Identifier: Apache-2.0
"""Joins deepflow_bench's JSON (one file per benchmark) with the peers' JSON: TensorFlow's
(tensorflow.json), torch's (torch.json) and ONNX Runtime's for the onnx/ rows (ort.jsonl,
one line per benchmark), all from run-bench.sh; a missing file leaves its peer out.

Prints a table (TensorFlow first) and the performance targets, and writes bench-results.json:
  {"benchmarks": [{"name", "peer", "value", "unit", ...}, ...],
   "targets": [...], "peak": {...}, "context": {...}}
with one row per benchmark and peer: "peer" is "deepflow", "tensorflow", "torch" or
"onnxruntime". A peer row's "ratio" is deepflow's speed relative to that peer (> 1: deepflow
is faster): value / peer for rates (GFLOP/s, GB/s), peer / value for times (ns, us, ms).
Extra figures go to "detail" (deepflow's counters, a peer's variants). Standard library only.
"""
import argparse
import glob
import json
import os

# The yardstick is the measured peak (bench/bench_peak.cpp: the widest FMA the CPU has).
# A nominal figure is printed beside it only when the flops per cycle are given, since they
# depend on the core (Ice Lake server: 2 x 512-bit FMA ports, 64; Zen 4: 512-bit FMAs
# double-pumped through 256-bit pipes, 32).
FLOPS_PER_CYCLE = float(os.environ.get("DEEPFLOW_BENCH_FLOPS_PER_CYCLE", "0")) or None
# The CPU flags that decide which kernels and peaks apply.
ISA_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_tile", "amx_bf16",
             "amx_int8")
RATES = {"GFLOP": "GFLOP/s", "GOP": "GOP/s", "GB": "GB/s", "fraction": "x"}
SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
PEERS = ("tensorflow", "torch", "onnxruntime")  # the order of the rows and the table
# Google Benchmark's own fields; any other number in an entry is a user counter.
GBENCH_FIELDS = {"name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
                 "repetition_index", "threads", "aggregate_name", "aggregate_unit", "iterations", "real_time",
                 "cpu_time", "time_unit", "error_occurred", "error_message", "label"}


def load_deepflow(raw):
    """name -> {"value", "unit"} or {"error"}, from each deepflow.<name>.json."""
    out = {}
    order_path = os.path.join(raw, "order.txt")
    if os.path.exists(order_path):  # registration order, as run-bench.sh listed them
        names = open(order_path).read().split()
    else:
        names = [os.path.basename(p)[len("deepflow."):-len(".json")].replace("__", "/")
                 for p in sorted(glob.glob(os.path.join(raw, "deepflow.*.json")))]
    for name in names:
        path = os.path.join(raw, "deepflow." + name.replace("/", "__") + ".json")
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError):
            err_path = path[:-len(".json")] + ".err"
            last = open(err_path).read().strip().splitlines()[-1:] if os.path.exists(err_path) else []
            out[name] = {"error": (last[0] if last else "crashed")[:120]}
            continue
        entries = data.get("benchmarks", [])
        median = [e for e in entries if e.get("aggregate_name") == "median"]
        errors = [e for e in entries if e.get("error_occurred")]
        if not median:
            out[name] = {"error": errors[0].get("error_message", "no result") if errors else "no result"}
            continue
        e = median[0]
        for key, unit in RATES.items():
            if key in e:
                out[name] = {"value": e[key], "unit": unit}
                break
        else:
            key = None
            out[name] = {"value": e["real_time"], "unit": e["time_unit"]}
        counters = {k: v for k, v in e.items() if k not in GBENCH_FIELDS and k != key}
        if e.get("label"):
            counters["label"] = e["label"]  # the peak rows: the instruction set they ran
        if counters:
            out[name]["detail"] = counters
        out[name]["context"] = data.get("context", {})
    return out


def load_peers(raw):
    """peer -> (results {name: {"value", "unit", ...}}, meta); peers without a file are left out."""
    peers = {}
    for peer in ("tensorflow", "torch"):
        path = os.path.join(raw, peer + ".json")
        if os.path.exists(path):
            try:
                with open(path) as f:
                    data = json.load(f)
                peers[peer] = (data["results"], data["meta"])
            except (OSError, ValueError, KeyError) as e:
                print(f"report: ignoring {path}: {e}")
    path = os.path.join(raw, "ort.jsonl")
    if os.path.exists(path):
        results, version = {}, None
        with open(path) as f:
            for line in f:
                if line.strip():
                    entry = json.loads(line)
                    r = entry["result"]
                    results[entry["name"]] = {"value": r["median_ms"], "unit": "ms",
                                              **{k: r[k] for k in ("min_ms", "mean_ms", "cpu_median_ms", "iters")
                                                 if k in r}}
                    version = r.get("ort")
        peers["onnxruntime"] = (results, version)
    return peers


def speedup(ours, theirs):
    """deepflow's speed relative to the peer; None when either has no value or the units differ."""
    if not ours.get("value") or not theirs.get("value"):
        return None
    if ours["unit"] in SECONDS and theirs["unit"] in SECONDS:
        return theirs["value"] * SECONDS[theirs["unit"]] / (ours["value"] * SECONDS[ours["unit"]])
    return ours["value"] / theirs["value"] if ours["unit"] == theirs["unit"] else None


def cpu_info():
    """(model name, highest 'cpu MHz' in GHz, the ISA_FLAGS present) from /proc/cpuinfo."""
    model, mhz, flags = None, [], set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, val = line.partition(":")
                key = key.strip()
                if key == "model name" and model is None:
                    model = val.strip()
                elif key == "cpu MHz":
                    mhz.append(float(val))
                elif key == "flags" and not flags:
                    flags = set(val.split())
    except OSError:
        pass
    return model, (max(mhz) / 1000 if mhz else None), [f for f in ISA_FLAGS if f in flags]


def fmt(v):
    if v is None:
        return "-"
    return f"{v:.3g}" if abs(v) < 100 else f"{v:.0f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    ours = load_deepflow(args.raw)
    peers = load_peers(args.raw)

    rows = []
    for name, r in ours.items():
        row = {"name": name, "peer": "deepflow", "value": r.get("value"), "unit": r.get("unit")}
        for key in ("error", "detail"):
            if key in r:
                row[key] = r[key]
        rows.append(row)
        for peer in PEERS:
            p = peers.get(peer, ({}, None))[0].get(name)
            if p is None:
                continue
            prow = {"name": name, "peer": peer, "value": p.get("value"), "unit": p.get("unit"),
                    "ratio": speedup(r, p)}
            extra = {k: v for k, v in p.items() if k not in ("value", "unit", "error")}
            if extra:
                prow["detail"] = extra
            if p.get("error"):
                prow["error"] = p["error"]
            rows.append(prow)
    by_name = {r["name"]: r for r in rows if r["peer"] == "deepflow"}
    peer_rows = {(r["name"], r["peer"]): r for r in rows if r["peer"] != "deepflow"}

    def ratio(name, peer):
        return peer_rows.get((name, peer), {}).get("ratio")

    def value(name):
        return by_name.get(name, {}).get("value")

    # The peaks are measured (bench_peak.cpp), each with the widest instruction of its kind;
    # the row's label says which. matmul and conv are stated as shares of them.
    cores = min(args.threads, os.cpu_count() or args.threads)
    model, clock, isa = cpu_info()

    def label(name):
        return by_name.get(name, {}).get("detail", {}).get("label")

    measured = value("fma_peak_f32")
    nominal = cores * FLOPS_PER_CYCLE * clock if clock and FLOPS_PER_CYCLE else None
    peak = {
        "cpu": model, "isa": isa, "cores": cores, "cpuinfo_clock_ghz": clock,
        "fp32_isa": label("fma_peak_f32"), "peak_gflops": measured,
        "avx2_fma_gflops": value("fma_peak_f32_avx2"),
        "int8_vnni_gops": value("vnni_peak_int8"), "bf16_gflops": value("bf16_peak"),
        "nominal_gflops": nominal, "flops_per_cycle_per_core": FLOPS_PER_CYCLE,
        "shares": {},
    }
    for name, r in by_name.items():
        if not (name.startswith("matmul_") or name.startswith("conv2d_")) or not r.get("value"):
            continue
        if "bf16" in name:
            # With AMX tiles oneDNN's bf16 matmul runs on them, past what vdpbf16ps can do.
            if "amx_bf16" not in isa and peak["bf16_gflops"]:
                peak["shares"][name] = r["value"] / peak["bf16_gflops"]
        elif measured:
            peak["shares"][name] = r["value"] / measured

    def target(what, got, want, ok):
        return {"target": what, "got": got, "want": want, "pass": None if got is None else ok}

    mm, add, copy, disp = value("matmul_f32_1024"), value("add_16M"), value("copy_16M"), value("dispatch_add_8")
    mm_ratio = ratio("matmul_f32_1024", "torch")
    mm_tf = ratio("matmul_f32_1024", "tensorflow")
    # Interleaved add/memcpy when it ran; else the two separate benchmarks.
    add_share = value("add_vs_copy_16M") or (add / copy if add and copy else None)
    # Same batch on both sides, so the samples/s ratio is the step-time ratio.
    mlp_ratio = ratio("keras/mlp_sgd_b128", "torch")
    lenet_ratio = ratio("keras/lenet_adam_b64", "torch")
    mlp_tf, lenet_tf = ratio("keras/mlp_sgd_b128", "tensorflow"), ratio("keras/lenet_adam_b64", "tensorflow")
    # ONNX inference: the same file and input in onnxruntime (ratio = speed, > 1: deepflow faster).
    onnx_ratios = [ratio(f"onnx/{m}/b{b}", "onnxruntime") for m in ("resnet18", "mobilenet_v2")
                   for b in (1, 8)]
    onnx_ratios = [r for r in onnx_ratios if r is not None]
    onnx_worst = min(onnx_ratios) if onnx_ratios else None
    targets = [
        target("matmul f32 1024 vs tensorflow (x)", mm_tf, ">= 0.95", mm_tf is not None and mm_tf >= 0.95),
        target("keras mlp_sgd_b128 speed vs tensorflow (x)", mlp_tf, ">= 1.0", mlp_tf is not None and mlp_tf >= 1.0),
        target("keras lenet_adam_b64 speed vs tensorflow (x)", lenet_tf, ">= 1.0",
               lenet_tf is not None and lenet_tf >= 1.0),
        target("matmul f32 1024 vs torch (x)", mm_ratio, ">= 0.95", mm_ratio is not None and mm_ratio >= 0.95),
        target("matmul f32 1024 share of fp32 peak", mm / peak["peak_gflops"] if mm and peak["peak_gflops"] else None,
               ">= 0.75", bool(mm and peak["peak_gflops"] and mm >= 0.75 * peak["peak_gflops"])),
        target("add 16M share of copy bandwidth", add_share, ">= 0.80", bool(add_share and add_share >= 0.8)),
        target("eager add [8] median, tape off (ns)", disp, "<= 1000", disp is not None and disp <= 1000),
        target("keras mlp_sgd_b128 speed vs torch (x)", mlp_ratio, ">= 1.3",
               mlp_ratio is not None and mlp_ratio >= 1.3),
        target("keras lenet_adam_b64 speed vs torch (x)", lenet_ratio, ">= 1.2",
               lenet_ratio is not None and lenet_ratio >= 1.2),
        target("onnx models speed vs onnxruntime, worst (x)", onnx_worst, ">= 1.0",
               onnx_worst is not None and onnx_worst >= 1.0),
    ]

    # TensorFlow first; torch and ONNX Runtime share a column (ONNX Runtime has only onnx/ rows).
    def cell(name, *names):
        p = next((peer_rows[(name, n)] for n in names if (name, n) in peer_rows), None)
        if p is None:
            return "-", "-"
        if p.get("value") is None:
            return "error", "-"
        return fmt(p["value"]), (f"{p['ratio']:.2f}x" if p["ratio"] is not None else "-")

    w = max([len("benchmark")] + [len(name) for name in by_name])
    print()
    print(f"{'benchmark':{w}s} {'deepflow':>10s} {'tensorflow':>10s} {'vs tf':>7s} {'torch/ort':>10s} "
          f"{'vs torch':>8s} {'unit':>8s}")
    print("-" * (w + 60))
    for name, r in by_name.items():
        if r.get("error"):
            print(f"{name:{w}s} error: {r['error'][:60]}")
            continue
        tf_value, tf_ratio = cell(name, "tensorflow")
        pt_value, pt_ratio = cell(name, "torch", "onnxruntime")
        print(f"{name:{w}s} {fmt(r['value']):>10s} {tf_value:>10s} {tf_ratio:>7s} {pt_value:>10s} {pt_ratio:>8s} "
              f"{r['unit']:>8s}")
    print("vs tf, vs torch: deepflow's speed relative to TensorFlow and to torch (onnxruntime for onnx/),")
    print("> 1 means deepflow is faster; TensorFlow's keras/ rows are its fastest of fit, tf.function and XLA")
    print(f"cpu: {model or 'unknown'}, {cores} threads, {fmt(clock)} GHz (cpuinfo); isa: {' '.join(isa) or '-'}")
    if measured:
        others = [f"{what} {fmt(v)} {unit}" for what, v, unit in (
            ("avx2 fma", peak["avx2_fma_gflops"], "GFLOP/s"), ("int8 vnni", peak["int8_vnni_gops"], "GOP/s"),
            ("bf16", peak["bf16_gflops"], "GFLOP/s")) if v]
        print(f"peak (measured, {cores} threads): fp32 {fmt(measured)} GFLOP/s with {label('fma_peak_f32')} FMAs"
              + (f"; {', '.join(others)}" if others else "")
              + (f"; nominal {fmt(nominal)} at {FLOPS_PER_CYCLE:g} flops/cycle" if nominal else ""))
        print("share of peak: " + ", ".join(f"{n} {v:.0%}" for n, v in peak["shares"].items())
              + ("; bf16 matmul runs on AMX tiles here, which are not measured" if "amx_bf16" in isa else ""))
    stream = value("copy_16M_stream")
    if add and stream:
        print(f"add 16M is {add / stream:.2f} of the streaming-copy ceiling ({fmt(stream)} GB/s, "
              f"non-temporal stores); memcpy reaches {fmt(copy)} GB/s")
    print()
    for t in targets:
        status = {True: "PASS", False: "FAIL", None: "n/a"}[t["pass"]]
        got = "-" if t["got"] is None else f"{t['got']:.3g}"
        print(f"{status:4s}  {t['target']:40s} {got:>8s}  (want {t['want']})")

    ctx = next((r["context"] for r in ours.values() if r.get("context")), {})
    result = {
        "benchmarks": rows, "targets": targets, "peak": peak,
        "context": {"threads": args.threads, "loadavg": open("/proc/loadavg").read().split()[:3],
                    "deepflow": {k: ctx.get(k) for k in ("host_name", "num_cpus", "mhz_per_cpu", "omp_threads")
                                 if k in ctx},
                    **{peer: peers.get(peer, (None, None))[1] for peer in PEERS}},
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
