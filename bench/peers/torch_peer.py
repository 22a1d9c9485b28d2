# SPDX-License-Identifier: Apache-2.0
"""PyTorch peer of bench/bench_ops.cpp: the same shapes, the same units, the same names.

Prints one JSON object: {"meta": {...}, "results": {name: {"value": v, "unit": u, ...}}}.
Each benchmark is warmed up, then timed in `--repetitions` blocks of calls lasting at
least `--min-time` seconds each; the value is the median over blocks. Run it the way
scripts/run-bench.sh does (OpenBLAS at its best kernels, glibc malloc tuned); see
docs/benchmarks.md.

    python3 bench/peers/torch_peer.py --threads 2 --repetitions 5 --min-time 0.2
"""
import json
import os
import re
import sys

import torch
import torch.nn.functional as F

from peer_timing import parse_args, time_per_call  # bench/peers is on sys.path when run as a script

N16M = 1 << 24


def main():
    args = parse_args(__doc__.splitlines()[0])

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    results = {}

    def run(name, fn, unit, amount=None, **extra):
        """unit GFLOP/s or GB/s: amount is giga-units per call; ns or us: time per call."""
        if not re.search(args.filter, name):
            return None
        seconds = time_per_call(fn, args.repetitions, args.min_time)
        if unit in ("GFLOP/s", "GB/s"):
            value = amount * 1e-9 / seconds
        else:
            value = seconds * {"ns": 1e9, "us": 1e6, "ms": 1e3}[unit]
        results[name] = {"value": value, "unit": unit, **extra}
        print(f"torch_peer: {name:40s} {value:12.3f} {unit}", file=sys.stderr)
        return value

    # --- matmul: [n, n] x [n, n]; 2 n^3 flops ---
    for n in (512, 1024, 2048):
        a, b = torch.rand(n, n) * 2 - 1, torch.rand(n, n) * 2 - 1
        run(f"matmul_f32_{n}", lambda: torch.matmul(a, b), "GFLOP/s", 2.0 * n**3)
    a16, b16 = (torch.rand(1024, 1024) * 2 - 1).bfloat16(), (torch.rand(1024, 1024) * 2 - 1).bfloat16()
    run("matmul_bf16_1024", lambda: torch.matmul(a16, b16), "GFLOP/s", 2.0 * 1024**3)

    # --- conv2d: NHWC shapes of deepflow, run in NCHW and channels_last; the best counts ---
    convs = [
        ("conv2d_8x56x56x64_3x3x64_same", (8, 56, 56, 64), (3, 3, 64, 64), 1),
        ("conv2d_32x28x28x32_3x3x64_valid", (32, 28, 28, 32), (3, 3, 32, 64), 0),
    ]
    for name, (n, h, w, c), (kh, kw, ci, co), pad in convs:
        if not re.search(args.filter, name):
            continue
        x = torch.rand(n, c, h, w) * 2 - 1
        f = torch.rand(co, ci, kh, kw) * 2 - 1
        oh, ow = h + 2 * pad - kh + 1, w + 2 * pad - kw + 1
        flops = 2.0 * n * oh * ow * co * kh * kw * ci
        nchw = run(name + "_nchw", lambda: F.conv2d(x, f, padding=pad), "GFLOP/s", flops)
        xl = x.contiguous(memory_format=torch.channels_last)
        fl = f.contiguous(memory_format=torch.channels_last)
        cl = run(name + "_channels_last", lambda: F.conv2d(xl, fl, padding=pad), "GFLOP/s", flops)
        results[name] = {"value": max(nchw, cl), "unit": "GFLOP/s", "nchw": nchw, "channels_last": cl}

    # --- 16M floats; GB/s counts each byte read or written once ---
    a, b = torch.rand(N16M) * 2 - 1, torch.rand(N16M) * 2 - 1
    out = torch.empty(N16M)
    run("copy_16M", lambda: out.copy_(a), "GB/s", 2 * 4 * N16M)
    run("clone_16M", lambda: a.clone(), "GB/s", 2 * 4 * N16M)
    add = run("add_16M", lambda: torch.add(a, b), "GB/s", 3 * 4 * N16M)
    if add is not None:
        # Not the headline (deepflow allocates its output too), but it separates torch's
        # kernel from the page faults of a fresh 64 MiB buffer (glibc mmaps blocks that big).
        seconds = time_per_call(lambda: torch.add(a, b, out=out), args.repetitions, args.min_time)
        results["add_16M"]["out_preallocated"] = 3 * 4 * N16M * 1e-9 / seconds
    run("relu_16M", lambda: torch.relu(a), "GB/s", 2 * 4 * N16M)
    run("reduce_sum_16M", lambda: torch.sum(a), "GB/s", 4 * N16M)
    del a, b, out

    logits = torch.rand(256, 1000) * 8 - 4
    run("softmax_256x1000", lambda: torch.softmax(logits, dim=-1), "GB/s", 2 * 4 * logits.numel())

    # --- eager dispatch of add on 8 floats (includes the Python call overhead) ---
    a, b = torch.rand(8), torch.rand(8)
    run("dispatch_add_8", lambda: torch.add(a, b), "ns")
    aw = a.clone().requires_grad_(True)
    run("dispatch_add_8_tape", lambda: torch.add(aw, b), "ns")

    # --- MLP training step: 784 -> 256 relu -> 10, softmax cross entropy, SGD ---
    x = torch.rand(64, 784)
    labels = torch.zeros(64, 10)
    labels[torch.arange(64), (torch.arange(64) * 7) % 10] = 1
    w1 = ((torch.rand(784, 256) * 2 - 1) * 0.05).requires_grad_()
    b1 = torch.zeros(256, requires_grad=True)
    w2 = ((torch.rand(256, 10) * 2 - 1) * 0.1).requires_grad_()
    b2 = torch.zeros(10, requires_grad=True)
    params = [w1, b1, w2, b2]

    def step():
        h = torch.relu(x @ w1 + b1)
        loss = F.cross_entropy(h @ w2 + b2, labels)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(g * 0.01)

    run("mlp_step_64x784x256x10", step, "us")

    # --- Keras-API training steps (bench/bench_keras.cpp): model, loss, optimizer step ---
    def train_step(model, opt, xb, yb):
        def fn():
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            return loss.item()  # train_on_batch returns the loss to the host too
        return fn

    def samples_per_s(name, batch):
        if name in results:
            results[name]["samples_per_s"] = batch * 1e6 / results[name]["value"]

    mlp = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                              torch.nn.ReLU(), torch.nn.Linear(512, 10))
    xb, yb = torch.rand(128, 784), torch.randint(0, 10, (128,))
    run("keras/mlp_sgd_b128", train_step(mlp, torch.optim.SGD(mlp.parameters(), lr=0.01), xb, yb), "us")
    samples_per_s("keras/mlp_sgd_b128", 128)

    name = "keras/lenet_adam_b64"
    if re.search(args.filter, name):
        # deepflow is NHWC ([64,28,28,1], Flatten of [7,7,64]); torch's layout is NCHW
        # ([64,1,28,28], Flatten of [64,7,7]): the same model with the Linear's input
        # features permuted. Timed in NCHW and channels_last; the faster counts, as for conv2d.
        def lenet():
            return torch.nn.Sequential(
                torch.nn.Conv2d(1, 32, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                torch.nn.Conv2d(32, 64, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
                torch.nn.Flatten(), torch.nn.Linear(7 * 7 * 64, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
        xb, yb = torch.rand(64, 1, 28, 28), torch.randint(0, 10, (64,))
        # Keras's Adam epsilon (1e-7) rather than torch's default 1e-8: the same optimizer.
        net = lenet()
        nchw = run(name + "_nchw", train_step(net, torch.optim.Adam(net.parameters(), lr=1e-3, eps=1e-7), xb, yb),
                   "us")
        net = lenet().to(memory_format=torch.channels_last)
        xl = xb.contiguous(memory_format=torch.channels_last)
        cl = run(name + "_channels_last",
                 train_step(net, torch.optim.Adam(net.parameters(), lr=1e-3, eps=1e-7), xl, yb), "us")
        if nchw is not None and cl is not None:  # None: the filter left one out
            results[name] = {"value": min(nchw, cl), "unit": "us", "nchw": nchw, "channels_last": cl}
            samples_per_s(name, 64)

    meta = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "mkldnn": torch.backends.mkldnn.is_available(),
        "repetitions": args.repetitions,
        "min_time_s": args.min_time,
        "env": {k: os.environ.get(k) for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OMP_NUM_THREADS",
                                               "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                                               "MALLOC_TOP_PAD_")},
    }
    json.dump({"meta": meta, "results": results}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
