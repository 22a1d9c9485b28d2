# SPDX-License-Identifier: Apache-2.0
"""TF.js graph models for tests/tf/tfjs_model_test.cpp, made by TensorFlow 2.21 and the
tensorflowjs converter (4.22.0, installed without its dependencies by
scripts/install-venv.sh peers: bench/peers/requirements-nodeps.txt).

  .venv-peers/bin/python tests/tf/tf_tfjs_models.py OUT

Each model is saved as a TF SavedModel, then converted as the converter's command line
`tensorflowjs_converter --input_format=tf_saved_model` does it: plain, with
`--quantize_uint8 '*'` and with `--quantize_float16 '*'`. Writes, per model:
  OUT/<model>/<variant>/model.json + shards    variant: plain, uint8, float16
  OUT/<model>/case<k>.in.<key>.npy             inputs (two batch sizes)
  OUT/<model>/case<k>.tf.<key>.npy             TensorFlow's outputs of the SavedModel
  OUT/<model>/case<k>.<variant>.<key>.npy      TensorFlow running the converted graph, with
                                               the weights as TF.js's own reader decodes
                                               (dequantizes) them
and OUT/cases.json: {model: {inputs: [keys], outputs: [keys], cases: n, ops: [...]}}.
Models: cnn, mobilenet_block (tf-keras), dense (Keras 3), loop (a tf.Module's while loop,
converted with --control_flow_v2) and loop_v1 (the same with the converter's default, TF1
control flow).

The second set is the oracle for the quantized variants: the same weights in TensorFlow.
TF.js's own ops (FusedDepthwiseConv2dNative, Prelu, fused Prelu) have no TensorFlow
kernel, so the converted graph is run with each fused node split back into TensorFlow's
ops (Conv2D, BiasAdd, activation; Relu and Sub for PReLU), independently of deepflow's
importer.
"""
import json
import os
import sys
import types

import numpy as np
import tensorflow as tf
import keras
import tf_keras

# The converter's package imports jax (for convert_jax) and TensorFlow Decision Forests
# (whose wheels pin TensorFlow 2.19) at import time; converting a SavedModel uses
# neither. Keras, already imported, has made its own choice about jax, so empty modules
# stand in for them while the converter loads, and are gone after.
_ABSENT = ("tensorflow_decision_forests", "jax", "jax.experimental", "jax.experimental.jax2tf")
_added = [name for name in _ABSENT if name not in sys.modules]
for _name in _added:
    sys.modules[_name] = types.ModuleType(_name)
from tensorflowjs import read_weights  # noqa: E402
from tensorflowjs.converters import tf_saved_model_conversion_v2 as conversion  # noqa: E402
for _name in _added:
    del sys.modules[_name]

from google.protobuf import json_format  # noqa: E402
from tensorflow.core.framework import graph_pb2, node_def_pb2  # noqa: E402

VARIANTS = {"plain": None, "uint8": {"uint8": "*"}, "float16": {"float16": "*"}}
RNG = np.random.default_rng(19)


def randomize(model):
    """Random weights (a fresh model's zero biases and unit statistics fold away)."""
    for layer in model.layers:
        weights = [RNG.normal(0, 0.4, w.shape).astype(w.dtype) for w in layer.get_weights()]
        if "batch_normalization" in layer.name:
            weights[3] = np.abs(weights[3]) + 0.5  # moving variance
        layer.set_weights(weights)


def cnn():
    """Conv + BN + ReLU6, Conv + ReLU, Conv + BN + LeakyReLU, Conv + PReLU, Dense."""
    K = tf_keras
    inp = K.Input((12, 12, 3), name="image")
    x = K.layers.Conv2D(8, 3, padding="same")(inp)
    x = K.layers.BatchNormalization()(x)
    x = K.layers.ReLU(6.0)(x)
    x = K.layers.Conv2D(8, 3, padding="same", activation="relu")(x)
    x = K.layers.Conv2D(8, 3, strides=2, use_bias=False)(x)
    x = K.layers.BatchNormalization()(x)
    x = K.layers.LeakyReLU(0.1)(x)
    x = K.layers.Conv2D(6, 1)(x)
    x = K.layers.PReLU(shared_axes=[1, 2])(x)
    x = K.layers.GlobalAveragePooling2D()(x)
    out = K.layers.Dense(4, name="scores")(x)
    return K.Model(inp, out)


def mobilenet_block():
    """MobileNetV2's inverted residual: expand, depthwise + BN + ReLU6, project, add."""
    K = tf_keras
    inp = K.Input((10, 10, 4), name="image")
    x = K.layers.Conv2D(12, 1, use_bias=False)(inp)
    x = K.layers.BatchNormalization()(x)
    x = K.layers.ReLU(6.0)(x)
    x = K.layers.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
    x = K.layers.BatchNormalization()(x)
    x = K.layers.ReLU(6.0)(x)
    x = K.layers.Conv2D(4, 1, use_bias=False)(x)
    x = K.layers.BatchNormalization()(x)
    x = K.layers.Add()([inp, x])
    x = K.layers.DepthwiseConv2D(3, strides=2, padding="same")(x)
    x = K.layers.GlobalAveragePooling2D()(x)
    out = K.layers.Dense(5, activation="softmax", name="probs")(x)
    return K.Model(inp, out)


def dense():
    """A Keras 3 MLP (model.export: MatMul + AddV2)."""
    inp = keras.Input((10,), name="features")
    x = keras.layers.Dense(16, activation="relu")(inp)
    x = keras.layers.Dense(12, activation="tanh")(x)
    x = keras.layers.Dense(3)(x)
    return keras.Model(inp, x)


class Loop(tf.Module):
    """A data-dependent tf.while_loop: While and its body as a library function with
    --control_flow_v2, TF1 control flow without."""

    def __init__(self):
        super().__init__()
        self.w = tf.Variable(RNG.normal(0, 0.5, (6, 6)).astype(np.float32))
        self.b = tf.Variable(RNG.normal(0, 0.2, (6,)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.float32), tf.TensorSpec([], tf.int32)])
    def __call__(self, x, n):
        def body(i, h):
            return i + 1, tf.tanh(tf.matmul(h, self.w) + self.b)

        _, h = tf.while_loop(lambda i, h: i < n, body, [tf.constant(0), x])
        return {"y": h}


# --- TensorFlow running a converted model ---

BASE = {"_FusedConv2D": "Conv2D", "FusedDepthwiseConv2dNative": "DepthwiseConv2dNative",
        "_FusedDepthwiseConv2dNative": "DepthwiseConv2dNative", "_FusedMatMul": "MatMul"}
BASE_ATTRS = {
    "Conv2D": ("T", "strides", "padding", "explicit_paddings", "data_format", "dilations", "use_cudnn_on_gpu"),
    "DepthwiseConv2dNative": ("T", "strides", "padding", "explicit_paddings", "data_format", "dilations"),
    "MatMul": ("T", "transpose_a", "transpose_b"),
}
FLOAT = tf.float32.as_datatype_enum


def unfuse(graph):
    """The graph with TF.js's fused nodes as TensorFlow's ops (same node names at the end)."""
    out = graph_pb2.GraphDef()
    out.versions.CopyFrom(graph.versions)
    out.library.CopyFrom(graph.library)

    def add(op, name, inputs, **attrs):
        n = out.node.add(op=op, name=name, input=inputs)
        for k, v in attrs.items():
            if isinstance(v, bool):
                n.attr[k].b = v
            elif isinstance(v, float):
                n.attr[k].f = v
            elif isinstance(v, bytes):
                n.attr[k].s = v
            else:
                n.attr[k].type = v
        return name

    def prelu(name, x, alpha):
        pos = add("Relu", name + "/pos", [x], T=FLOAT)
        neg = add("Sub", name + "/neg", [x, pos], T=FLOAT)
        scaled = add("Mul", name + "/scaled", [alpha, neg], T=FLOAT)
        return add("AddV2", name + "/prelu", [pos, scaled], T=FLOAT)

    for n in graph.node:
        control = [i for i in n.input if i.startswith("^")]
        data = [i for i in n.input if not i.startswith("^")]
        if n.op == "Prelu":
            add("Identity", n.name, [prelu(n.name, data[0], data[1])] + control, T=FLOAT)
            continue
        if n.op not in BASE:
            out.node.add().CopyFrom(n)
            continue
        base = out.node.add(op=BASE[n.op], name=n.name + "/base", input=data[:2])
        for k in BASE_ATTRS[base.op]:
            if k in n.attr:
                base.attr[k].CopyFrom(n.attr[k])
        cur, args = base.name, data[2:]
        fmt = n.attr["data_format"].s if "data_format" in n.attr else b"NHWC"
        for i, op in enumerate(s.decode() for s in n.attr["fused_ops"].list.s):
            step = "%s/%d_%s" % (n.name, i, op)
            if op == "BiasAdd":
                cur = add("BiasAdd", step, [cur, args.pop(0)], T=FLOAT, data_format=fmt)
            elif op in ("Relu", "Relu6", "Elu", "Sigmoid", "Tanh"):
                cur = add(op, step, [cur], T=FLOAT)
            elif op == "LeakyRelu":
                alpha = n.attr["leakyrelu_alpha"].f if "leakyrelu_alpha" in n.attr else 0.2
                cur = add("LeakyRelu", step, [cur], T=FLOAT, alpha=alpha)
            elif op == "Prelu":
                cur = prelu(step, cur, args.pop(0))
            elif op == "FusedBatchNorm":
                eps = n.attr["epsilon"].f if "epsilon" in n.attr else 1e-4
                cur = add("FusedBatchNormV3", step, [cur] + args[:4], T=FLOAT, U=FLOAT, epsilon=eps,
                          is_training=False, data_format=fmt)
                args = args[4:]
            elif op != "NoOp":
                raise ValueError("%s: fused op %s" % (n.name, op))
        add("Identity", n.name, [cur] + control, T=FLOAT)
    for f in out.library.function:
        for n in f.node_def:
            if n.op in BASE or n.op == "Prelu":
                raise ValueError("a TF.js op in function %s: %s" % (f.signature.name, n.name))
    return out


def run_converted(js_dir, feeds):
    """TensorFlow's outputs of the converted graph (unfused), by signature output key."""
    with open(os.path.join(js_dir, "model.json")) as fh:
        model = json.load(fh)
    graph = graph_pb2.GraphDef()
    json_format.ParseDict(model["modelTopology"], graph, ignore_unknown_fields=True)
    weights = {w["name"]: w["data"] for w in read_weights.read_weights(model["weightsManifest"], js_dir, flatten=True)}

    def fill(nodes):
        for n in nodes:
            if n.op == "Const":
                n.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(weights[n.name]))

    fill(graph.node)
    for f in graph.library.function:
        fill(f.node_def)
    sig = model["signature"]
    with tf.Graph().as_default() as g:
        tf.graph_util.import_graph_def(unfuse(graph), name="")
        with tf.compat.v1.Session(graph=g) as session:
            fetches = {k: v["name"] for k, v in sig["outputs"].items()}
            return session.run(fetches, {sig["inputs"][k]["name"]: v for k, v in feeds.items()})


def write_model(out, name, saved, cases, control_flow_v2=False):
    root = os.path.join(out, name)
    sm = os.path.join(root, "saved_model")
    os.makedirs(root, exist_ok=True)
    saved(sm)
    fn = tf.saved_model.load(sm).signatures["serving_default"]
    keys = sorted(fn.structured_input_signature[1])
    if len(keys) == 1:  # the one input under the key the exporter gave it
        cases = [{keys[0]: next(iter(c.values()))} for c in cases]
    entry = {"cases": len(cases)}
    ops = set()
    for variant, quantization in VARIANTS.items():
        js = os.path.join(root, variant)
        conversion.convert_tf_saved_model(sm, js, quantization_dtype_map=quantization,
                                          control_flow_v2=control_flow_v2)
        with open(os.path.join(js, "model.json")) as fh:
            model = json.load(fh)
        sig = model["signature"]
        entry["inputs"], entry["outputs"] = list(sig["inputs"]), list(sig["outputs"])
        ops |= {n["op"] for n in model["modelTopology"]["node"]}
        for k, feeds in enumerate(cases):
            got = run_converted(js, feeds)
            for key, v in got.items():
                np.save(os.path.join(root, "case%d.%s.%s.npy" % (k, variant, key)), v)
    for k, feeds in enumerate(cases):
        want = fn(**{key: tf.constant(v) for key, v in feeds.items()})
        assert sorted(want) == sorted(entry["outputs"]), (name, list(want), entry["outputs"])
        for key, v in feeds.items():
            np.save(os.path.join(root, "case%d.in.%s.npy" % (k, key)), v)
        for key, v in want.items():
            np.save(os.path.join(root, "case%d.tf.%s.npy" % (k, key)), v.numpy())
    entry["ops"] = sorted(ops)
    return entry


def images(shape):
    return [{"image": RNG.normal(0, 1, (b,) + shape).astype(np.float32)} for b in (1, 3)]


def main():
    out = sys.argv[1]
    tf.keras.utils.set_random_seed(19)
    index = {}

    def keras_model(build, export=False):
        m = build()
        randomize(m)
        return (lambda d: m.export(d)) if export else (lambda d: tf.saved_model.save(m, d))

    index["cnn"] = write_model(out, "cnn", keras_model(cnn), images((12, 12, 3)))
    index["mobilenet_block"] = write_model(out, "mobilenet_block", keras_model(mobilenet_block), images((10, 10, 4)))
    index["dense"] = write_model(out, "dense", keras_model(dense, export=True),
                                 [{"features": RNG.normal(0, 1, (b, 10)).astype(np.float32)} for b in (2, 5)])
    loop = Loop()
    index["loop"] = write_model(out, "loop", lambda d: tf.saved_model.save(loop, d, signatures=loop.__call__),
                                [{"x": RNG.normal(0, 1, (b, 6)).astype(np.float32), "n": np.int32(n)}
                                 for b, n in ((2, 3), (4, 0))], control_flow_v2=True)
    # The converter's default: the loop lowered to TF1 control flow (Switch, Merge, Enter, ...).
    index["loop_v1"] = write_model(out, "loop_v1", lambda d: tf.saved_model.save(loop, d, signatures=loop.__call__),
                                   [{"x": RNG.normal(0, 1, (b, 6)).astype(np.float32), "n": np.int32(n)}
                                    for b, n in ((3, 2), (1, 5))])
    with open(os.path.join(out, "cases.json"), "w") as fh:
        json.dump(index, fh, indent=1)


if __name__ == "__main__":
    main()
