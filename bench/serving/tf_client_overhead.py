# SPDX-License-Identifier: Apache-2.0
"""Server overhead of `deepflow serve` on a TensorFlow-written SavedModel, driven by the
official TF Serving client (tensorflow-serving-api 2.21) over gRPC at batch 1.

  .venv-peers/bin/python bench/serving/tf_client_overhead.py build [saved_model_dir] [requests]

The default model is the corpus's ResNet50 (data/tf_models/resnet50/saved_model, from
`make tf-models-apps`). One client sends `requests` Predict calls one after another
(after 10 unmeasured ones) and prints:
  - the client's latency p50 / p99;
  - the server's overhead per request: its request latency minus its runtime latency, both
    measured by the server on the same request (the Prometheus histograms' sums, read
    before and after each call), p50 / p99 / mean: what the server adds around the
    model's compute (resolving the model, decoding the request, encoding the reply);
  - latency p50 minus the runtime mean, which also counts gRPC's transport and the
    Python client's own cost (its protos and its channel), for reference.
OMP_NUM_THREADS is left as given (2 on the 2-core VM, as the other benchmarks)."""
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import grpc  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow_serving.apis import (get_model_status_pb2, model_service_pb2_grpc, predict_pb2,  # noqa: E402
                                     prediction_service_pb2_grpc)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WARMUP = 10


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def metric_sums(rest_port, model):
    """(request latency sum, runtime latency sum, request count) of `model`, in us."""
    import urllib.request
    text = urllib.request.urlopen("http://127.0.0.1:%d/monitoring/prometheus/metrics" % rest_port).read().decode()

    def total(name):
        pattern = r'^%s_(sum|count)\{[^}]*model_name="%s"[^}]*\} ([0-9.e+]+)$' % (re.escape(name), model)
        out = {"sum": 0.0, "count": 0.0}
        for kind, value in re.findall(pattern, text, re.M):
            out[kind] += float(value)
        return out

    request, runtime = total(":tensorflow:serving:request_latency"), total(":tensorflow:serving:runtime_latency")
    return request["sum"], runtime["sum"], request["count"], runtime["count"]


def wait_available(address, model, seconds):
    stub = model_service_pb2_grpc.ModelServiceStub(grpc.insecure_channel(address))
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            req = get_model_status_pb2.GetModelStatusRequest()
            req.model_spec.name = model
            status = stub.GetModelStatus(req, timeout=5)
            if any(v.state == get_model_status_pb2.ModelVersionStatus.AVAILABLE for v in status.model_version_status):
                return
        except grpc.RpcError:
            pass
        time.sleep(0.5)
    sys.exit("tf_client_overhead.py: %s did not become AVAILABLE in %d s" % (model, seconds))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    model_dir = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] else
                                os.path.join(ROOT, "data", "tf_models", "resnet50", "saved_model"))
    requests = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    if not os.path.exists(os.path.join(model_dir, "saved_model.pb")):
        sys.exit("tf_client_overhead.py: %s has no saved_model.pb (make tf-models-apps)" % model_dir)
    loaded = tf.saved_model.load(model_dir)
    sig = loaded.signatures["serving_default"]
    (key, spec), = sig.structured_input_signature[1].items()
    image = np.random.default_rng(7).random([1] + spec.shape.as_list()[1:], dtype=np.float32)
    del loaded, sig

    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "model")
        os.makedirs(base)
        os.symlink(model_dir, os.path.join(base, "1"))
        monitoring = os.path.join(tmp, "monitoring.config")
        with open(monitoring, "w") as f:
            f.write('prometheus_config { enable: true path: "/monitoring/prometheus/metrics" }\n')
        grpc_port, rest_port = free_port(), free_port()
        log = open(os.path.join(tmp, "serve.log"), "w")
        server = subprocess.Popen([os.path.join(build, "tools", "cli", "deepflow"), "serve", "--port=%d" % grpc_port,
                                   "--rest_api_port=%d" % rest_port, "--model_name=model", "--model_base_path=" + base,
                                   "--monitoring_config_file=" + monitoring], stdout=log, stderr=subprocess.STDOUT)
        try:
            address = "127.0.0.1:%d" % grpc_port
            wait_available(address, "model", 300)
            stub = prediction_service_pb2_grpc.PredictionServiceStub(grpc.insecure_channel(
                address, options=[("grpc.max_receive_message_length", 64 << 20)]))
            request = predict_pb2.PredictRequest()
            request.model_spec.name = "model"
            request.inputs[key].CopyFrom(tf.make_tensor_proto(image))
            for _ in range(WARMUP):
                stub.Predict(request, timeout=60)
            before = metric_sums(rest_port, "model")
            latencies, overheads = [], []
            for _ in range(requests):
                m0 = metric_sums(rest_port, "model")
                t0 = time.perf_counter()
                stub.Predict(request, timeout=60)
                latencies.append((time.perf_counter() - t0) * 1e6)
                m1 = metric_sums(rest_port, "model")
                overheads.append((m1[0] - m0[0]) - (m1[1] - m0[1]))  # this request's, server-measured
            after = metric_sums(rest_port, "model")
        finally:
            server.terminate()
            server.wait()
    req_sum, run_sum, req_count, run_count = (a - b for a, b in zip(after, before))
    if req_count != requests or run_count != requests:
        sys.exit("tf_client_overhead.py: the server counted %d requests and %d runs, not %d"
                 % (req_count, run_count, requests))
    p50, p99 = np.percentile(latencies, 50), np.percentile(latencies, 99)
    runtime = run_sum / requests
    print("deepflow serve, %s, batch 1, %d Predict calls, official client (gRPC)" % (model_dir, requests))
    print("  client latency p50=%.0f us p99=%.0f us; the server's runtime (compute) mean=%.0f us"
          % (p50, p99, runtime))
    print("  server overhead (request latency - runtime latency, server-measured): p50=%.1f us p99=%.1f us "
          "mean=%.1f us" % (np.percentile(overheads, 50), np.percentile(overheads, 99), (req_sum - run_sum) / requests))
    print("  latency p50 - compute mean (with transport and the Python client)=%.0f us" % (p50 - runtime))


if __name__ == "__main__":
    main()
