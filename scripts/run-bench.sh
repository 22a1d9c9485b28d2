#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs deepflow's benchmarks and its peers (TensorFlow, PyTorch, ONNX Runtime), then prints a
# table and writes <build>/bench-results.json. Called by `make bench` as: scripts/run-bench.sh build
#
# Settings (environment): DEEPFLOW_BENCH_REPS (repetitions, default 5; medians are
# reported), DEEPFLOW_BENCH_MIN_TIME (seconds per repetition, default 0.2),
# DEEPFLOW_BENCH_THREADS (threads for both sides, default 2), DEEPFLOW_BENCH_FILTER
# (regex on benchmark names), PYTHON (an interpreter that imports torch),
# DEEPFLOW_PEERS_VENV (the TensorFlow venv of scripts/install-peers.sh, default .venv-peers),
# DEEPFLOW_ONNX_MODELS (scripts/make-onnx-models.py's output, default data/onnx_models).
# docs/benchmarks.md describes each benchmark and how the fp32 peak is computed.
set -euo pipefail

build=${1:-build}
reps=${DEEPFLOW_BENCH_REPS:-5}
min_time=${DEEPFLOW_BENCH_MIN_TIME:-0.2}
threads=${DEEPFLOW_BENCH_THREADS:-2}
filter=${DEEPFLOW_BENCH_FILTER:-.}
root=$(cd "$(dirname "$0")/.." && pwd)
bench=$build/bench/deepflow_bench
raw=$build/bench-raw
[[ -x $bench ]] || { echo "run-bench: $bench not found (configure with -DDEEPFLOW_BUILD_BENCH=ON)" >&2; exit 1; }
rm -rf "$raw" && mkdir -p "$raw"
# The ONNX benchmarks (onnx/<model>/b<batch>) and their ONNX Runtime peer read the models here.
export DEEPFLOW_ONNX_MODELS=${DEEPFLOW_ONNX_MODELS:-$root/data/onnx_models}
if [[ ! -d $DEEPFLOW_ONNX_MODELS ]] && /usr/bin/python3 -c "import torch, torchvision" 2>/dev/null; then
  /usr/bin/python3 "$root/scripts/make-onnx-models.py" "$DEEPFLOW_ONNX_MODELS" >&2 || true
fi

load=$(cut -d' ' -f1 /proc/loadavg)
echo "run-bench: load average $load (numbers are only comparable within one quiet run)"
if awk "BEGIN { exit !($load > 0.5) }"; then
  echo "run-bench: warning: the machine is busy; OpenMP kernels on 2 cores slow down a lot" >&2
fi

# One process per benchmark: a benchmark that crashes costs only its own row.
names=$(OMP_NUM_THREADS=$threads "$bench" --benchmark_list_tests=true --benchmark_filter="$filter" | sed 's|/real_time$||')
echo $names >"$raw/order.txt"
for name in $names; do
  echo "run-bench: deepflow $name" >&2
  file=$raw/deepflow.${name//\//__}  # names may contain '/'; report.py maps them the same way
  regex=$(printf '%s' "$name" | sed 's/[][\.*^$+?(){}|]/\\&/g')
  if ! OMP_NUM_THREADS=$threads "$bench" --benchmark_filter="^${regex}(/|\$)" \
      --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true \
      --benchmark_min_time="$min_time" --benchmark_format=json >"$file.json" 2>"$file.err"; then
    echo "run-bench: $name failed: $(tail -n 1 "$file.err")" >&2
  fi
done

# The peer: Debian's python3-torch, usually /usr/bin/python3 (a pyenv python3 on PATH lacks it).
python=${PYTHON:-}
if [[ -z $python ]]; then
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null && "$p" -c "import torch" 2>/dev/null; then python=$p; break; fi
  done
fi
if [[ -n $python ]]; then
  echo "run-bench: torch peer ($python)" >&2
  # PyTorch at its best, for this command only: OpenBLAS picks its own kernels for this CPU
  # (the environment may pin it to AVX2 ones), and glibc malloc keeps freed memory around.
  if ! env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS="$threads" \
      MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=268435456 MALLOC_TOP_PAD_=67108864 \
      "$python" "$root/bench/peers/torch_peer.py" --threads "$threads" --repetitions "$reps" \
      --min-time "$min_time" --filter "$filter" >"$raw/torch.json"; then
    echo "run-bench: the torch peer failed; the table has no peer column" >&2
    rm -f "$raw/torch.json"
  fi
else
  echo "run-bench: no python3 with torch (scripts/install-deps.sh peers); no peer column" >&2
fi

# The TensorFlow peer: TF 2.21 from .venv-peers (make peers), run from the repository root.
# oneDNN stays at its x86 default (on); the OpenBLAS pins go for the same reason as torch's.
tf_python=${DEEPFLOW_PEERS_VENV:-$root/.venv-peers}/bin/python
if [[ -x $tf_python ]] && TF_CPP_MIN_LOG_LEVEL=3 "$tf_python" -c "import tensorflow" >/dev/null 2>&1; then
  echo "run-bench: tensorflow peer ($tf_python)" >&2
  if ! (cd "$root" && env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS="$threads" \
      "$tf_python" bench/peers/tf_peer.py --threads "$threads" --repetitions "$reps" \
      --min-time "$min_time" --filter "$filter") >"$raw/tensorflow.json"; then
    echo "run-bench: the tensorflow peer failed; the table has no tensorflow column" >&2
    rm -f "$raw/tensorflow.json"
  fi
else
  echo "run-bench: $tf_python missing or without tensorflow (make peers); no tensorflow column" >&2
fi

# The ONNX Runtime peer (onnxruntime-node from scripts/fetch-test-deps.sh) for the onnx/ rows:
# one JSON line per benchmark in ort.jsonl, the median of as many runs as deepflow gets.
ort_modules=$root/data/node_modules
if command -v node >/dev/null && NODE_PATH=$ort_modules node -e "require('onnxruntime-node')" 2>/dev/null; then
  for name in $names; do
    [[ $name =~ ^onnx/([^/]+)/b([0-9]+)$ ]] || continue
    model=$DEEPFLOW_ONNX_MODELS/${BASH_REMATCH[1]}/model.onnx
    [[ -f $model ]] || continue
    echo "run-bench: onnxruntime $name" >&2
    if line=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_NUM_THREADS="$threads" NODE_PATH=$ort_modules \
        node "$root/bench/peers/onnx_ort.js" "$model" "${BASH_REMATCH[2]}" "$threads" $((reps * 4))); then
      echo "{\"name\": \"$name\", \"result\": $line}" >>"$raw/ort.jsonl"
    else
      echo "run-bench: onnxruntime $name failed" >&2
    fi
  done
else
  echo "run-bench: no onnxruntime-node in $ort_modules (scripts/fetch-test-deps.sh); no peer for onnx/" >&2
fi

report_python=python3
command -v python3 >/dev/null || report_python=/usr/bin/python3
"$report_python" "$root/bench/report.py" --raw "$raw" --threads "$threads" --out "$build/bench-results.json"
