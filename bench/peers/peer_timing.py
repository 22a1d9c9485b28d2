# SPDX-License-Identifier: Apache-2.0
"""What every Python peer (torch_peer.py, tf_peer.py) shares: the command line and the
timing rule, so their medians are taken the same way: warm up, calibrate a block of calls
to --min-time, take the median over --repetitions blocks."""
import argparse
import statistics
import time


def parse_args(description):
    """--threads, --repetitions, --min-time and --filter, as scripts/run-bench.sh passes them."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--min-time", type=float, default=0.2)
    parser.add_argument("--filter", default="", help="regex: run only the benchmarks whose names match")
    return parser.parse_args()


def time_per_call(fn, repetitions, min_time):
    """Median seconds per call of fn over `repetitions` blocks of >= min_time seconds."""
    fn()
    # Warm-up and calibration: grow the block until it lasts a tenth of min_time.
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_time / 10:
            break
        calls *= 4
    calls = max(1, int(calls * min_time / max(elapsed, 1e-9)))
    samples = []
    for _ in range(repetitions):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)
