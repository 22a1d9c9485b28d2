-- SPDX-License-Identifier: Apache-2.0
-- wrk script for bench/serving/run.sh: POSTs the predict body in $BODY_FILE (a batch-1
-- request) to the URL given on wrk's command line, and prints one machine-readable line
-- with the latency percentiles (microseconds) and the throughput.
--
--   BODY_FILE=body.json wrk -t1 -c1 -d10s -s predict.lua http://127.0.0.1:8501/v1/models/mnist:predict
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
wrk.body = f:read("*a")
f:close()

function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  io.write(string.format("RESULT p50_us=%d p99_us=%d mean_us=%.1f rps=%.1f requests=%d non2xx=%d socket_errors=%d\n",
    latency:percentile(50), latency:percentile(99), latency.mean, summary.requests / seconds, summary.requests,
    summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write +
    summary.errors.timeout))
end
