#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Interleaved rounds of one ONNX benchmark row against ONNX Runtime: each round runs
# deepflow_bench (3 repetitions, median) and then bench/peers/onnx_ort.js on the same model
# file and input, both with 2 threads, and prints both times and their ratio (ORT / deepflow,
# > 1 means deepflow is faster). On machines whose speed drifts between runs (shared vCPUs),
# compare within rounds; the last line gives the medians over the rounds.
#
#   scripts/onnx-rounds.sh <build-dir> <model> <batch> [rounds]   e.g. scripts/onnx-rounds.sh build mobilenet_v2 1 8
set -euo pipefail
[[ $# -ge 3 ]] || { echo "usage: $0 <build-dir> <model> <batch> [rounds]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
bench=$(cd "$1" && pwd)/bench/deepflow_bench
model=$2 batch=$3 rounds=${4:-5}
models=${DEEPFLOW_ONNX_MODELS:-$root/data/onnx_models}
[[ -x $bench ]] || { echo "$0: $bench not found (build deepflow_bench)" >&2; exit 1; }
[[ -f $models/$model/model.onnx ]] || { echo "$0: $models/$model/model.onnx not found (make test fetches it)" >&2; exit 1; }
iters=$((batch == 1 ? 100 : 20))
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for _ in $(seq "$rounds"); do
  d=$(OMP_NUM_THREADS=2 DEEPFLOW_ONNX_MODELS=$models "$bench" --benchmark_filter="^onnx/$model/b$batch/" \
        --benchmark_repetitions=3 --benchmark_report_aggregates_only=true 2>/dev/null | awk '/_median/ {print $2}')
  o=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE NODE_PATH="$root/data/node_modules" \
        node "$root/bench/peers/onnx_ort.js" "$models/$model/model.onnx" "$batch" 2 "$iters" |
      python3 -c 'import json, sys; print(json.load(sys.stdin)["median_ms"])')
  awk -v d="$d" -v o="$o" 'BEGIN {printf "deepflow %.2f ms  onnxruntime %.2f ms  ratio %.2f\n", d, o, o / d}' | tee -a "$out"
done
python3 - "$out" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
d = statistics.median(float(r[1]) for r in rows)
o = statistics.median(float(r[4]) for r in rows)
print(f"medians over {len(rows)} rounds: deepflow {d:.2f} ms  onnxruntime {o:.2f} ms  ratio {o / d:.2f}")
PY
