# SPDX-License-Identifier: Apache-2.0
"""The official TF Serving client (tensorflow-serving-api 2.21) against `deepflow serve`
on SavedModels that TensorFlow 2.21 writes; every answer must equal TensorFlow's own
`tf.saved_model.load(dir).signatures[...]` on the same inputs (1e-4 relative).

Run by tests/serving/tf_client_test.cpp in two steps (peers environment):

  .venv-peers/bin/python tf_serving_client.py write DIR     # DIR/{mlp,estimator,labelled,broken}/1
  .venv-peers/bin/python tf_serving_client.py check DIR 127.0.0.1:PORT [127.0.0.1:REST_PORT]

`write` makes a Keras 3 `model.export` MLP, a TF1-builder estimator-style model (classify
signature "serving_default" and "regress" on serialized tf.Examples, tests/tf/), a TF1
classifier whose classify signature also outputs string `classes`, and a corrupt
version. `check` expects the server to serve "mlp", "estimator" and "labelled" from DIR and
exits 1 with a message on the first mismatch. With a REST address it also sends a raw
binary predict body (docs/serving.md) and loads and unloads a model through REST."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tf"))
from tf_saved_models import write_estimator_style  # noqa: E402


def fail(message):
    sys.exit("tf_serving_client.py: " + message)


def close(what, got, want):
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-4, atol=1e-6):
        fail("%s: got %r, want %r (TensorFlow)" % (what, got, want))


def equal(what, got, want):
    if got != want:
        fail("%s: got %r, want %r" % (what, got, want))


def write(out):
    import keras
    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((4,), name="features"), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(3, activation="softmax")])
    model.export(os.path.join(out, "mlp", "1"), verbose=False)
    write_estimator_style(os.path.join(out, "estimator", "1"))
    write_labelled(os.path.join(out, "labelled", "1"))
    os.makedirs(os.path.join(out, "broken", "1"), exist_ok=True)
    with open(os.path.join(out, "broken", "1", "saved_model.pb"), "wb") as f:
        f.write(b"\x0a\xff\xff not a SavedModel")


def write_labelled(d):
    """A TF1 classify signature with `scores` and string `classes` (the labels of each
    score, as canned estimators output them)."""
    v1 = tf.compat.v1
    g = tf.Graph()
    with g.as_default():
        serialized = v1.placeholder(tf.string, [None], name="input_example_tensor")
        f = tf.io.parse_example(serialized, {"x": tf.io.FixedLenFeature([3], tf.float32)})
        w = v1.get_variable("w", initializer=tf.constant([[0.5, -1.0, 0.1], [1.5, 0.25, -0.3], [-2.0, 1.0, 0.7]]))
        scores = tf.nn.softmax(tf.matmul(f["x"], w))
        # Each row's labels, in score order (a Gather, since Tile by the batch size is
        # not imported yet).
        classes = tf.gather(tf.constant(["cat", "dog", "eel"]), tf.zeros_like(tf.cast(scores, tf.int32)) + tf.range(3))
        with v1.Session(graph=g) as sess:
            sess.run(v1.global_variables_initializer())
            b = v1.saved_model.Builder(d)
            u = v1.saved_model.utils.build_tensor_info
            sig = v1.saved_model.signature_def_utils.build_signature_def(
                {"inputs": u(serialized)}, {"scores": u(scores), "classes": u(classes)}, "tensorflow/serving/classify")
            b.add_meta_graph_and_variables(sess, ["serve"], signature_def_map={"serving_default": sig})
            b.save()


def examples(n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        feats = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=rng.standard_normal(3).tolist()))}
        if i % 2 == 0:
            feats["k"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[3]))
        out.append(tf.train.Example(features=tf.train.Features(feature=feats)))
    return out


def check(root, address, rest=None):
    import grpc
    from tensorflow_serving.apis import (classification_pb2, get_model_metadata_pb2, get_model_status_pb2,
                                         model_management_pb2, model_service_pb2_grpc, predict_pb2,
                                         prediction_service_pb2_grpc, regression_pb2)
    from tensorflow_serving.config import model_server_config_pb2

    channel = grpc.insecure_channel(address)
    grpc.channel_ready_future(channel).result(timeout=30)
    predict = prediction_service_pb2_grpc.PredictionServiceStub(channel)
    models = model_service_pb2_grpc.ModelServiceStub(channel)
    mlp = tf.saved_model.load(os.path.join(root, "mlp", "1"))
    est = tf.saved_model.load(os.path.join(root, "estimator", "1"))

    def run_predict(name, loaded, key, inputs):
        request = predict_pb2.PredictRequest()
        request.model_spec.name = name
        request.model_spec.signature_name = key
        for k, v in inputs.items():
            request.inputs[k].CopyFrom(tf.make_tensor_proto(v))
        response = predict.Predict(request, timeout=30)
        want = loaded.signatures[key](**{k: tf.constant(v) for k, v in inputs.items()})
        equal("%s Predict output keys" % name, sorted(response.outputs), sorted(want))
        for k in want:
            close("%s Predict %s" % (name, k), tf.make_ndarray(response.outputs[k]), want[k].numpy())
        equal("%s Predict model_spec" % name, (response.model_spec.name, response.model_spec.version.value,
                                               response.model_spec.signature_name), (name, 1, key))

    # Predict on the Keras export, two batch sizes.
    (mlp_input,) = mlp.signatures["serving_default"].structured_input_signature[1]
    for batch in (1, 5):
        x = np.random.default_rng(batch).standard_normal((batch, 4)).astype(np.float32)
        run_predict("mlp", mlp, "serving_default", {mlp_input: x})
    # Predict on the estimator's classify signature with serialized examples.
    ex = examples(4, 7)
    run_predict("estimator", est, "serving_default",
                {"inputs": np.array([e.SerializeToString() for e in ex], dtype=object)})
    serialized = tf.constant([e.SerializeToString() for e in ex])

    # Classify: scores in TF's order, no classes output so labels are empty.
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name = "estimator"
    request.input.example_list.examples.extend(ex)
    response = predict.Classify(request, timeout=30)
    want = est.signatures["serving_default"](inputs=serialized)["scores"].numpy()
    got = [[c.score for c in row.classes] for row in response.result.classifications]
    close("Classify scores", got, want)
    equal("Classify labels", {c.label for row in response.result.classifications for c in row.classes}, {""})
    equal("Classify signature", response.model_spec.signature_name, "serving_default")

    # Classify with string classes: labels and scores as TensorFlow computes them.
    labelled = tf.saved_model.load(os.path.join(root, "labelled", "1"))
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name = "labelled"
    request.input.example_list.examples.extend(ex)
    response = predict.Classify(request, timeout=30)
    want = labelled.signatures["serving_default"](inputs=serialized)
    close("Classify (labelled) scores", [[c.score for c in row.classes] for row in response.result.classifications],
          want["scores"].numpy())
    equal("Classify (labelled) labels", [[c.label for c in row.classes] for row in response.result.classifications],
          [[c.decode() for c in row] for row in want["classes"].numpy()])

    # Classify with a context shared by every example (ExampleListWithContext).
    context = tf.train.Example(features=tf.train.Features(feature={
        "k": tf.train.Feature(int64_list=tf.train.Int64List(value=[4]))}))
    bare = [tf.train.Example(features=tf.train.Features(feature={"x": e.features.feature["x"]})) for e in ex]
    request = classification_pb2.ClassificationRequest()
    request.model_spec.name = "estimator"
    request.input.example_list_with_context.examples.extend(bare)
    request.input.example_list_with_context.context.CopyFrom(context)
    response = predict.Classify(request, timeout=30)
    merged = []
    for e in bare:
        m = tf.train.Example()
        m.CopyFrom(e)
        m.MergeFrom(context)
        merged.append(m.SerializeToString())
    want = est.signatures["serving_default"](inputs=tf.constant(merged))["scores"].numpy()
    close("Classify with context", [[c.score for c in row.classes] for row in response.result.classifications], want)

    # Regress.
    request = regression_pb2.RegressionRequest()
    request.model_spec.name = "estimator"
    request.model_spec.signature_name = "regress"
    request.input.example_list.examples.extend(ex)
    response = predict.Regress(request, timeout=30)
    want = est.signatures["regress"](inputs=serialized)["outputs"].numpy()[:, 0]
    close("Regress", [r.value for r in response.result.regressions], want)

    # GetModelMetadata: the signatures TensorFlow sees, with their inputs and dtypes.
    for name, loaded in (("mlp", mlp), ("estimator", est)):
        request = get_model_metadata_pb2.GetModelMetadataRequest()
        request.model_spec.name = name
        request.metadata_field.append("signature_def")
        response = predict.GetModelMetadata(request, timeout=30)
        sigs = get_model_metadata_pb2.SignatureDefMap()
        if not response.metadata["signature_def"].Unpack(sigs):
            fail("metadata of %s is not a SignatureDefMap" % name)
        equal(name + " signature keys", sorted(sigs.signature_def), sorted(loaded.signatures.keys()))
        for key, fn in loaded.signatures.items():
            specs = fn.structured_input_signature[1]
            got = {k: v.dtype for k, v in sigs.signature_def[key].inputs.items()}
            equal("%s %s inputs" % (name, key), got, {k: s.dtype.as_datatype_enum for k, s in specs.items()})
            equal("%s %s outputs" % (name, key), sorted(sigs.signature_def[key].outputs), sorted(fn.structured_outputs))

    def status(name):
        request = get_model_status_pb2.GetModelStatusRequest()
        request.model_spec.name = name
        return [(s.version, s.state, s.status.error_code)
                for s in models.GetModelStatus(request, timeout=30).model_version_status]

    available = get_model_status_pb2.ModelVersionStatus.AVAILABLE
    equal("mlp status", status("mlp"), [(1, available, 0)])
    equal("estimator status", status("estimator"), [(1, available, 0)])

    # HandleReloadConfigRequest: add a model (the same export under a second name).
    def reload(entries):
        request = model_management_pb2.ReloadConfigRequest()
        config = model_server_config_pb2.ModelServerConfig()
        for name, path in entries:
            c = config.model_config_list.config.add()
            c.name, c.base_path, c.model_platform = name, os.path.join(root, path), "tensorflow"
        request.config.CopyFrom(config)
        return models.HandleReloadConfigRequest(request, timeout=60)

    base = [("mlp", "mlp"), ("estimator", "estimator"), ("labelled", "labelled")]
    response = reload(base + [("mlp_copy", "mlp")])
    equal("reload (add) status", response.status.error_code, 0)
    x = np.ones((2, 4), np.float32)
    run_predict("mlp_copy", mlp, "serving_default", {mlp_input: x})
    # A model that fails to load: an error, and every other model keeps serving.
    try:
        response = reload(base + [("mlp_copy", "mlp"), ("broken", "broken")])
        equal("reload with a corrupt model: error_code", response.status.error_code != 0, True)
    except grpc.RpcError as e:
        if "broken" not in e.details():
            fail("reload with a corrupt model: the error does not name it: " + e.details())
    equal("broken status state", status("broken")[0][1], get_model_status_pb2.ModelVersionStatus.END)
    run_predict("mlp", mlp, "serving_default", {mlp_input: x})
    # Remove mlp_copy and broken: NOT_FOUND for mlp_copy, the others still serve.
    response = reload(base)
    equal("reload (remove) status", response.status.error_code, 0)
    try:
        run_predict("mlp_copy", mlp, "serving_default", {mlp_input: x})
        fail("Predict on a removed model succeeded")
    except grpc.RpcError as e:
        equal("removed model code", e.code(), grpc.StatusCode.NOT_FOUND)
    run_predict("mlp", mlp, "serving_default", {mlp_input: x})
    if rest:
        check_rest(root, rest, mlp, mlp_input, est)
    print("tf_serving_client.py: ok")


def check_rest(root, rest, mlp, mlp_input, est):
    """REST classify/regress on the estimator, binary tensor bodies and :load / :unload,
    with urllib only."""
    import json
    import urllib.error
    import urllib.request

    def post(path, body, headers):
        request = urllib.request.Request("http://%s%s" % (rest, path), data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                return r.status, r.headers.get("Content-Type"), r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type"), e.read()

    # Classify and regress with JSON examples: floats become float_list, ints int64_list.
    rows = [{"x": [0.25, -1.5, 0.75], "k": 3}, {"x": [1.25, 0.5, -0.25]}]
    serialized = []
    for r in rows:
        feats = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=r["x"]))}
        if "k" in r:
            feats["k"] = tf.train.Feature(int64_list=tf.train.Int64List(value=[r["k"]]))
        serialized.append(tf.train.Example(features=tf.train.Features(feature=feats)).SerializeToString())
    json_headers = {"Content-Type": "application/json"}
    status, _, reply = post("/v1/models/estimator:classify", json.dumps({"examples": rows}).encode(), json_headers)
    equal("REST classify status", status, 200)
    want = est.signatures["serving_default"](inputs=tf.constant(serialized))["scores"].numpy()
    close("REST classify", [[score for _, score in r] for r in json.loads(reply)["results"]], want)
    status, _, reply = post("/v1/models/estimator:regress",
                            json.dumps({"signature_name": "regress", "examples": rows}).encode(), json_headers)
    equal("REST regress status", status, 200)
    close("REST regress", json.loads(reply)["results"],
          est.signatures["regress"](inputs=tf.constant(serialized))["outputs"].numpy()[:, 0])

    x = np.random.default_rng(11).standard_normal((6, 4)).astype("<f4")
    header = {"inputs": {mlp_input: {"dtype": "DT_FLOAT", "shape": list(x.shape), "offset": 0}}}
    body = json.dumps(header).encode() + b"\n" + x.tobytes()
    binary = {"Content-Type": "application/octet-stream", "Accept": "application/octet-stream"}
    status, content_type, reply = post("/v1/models/mlp:predict", body, binary)
    equal("binary predict status", (status, content_type), (200, "application/octet-stream"))
    line, payload = reply.split(b"\n", 1)
    outputs = json.loads(line)["outputs"]
    want = mlp.signatures["serving_default"](**{mlp_input: tf.constant(x)})
    equal("binary predict outputs", sorted(outputs), sorted(want))
    for k, spec in outputs.items():
        got = np.frombuffer(payload, "<f4", count=int(np.prod(spec["shape"])), offset=spec["offset"])
        close("binary predict " + k, got.reshape(spec["shape"]), want[k].numpy())
    status, _, reply = post("/v1/models/mlp:predict", body[:-3], binary)
    equal("truncated binary body status", status, 400)
    if b"[rest binary]" not in reply:
        fail("truncated binary body: " + reply.decode())

    load = json.dumps({"base_path": os.path.join(root, "mlp")}).encode()
    status, _, reply = post("/v1/models/mlp_rest:load", load, {"Content-Type": "application/json"})
    equal("REST :load status", status, 200)
    instances = json.dumps({"instances": x[:2].tolist()}).encode()
    status, _, reply = post("/v1/models/mlp_rest:predict", instances, {"Content-Type": "application/json"})
    equal("predict on the REST-loaded model", status, 200)
    close("predict on the REST-loaded model", json.loads(reply)["predictions"], want[sorted(want)[0]].numpy()[:2])
    status, _, _ = post("/v1/models/mlp_rest:unload", b"", {})
    equal("REST :unload status", status, 200)
    status, _, _ = post("/v1/models/mlp_rest:predict", instances, {"Content-Type": "application/json"})
    equal("predict after :unload", status, 404)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "write":
        write(sys.argv[2])
    elif len(sys.argv) in (4, 5) and sys.argv[1] == "check":
        check(*sys.argv[2:])
    else:
        fail("usage: tf_serving_client.py write DIR | check DIR HOST:PORT [HOST:REST_PORT]")
