#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The issue's accuracy check: the same LeNet-style CNN trained the same number of epochs
# on MNIST by deepflow (examples/lenet_mnist.cpp, Keras-style fit) and by PyTorch
# (bench/mnist_accuracy.py) must reach test accuracies within 0.3 points. Runs both, one
# after the other (a few minutes each on 2 cores), prints both accuracies and the
# difference, and exits 1 when |difference| > 0.3 points (2 when a run failed).
#
# Usage: scripts/compare-mnist.sh [build dir (default build)] [epochs (default 2)]
# Settings (environment): DEEPFLOW_BENCH_THREADS (threads for both, default 2), PYTHON
# (an interpreter that imports torch), DEEPFLOW_DATA (as load_data: $DEEPFLOW_DATA/mnist).
# Needs the MNIST files (scripts/fetch-data.sh) and a build with examples (lenet_mnist).
set -euo pipefail

build=${1:-build}
epochs=${2:-2}
threads=${DEEPFLOW_BENCH_THREADS:-2}
root=$(cd "$(dirname "$0")/.." && pwd)
max_diff=0.3
exe=$build/examples/lenet_mnist
[[ -x $exe ]] || { echo "compare-mnist: $exe not found (cmake --build $build --target lenet_mnist)" >&2; exit 2; }

python=${PYTHON:-}
if [[ -z $python ]]; then
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c "import torch, numpy" 2>/dev/null; then python=$p; break; fi
  done
fi
[[ -n $python ]] || { echo "compare-mnist: no python3 with torch and numpy (DEEPFLOW_PEERS=1 scripts/install-deps.sh)" >&2; exit 2; }

echo "compare-mnist: load average $(cut -d' ' -f1 /proc/loadavg); $epochs epochs, $threads threads each"
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

echo "compare-mnist: deepflow ($exe)"
if ! OMP_NUM_THREADS=$threads "$exe" "$epochs" 2>&1 | tee "$log/deepflow.txt"; then
  echo "compare-mnist: lenet_mnist failed" >&2; exit 2
fi
echo "compare-mnist: torch ($python)"
# The peer's environment as in run-bench.sh: OpenBLAS picks its kernels, glibc malloc keeps memory.
if ! env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS="$threads" \
    MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=268435456 MALLOC_TOP_PAD_=67108864 \
    "$python" "$root/bench/mnist_accuracy.py" --epochs "$epochs" --threads "$threads" 2>&1 | tee "$log/torch.txt"; then
  echo "compare-mnist: mnist_accuracy.py failed" >&2; exit 2
fi

ours=$(awk '$1 == "test_accuracy" { v = $2 } END { print v }' "$log/deepflow.txt")
theirs=$(awk '$1 == "test_accuracy" { v = $2 } END { print v }' "$log/torch.txt")
[[ -n $ours && -n $theirs ]] || { echo "compare-mnist: a run printed no test_accuracy line" >&2; exit 2; }
awk -v a="$ours" -v b="$theirs" -v m="$max_diff" 'BEGIN {
  d = 100 * (a - b); ad = d < 0 ? -d : d
  printf "\ntest accuracy: deepflow %.2f%%, torch %.2f%%, difference %+.2f points (want |diff| <= %.1f): %s\n",
         100 * a, 100 * b, d, m, ad <= m ? "PASS" : "FAIL"
  exit ad <= m ? 0 : 1
}'
