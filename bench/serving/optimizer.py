# SPDX-License-Identifier: Apache-2.0
"""The serving optimizer's benchmark (issue 20): a SavedModel TensorFlow 2.21 wrote
(keras.applications ResNet50 from data/tf_models, `make tf-models-apps`) converted by
`deepflow saved_model convert` to FP32 and to INT8, both served by one `deepflow serve`,
and driven over gRPC by the official TF Serving client (tensorflow-serving-api, the peers
environment) at batch 1 and 8, one request at a time, the two models' requests interleaved
so that a noisy neighbour hits both alike. Reports the median latency, the throughput
(rows / s from the median) and the INT8 / FP32 throughput ratio; with --tf, TensorFlow's own
call of the original SavedModel in the same run as the reference.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv-peers/bin/python bench/serving/optimizer.py build \\
        [--model resnet50] [--rounds 20] [--tf]

Calibration: 32 random-normal images. The model is untrained (weights=None): the figure is
about speed; bench/serving/optimizer_accuracy.py measures accuracy on a trained model."""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--tf", action="store_true", help="also time TensorFlow calling the original SavedModel")
    args = ap.parse_args()
    cli = os.path.join(os.path.abspath(args.build), "tools", "cli", "deepflow")
    src = os.path.join(ROOT, "data", "tf_models", args.model, "saved_model")
    if not os.path.isdir(src):
        sys.exit(f"{src} is missing: make tf-models-apps")
    io = json.load(open(os.path.join(ROOT, "data", "tf_models", args.model, "io.json")))
    sig = io["variants"]["saved_model"]["signatures"]["serving_default"]
    (key, spec), = sig["inputs"].items()
    shape = spec["shape"][1:]
    work = tempfile.mkdtemp(prefix="df_opt_bench_")
    server = None
    try:
        rng = np.random.default_rng(0)
        calib = os.path.join(work, "calib.npy")
        np.save(calib, rng.normal(size=[32] + shape).astype(np.float32))
        for mode in ("FP32", "INT8"):
            cmd = [cli, "saved_model", "convert", "--dir", src, "--output_dir", os.path.join(work, mode.lower(), "1"),
                   "--signature_def", "serving_default", "--precision_mode", mode]
            if mode == "INT8":
                cmd += ["--calibration_inputs", f"{key}={calib}", "--calibration_method", "min_max"]
            t = time.perf_counter()
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            print(f"convert {mode}: {time.perf_counter() - t:.1f} s; {out.strip().splitlines()[0]}")
        config = os.path.join(work, "models.config")
        with open(config, "w") as f:
            f.write("model_config_list {\n")
            for m in ("fp32", "int8"):
                f.write(f'  config {{ name: "{m}" base_path: "{os.path.join(work, m)}" model_platform: "tensorflow" }}\n')
            f.write("}\n")
        port = free_port()
        server = subprocess.Popen([cli, "serve", "--port", str(port), "--rest_api_port", "0", "--host", "127.0.0.1",
                                   "--model_config_file", config], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        import grpc
        import tensorflow as tf
        from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc
        channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=[("grpc.max_receive_message_length", 1 << 28),
                                                                       ("grpc.max_send_message_length", 1 << 28)])
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)

        def request(model, x):
            r = predict_pb2.PredictRequest()
            r.model_spec.name = model
            r.model_spec.signature_name = "serving_default"
            r.inputs[key].CopyFrom(tf.make_tensor_proto(x))
            return r

        deadline = time.time() + 120
        while True:
            try:
                stub.Predict(request("int8", np.zeros([1] + shape, np.float32)), timeout=60)
                stub.Predict(request("fp32", np.zeros([1] + shape, np.float32)), timeout=60)
                break
            except grpc.RpcError:
                if server.poll() is not None or time.time() > deadline:
                    sys.exit("deepflow serve did not come up: " + server.stderr.read().decode()[-2000:])
                time.sleep(0.2)
        tf_fn = tf.saved_model.load(src).signatures["serving_default"] if args.tf else None
        results = {}
        for b in [int(v) for v in args.batches.split(",")]:
            x = rng.normal(size=[b] + shape).astype(np.float32)
            reqs = {m: request(m, x) for m in ("fp32", "int8")}
            outs = {m: tf.make_ndarray(next(iter(stub.Predict(reqs[m], timeout=120).outputs.values())))
                    for m in ("fp32", "int8")}  # also warms each batch size's plans
            times = {m: [] for m in ("fp32", "int8")}
            if tf_fn is not None:
                times["tensorflow"] = []
                tf_fn(**{key: tf.constant(x)})
            for _ in range(args.rounds):
                for m in ("fp32", "int8"):
                    t = time.perf_counter()
                    stub.Predict(reqs[m], timeout=120)
                    times[m].append(time.perf_counter() - t)
                if tf_fn is not None:
                    t = time.perf_counter()
                    tf_fn(**{key: tf.constant(x)})
                    times["tensorflow"].append(time.perf_counter() - t)
            med = {m: float(np.median(v)) for m, v in times.items()}
            rel = float(np.abs(outs["int8"] - outs["fp32"]).max() / np.abs(outs["fp32"]).max())
            results[b] = {"median_ms": {m: 1e3 * v for m, v in med.items()},
                          "rows_per_s": {m: b / v for m, v in med.items()},
                          "int8_over_fp32": med["fp32"] / med["int8"], "int8_max_rel_error": rel}
            line = "  ".join(f"{m} {1e3 * v:7.1f} ms ({b / v:6.1f} rows/s)" for m, v in med.items())
            print(f"batch {b}: {line}  INT8/FP32 throughput {med['fp32'] / med['int8']:.2f}x  "
                  f"(INT8 max |error| / max |FP32| {rel:.3f})")
        print(json.dumps({"model": args.model, "rounds": args.rounds, "results": results}))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
