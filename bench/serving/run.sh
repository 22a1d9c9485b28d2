#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The REST serving benchmark (issue 7): `deepflow serve` on the demo's small MNIST CNN,
# driven by wrk on loopback with a batch-1 predict body.
#
#   bench/serving/run.sh <build-dir> [duration]        e.g. bench/serving/run.sh build 10s
#
# For each mode (without / with --enable_batching) it measures
#   - 1 connection:   p50 and mean latency; the model's own compute time in the same run,
#                     the mean of the server's runtime_latency histogram over the wrk run
#                     (sum/count deltas); REST overhead = p50 - compute (and mean - compute)
#   - 64 connections: throughput and p99 latency, the server's and wrk's CPU time per
#                     request, and with batching the mean rows per batch
# and prints the batching throughput ratio, for run.sh's batching parameters (timeout 1 ms,
# as TF Serving's example) and for timeout 0 (TF Serving's advice on CPU; docs/serving.md). The model is <build-dir>/mnist_cnn (what
# `make demo` saves) or, when absent, the demo's CNN saved untrained by running
# <build-dir>/examples/demo with 0 epochs (the weights do not change the cost).
set -euo pipefail

[[ $# -ge 1 ]] || { echo "usage: $0 <build-dir> [duration]" >&2; exit 2; }
build=$(cd "$1" && pwd)
duration=${2:-10s}
here=$(cd "$(dirname "$0")" && pwd)
cli=$build/tools/cli/deepflow
[[ -x $cli ]] || { echo "run.sh: $cli not found (build the deepflow_cli target)" >&2; exit 1; }
command -v wrk >/dev/null || { echo "run.sh: wrk is needed (apt-get install wrk)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "run.sh: /usr/bin/time is needed (apt-get install time)" >&2; exit 1; }
command -v curl >/dev/null || { echo "run.sh: curl is needed" >&2; exit 1; }

work=$(mktemp -d)
pid=""
cleanup() {
  [[ -n $pid ]] && kill "$pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

# --- the model, in the serving layout (<base>/<version>) ---
if [[ -d $build/mnist_cnn ]]; then
  src=$build/mnist_cnn
elif [[ -x $build/examples/demo ]]; then
  echo "run.sh: $build/mnist_cnn is absent; saving the demo's CNN untrained (0 epochs)"
  "$build/examples/demo" "$work/mnist_cnn.weights" 0 "$work/mnist_cnn" >"$work/demo.log" 2>&1 || true
  src=$work/mnist_cnn
  [[ -f $src/saved_model.pb ]] || { cat "$work/demo.log" >&2; echo "run.sh: the demo saved no model" >&2; exit 1; }
else
  echo "run.sh: need $build/mnist_cnn (make demo) or $build/examples/demo" >&2
  exit 1
fi
mkdir -p "$work/models/mnist"
cp -r "$src" "$work/models/mnist/1"

# A batch-1 body: one all-zero 28x28x1 image.
row=$(printf '[0.0],%.0s' $(seq 28)); row="[${row%,}]"
image=$(printf "$row,%.0s" $(seq 28)); image="[${image%,}]"
printf '{"instances": [%s]}' "$image" >"$work/body.json"

printf 'prometheus_config { enable: true path: "/monitoring/prometheus/metrics" }\n' >"$work/monitoring.config"
cores=$(nproc)
for timeout in 1000 0; do
  cat >"$work/batching$timeout.config" <<EOF
max_batch_size { value: 64 }
batch_timeout_micros { value: $timeout }
num_batch_threads { value: $cores }
max_enqueued_batches { value: 1000 }
EOF
done

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
       echo 18501)
url=http://127.0.0.1:$port/v1/models/mnist:predict
metrics_url=http://127.0.0.1:$port/monitoring/prometheus/metrics

start_server() {
  "$cli" serve --port=0 --rest_api_port="$port" --model_name=mnist --model_base_path="$work/models/mnist" \
    --monitoring_config_file="$work/monitoring.config" --file_system_poll_wait_seconds=0 "$@" \
    >"$work/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$port/v1/models/mnist" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "run.sh: the server did not become ready" >&2
  exit 1
}

stop_server() {
  kill -TERM "$pid"
  local rc=0
  wait "$pid" || rc=$?
  pid=""
  [[ $rc -eq 0 ]] || { cat "$work/serve.log" >&2; echo "run.sh: serve exited with $rc after SIGTERM" >&2; exit 1; }
}

# runtime_latency sum and count (microseconds) of the predict API.
runtime() {
  curl -s "$metrics_url" | awk '/^:tensorflow:serving:runtime_latency_sum\{model_name="mnist",API="predict"/ {s=$2}
                                /^:tensorflow:serving:runtime_latency_count\{model_name="mnist",API="predict"/ {c=$2}
                                END {print (s ? s : 0), (c ? c : 0)}'
}

field() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<<"$2"; }

# The server's CPU seconds so far (user + system, all threads).
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$pid/stat"; }

# processed_batch_size sum and count (rows and batches run by the batcher).
batches() {
  curl -s "$metrics_url" | awk '/^:tensorflow:serving:batching_session:processed_batch_size_sum\{model_name="mnist"/ {s=$2}
                                /^:tensorflow:serving:batching_session:processed_batch_size_count\{model_name="mnist"/ {c=$2}
                                END {print (s ? s : 0), (c ? c : 0)}'
}

# wrk's own CPU time (user + system) goes to $work/wrk.cpu, in seconds.
run_wrk() {  # threads connections
  BODY_FILE=$work/body.json /usr/bin/time -f '%U %S' -o "$work/wrk.cpu" \
    wrk -t"$1" -c"$2" -d"$duration" -s "$here/predict.lua" "$url" | grep '^RESULT'
}

measure() {  # label, serve flags...
  local label=$1
  shift
  start_server "$@"
  BODY_FILE=$work/body.json wrk -t1 -c1 -d2s -s "$here/predict.lua" "$url" >/dev/null  # warm the connection path
  read -r s0 c0 < <(runtime)
  local one
  one=$(run_wrk 1 1)
  read -r s1 c1 < <(runtime)
  local many cpu0 cpu1 r0 b0 r1 b1 plan=""
  read -r r0 b0 < <(batches)
  cpu0=$(cpu_seconds)
  many=$(run_wrk 4 64)
  cpu1=$(cpu_seconds)
  read -r r1 b1 < <(batches)
  # Warmup times a one-row run on one thread and on all; which one it picks changes the
  # no-batching figure by up to 2x on a loaded machine (8 OpenMP teams on 2 cores).
  grep -q "on one thread" "$work/serve.log" && plan=", one-row requests on one thread (warmup)"
  stop_server
  local p50 compute
  p50=$(field p50_us "$one")
  compute=$(awk -v a="$s0" -v b="$s1" -v x="$c0" -v y="$c1" 'BEGIN {printf "%.1f", (b - a) / (y - x)}')
  local mean
  mean=$(field mean_us "$one")
  printf '%-12s c1: p50 %6s us  mean %8s us  compute (mean) %8s us  REST overhead: p50-compute %7s us, mean-compute %7s us\n' \
    "$label" "$p50" "$mean" "$compute" "$(awk -v p="$p50" -v c="$compute" 'BEGIN {printf "%.1f", p - c}')" \
    "$(awk -v p="$mean" -v c="$compute" 'BEGIN {printf "%.1f", p - c}')"
  local cpu_per_request
  cpu_per_request=$(awk -v a="$cpu0" -v b="$cpu1" -v n="$(field requests "$many")" 'BEGIN {printf "%.0f", (b - a) * 1e6 / n}')
  local wrk_cpu batch_rows="-"
  wrk_cpu=$(awk -v n="$(field requests "$many")" '{printf "%.0f", ($1 + $2) * 1e6 / n}' "$work/wrk.cpu")
  [[ $b1 != "$b0" ]] && batch_rows=$(awk -v a="$r0" -v b="$r1" -v x="$b0" -v y="$b1" 'BEGIN {printf "%.1f", (b - a) / (y - x)}')
  printf '%-12s c64: %9s req/s  p50 %7s us  p99 %7s us  cpu/request: server %4s us, wrk %3s us  rows/batch %s  (non-2xx %s of %s, socket errors %s%s)\n' \
    "$label" "$(field rps "$many")" "$(field p50_us "$many")" "$(field p99_us "$many")" "$cpu_per_request" "$wrk_cpu" \
    "$batch_rows" "$(field non2xx "$many")" "$(field requests "$many")" "$(field socket_errors "$many")" "$plan"
  eval "${label//-/_}_rps=$(field rps "$many")"
  eval "${label//-/_}_cpu=$cpu_per_request"
}

echo "deepflow serve REST benchmark: $(nproc) cores, wrk $duration per run, model $(du -sh "$src" | cut -f1) CNN"
measure no-batching
measure batching --enable_batching --batching_parameters_file="$work/batching1000.config"
measure batching-t0 --enable_batching --batching_parameters_file="$work/batching0.config"
awk -v a="$no_batching_rps" -v b="$batching_rps" -v c="$batching_t0_rps" \
  'BEGIN {printf "batching throughput ratio at 64 connections: %.2fx (timeout 1 ms), %.2fx (timeout 0)\n", b / a, c / a}'
# When the load generator shares the cores (wrk needs about as much CPU as the server
# here), throughput measures the machine; the server's CPU per request is what batching
# saves, and its ratio is the throughput ratio a CPU-bound server would reach.
awk -v a="$no_batching_cpu" -v b="$batching_cpu" -v c="$batching_t0_cpu" \
  'BEGIN {printf "server cpu per request at 64 connections, no-batching / batching: %.2fx (timeout 1 ms), %.2fx (timeout 0)\n", a / b, a / c}'
