# SPDX-License-Identifier: Apache-2.0
"""A TF Serving gRPC client in Python, generated from deepflow's protos at run time.

Run by tests/serving/grpc_service_test.cpp (GrpcService.PythonClient) against a server
that serves "half" (half_plus_two-like: y = 0.5 x + offset) with versions 1 (offset 2)
and 2 (offset 3):

    /usr/bin/python3 grpc_client.py --proto_dir proto/ 127.0.0.1:8500

It uses only what a TF Serving client uses: the generated *_pb2 / *_pb2_grpc modules and
the PredictionService / ModelService stubs. Exits 1 with a message on the first mismatch.
"""
import argparse
import glob
import importlib
import os
import subprocess
import sys
import tempfile

# TensorFlow's messages (proto/tensorflow/, imported as "tensorflow/xxx.proto": the modules
# are tensorflow.xxx_pb2 under out_dir) and TF Serving's.
PROTOS = ["tensorflow/*.proto", "example.proto", "serving_config.proto", "serving_apis.proto"]


def generate(proto_dir, out_dir):
    files = sorted(f for p in PROTOS for f in glob.glob(os.path.join(proto_dir, p)))
    subprocess.run(["protoc", "--python_out=" + out_dir, "--grpc_python_out=" + out_dir,
                    "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin", "-I", proto_dir] + files,
                   check=True)
    sys.path.insert(0, out_dir)


def check(what, got, want):
    if got != want:
        sys.exit("grpc_client.py: %s: got %r, want %r" % (what, got, want))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--proto_dir", required=True)
    parser.add_argument("address")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out_dir:
        generate(args.proto_dir, out_dir)
        run(args.address)
    print("grpc_client.py: ok")


def run(address):
    import grpc
    apis = importlib.import_module("serving_apis_pb2")
    stubs = importlib.import_module("serving_apis_pb2_grpc")
    tensors = importlib.import_module("tensorflow.types_pb2")  # DT_FLOAT, ...
    examples = importlib.import_module("example_pb2")

    channel = grpc.insecure_channel(address)
    grpc.channel_ready_future(channel).result(timeout=10)
    predict = stubs.PredictionServiceStub(channel)
    models = stubs.ModelServiceStub(channel)

    # Predict, the way tf.make_tensor_proto fills a float tensor (float_val).
    request = apis.PredictRequest()
    request.model_spec.name = "half"
    x = request.inputs["x"]
    x.dtype = tensors.DT_FLOAT
    x.tensor_shape.dim.add().size = 3
    x.float_val.extend([1.0, 2.0, 5.0])
    response = predict.Predict(request, timeout=10)
    check("Predict model_spec.version", response.model_spec.version.value, 2)
    check("Predict model_spec.signature_name", response.model_spec.signature_name, "serving_default")
    y = response.outputs["y"]
    check("Predict y dtype", y.dtype, tensors.DT_FLOAT)
    check("Predict y shape", [d.size for d in y.tensor_shape.dim], [3])
    values = list(y.float_val)
    if y.tensor_content:  # what tf.make_ndarray reads too
        import struct
        values = list(struct.unpack("<3f", y.tensor_content))
    check("Predict y", values, [3.5, 4.0, 5.5])

    request.model_spec.version.value = 1
    response = predict.Predict(request, timeout=10)
    check("Predict version 1 model_spec.version", response.model_spec.version.value, 1)

    request.model_spec.name = "missing"
    try:
        predict.Predict(request, timeout=10)
        sys.exit("grpc_client.py: Predict on an unknown model succeeded")
    except grpc.RpcError as e:
        check("unknown model code", e.code(), grpc.StatusCode.NOT_FOUND)

    # GetModelMetadata: Any -> SignatureDefMap.
    meta_request = apis.GetModelMetadataRequest()
    meta_request.model_spec.name = "half"
    meta_request.metadata_field.append("signature_def")
    meta = predict.GetModelMetadata(meta_request, timeout=10)
    sig_map = apis.SignatureDefMap()
    if not meta.metadata["signature_def"].Unpack(sig_map):
        sys.exit("grpc_client.py: metadata is not a SignatureDefMap: " + meta.metadata["signature_def"].type_url)
    check("signature keys", sorted(sig_map.signature_def.keys()),
          ["classify_x_to_y", "regress_x_to_y", "serving_default"])
    x_info = sig_map.signature_def["serving_default"].inputs["x"]
    check("x dtype", x_info.dtype, tensors.DT_FLOAT)
    check("x shape", [d.size for d in x_info.tensor_shape.dim], [-1])

    # GetModelStatus.
    status_request = apis.GetModelStatusRequest()
    status_request.model_spec.name = "half"
    status = models.GetModelStatus(status_request, timeout=10)
    check("status versions", [(s.version, s.state, s.status.error_code) for s in status.model_version_status],
          [(2, apis.ModelVersionStatus.AVAILABLE, 0), (1, apis.ModelVersionStatus.AVAILABLE, 0)])

    # Classify with tf.Examples.
    classify = apis.ClassificationRequest()
    classify.model_spec.name = "half"
    classify.model_spec.signature_name = "classify_x_to_y"
    example = examples.Example()
    example.features.feature["x"].float_list.value.append(2.0)
    classify.input.example_list.examples.append(example)
    result = predict.Classify(classify, timeout=10)
    check("Classify scores", [c.score for c in result.result.classifications[0].classes], [4.0, -4.0])


if __name__ == "__main__":
    main()
