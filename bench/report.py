# SPDX-License-Identifier: Apache-2.0
"""Joins deepflow_bench's JSON (one file per benchmark) with the peers' JSON: torch's, and
ONNX Runtime's for the onnx/ rows (ort.jsonl, one line per benchmark, from run-bench.sh).

Prints a table and the performance targets, and writes bench-results.json:
  {"benchmarks": [{"name", "value", "unit", "peer_value", "ratio"}, ...],
   "targets": [...], "peak": {...}, "context": {...}}
ratio is deepflow's speed relative to torch (> 1: deepflow is faster): value / peer for
rates (GFLOP/s, GB/s), peer / value for times (ns, us). Standard library only.
"""
import argparse
import glob
import json
import os

# Zen 4: 2 FMA pipes x 8 fp32 lanes (256-bit; 512-bit FMAs are double-pumped) x 2 flops.
FLOPS_PER_CYCLE = float(os.environ.get("DEEPFLOW_BENCH_FLOPS_PER_CYCLE", "32"))
RATES = {"GFLOP": "GFLOP/s", "GB": "GB/s", "fraction": "x"}


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
            out[name] = {"value": e["real_time"], "unit": e["time_unit"]}
        out[name]["context"] = data.get("context", {})
    return out


def cpu_clock_ghz():
    """The highest 'cpu MHz' in /proc/cpuinfo (under a hypervisor: the nominal clock)."""
    mhz = []
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("cpu MHz"):
                    mhz.append(float(line.split(":")[1]))
    except OSError:
        pass
    return max(mhz) / 1000 if mhz else None


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
    peer, peer_meta = {}, None
    peer_path = os.path.join(args.raw, "torch.json")
    if os.path.exists(peer_path):
        with open(peer_path) as f:
            data = json.load(f)
        peer, peer_meta = data["results"], data["meta"]
    ort_path = os.path.join(args.raw, "ort.jsonl")
    ort_version = None
    if os.path.exists(ort_path):
        with open(ort_path) as f:
            for line in f:
                if line.strip():
                    entry = json.loads(line)
                    r = entry["result"]
                    peer[entry["name"]] = {"value": r["median_ms"], "unit": "ms", "peer": "onnxruntime"}
                    ort_version = r.get("ort")

    rows = []
    for name, r in ours.items():
        row = {"name": name, "value": r.get("value"), "unit": r.get("unit"), "peer_value": None, "ratio": None}
        p = peer.get(name)
        if p and r.get("value"):
            row["peer_value"] = p["value"]
            timed = r["unit"] in ("ns", "us", "ms", "s")
            row["ratio"] = p["value"] / r["value"] if timed else r["value"] / p["value"]
            extra = {k: v for k, v in p.items() if k not in ("value", "unit")}
            if extra:
                row["peer_detail"] = extra
        if "error" in r:
            row["error"] = r["error"]
        rows.append(row)
    by_name = {r["name"]: r for r in rows}

    def value(name):
        return by_name.get(name, {}).get("value")

    # fp32 peak = cores x FMA pipes x lanes x 2 x clock; the clock from /proc/cpuinfo is the
    # nominal one, and turbo runs faster, so the measured FMA peak counts when it is higher.
    cores = min(args.threads, os.cpu_count() or args.threads)
    clock = cpu_clock_ghz()
    nominal = cores * FLOPS_PER_CYCLE * clock if clock else None
    measured = value("fma_peak_f32")
    candidates = [v for v in (nominal, measured) if v]
    peak = {
        "cores": cores, "flops_per_cycle_per_core": FLOPS_PER_CYCLE, "cpuinfo_clock_ghz": clock,
        "nominal_gflops": nominal, "measured_fma_gflops": measured,
        "effective_clock_ghz": measured / (cores * FLOPS_PER_CYCLE) if measured else None,
        "peak_gflops": max(candidates) if candidates else None,
    }

    def target(what, got, want, ok):
        return {"target": what, "got": got, "want": want, "pass": None if got is None else ok}

    mm, add, copy, disp = value("matmul_f32_1024"), value("add_16M"), value("copy_16M"), value("dispatch_add_8")
    mm_ratio = by_name.get("matmul_f32_1024", {}).get("ratio")
    # Interleaved add/memcpy when it ran; else the two separate benchmarks.
    add_share = value("add_vs_copy_16M") or (add / copy if add and copy else None)
    # Same batch on both sides, so the samples/s ratio is the step-time ratio.
    mlp_ratio = by_name.get("keras/mlp_sgd_b128", {}).get("ratio")
    lenet_ratio = by_name.get("keras/lenet_adam_b64", {}).get("ratio")
    # ONNX inference: the same file and input in onnxruntime (ratio = speed, > 1: deepflow faster).
    onnx_ratios = [by_name.get(f"onnx/{m}/b{b}", {}).get("ratio") for m in ("resnet18", "mobilenet_v2")
                   for b in (1, 8)]
    onnx_ratios = [r for r in onnx_ratios if r is not None]
    onnx_worst = min(onnx_ratios) if onnx_ratios else None
    targets = [
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

    w = max([len("benchmark")] + [len(r["name"]) for r in rows])
    print()
    print(f"{'benchmark':{w}s} {'deepflow':>10s} {'peer':>10s} {'unit':>8s} {'speedup':>8s}")
    print("-" * (w + 40))
    for r in rows:
        if r.get("error"):
            print(f"{r['name']:{w}s} error: {r['error'][:60]}")
            continue
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] is not None else "-"
        print(f"{r['name']:{w}s} {fmt(r['value']):>10s} {fmt(r['peer_value']):>10s} {r['unit']:>8s} {ratio:>8s}")
    print("speedup: deepflow relative to the peer (torch; onnxruntime for onnx/), > 1 means deepflow is faster")
    if peak["peak_gflops"]:
        print(f"fp32 peak: {cores} cores x {FLOPS_PER_CYCLE:g} flops/cycle x "
              f"{fmt(clock)} GHz (cpuinfo) = {fmt(nominal)} GFLOP/s nominal; measured FMA peak "
              f"{fmt(measured)} GFLOP/s; using {fmt(peak['peak_gflops'])}")
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
                    "torch": peer_meta, "onnxruntime": ort_version},
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
