# SPDX-License-Identifier: Apache-2.0
"""The TensorFlow side of tests/lite/*_test.cpp: .tflite files written by TensorFlow 2.21's
converter and LiteRT's answers on fixed inputs.

  lite_models.py OUT   writes OUT/<case>.tflite and, per run, OUT/<case>.<run>.in<i>.bin and
                       .out<i>.bin (raw little-endian arrays), and OUT/cases.json: {case:
                       {file, runs: [{batch, inputs: [{name, index, dtype, shape, file}],
                       outputs: [...]}]}}; LiteRT runs with its reference kernels
                       (OpResolverType.BUILTIN_REF, lite.md 2.4).

Cases: small Keras models (float32, float16 and dynamic-range int8 weights) at two batch
sizes, MobileNetV2, full-integer int8 models (int8 and float interfaces) of the ops with int8
kernels, a tf.function with tf.cond / tf.while_loop (IF / WHILE), one-op models of every
conv, depthwise, transpose-conv, FC, batch-matmul and pool variant (and "hyb_*" dynamic-range
ones of each hybrid kernel's paths), and the real files packages ship (data/tflite_files,
scripts/fetch-test-deps.sh lite) as "real_<name>", whose "file" is their absolute path.

  .venv-peers/bin/python tests/lite/lite_models.py OUT"""
import glob
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from ai_edge_litert import interpreter as litert  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def keras_models():
    """name -> (model, batches): small Keras 3 models that cover the float builtin ops."""
    keras.utils.set_random_seed(11)
    out = {}
    # Widths past 1024 weights where the dynamic-range mode should quantize them (smaller
    # weights stay float there): the first two Dense layers run hybrid in that mode.
    out["mlp"] = (keras.Sequential([keras.Input((12,)), keras.layers.Dense(96, activation="relu"),
                                    keras.layers.Dense(32, activation="tanh"),
                                    keras.layers.Dense(4, activation="softmax")]), [1, 3])

    img = keras.Input((20, 20, 3))
    x = keras.layers.Conv2D(16, 3, padding="same", activation="relu")(img)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.MaxPooling2D()(x)
    # Hybrid in the dynamic-range mode: this depthwise (1152 weights), the strided and the
    # dilated convolutions.
    x = keras.layers.DepthwiseConv2D(3, padding="same", depth_multiplier=8, activation="relu6")(x)
    x = keras.layers.Conv2D(12, 3, strides=2, activation="relu")(x)
    x = keras.layers.Conv2D(12, 1)(x)
    x = keras.layers.AveragePooling2D(2, padding="same")(x)
    x = keras.layers.Conv2D(16, 3, dilation_rate=2, padding="same")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    out["cnn"] = (keras.Model(img, keras.layers.Dense(5)(x)), [1, 2])

    # Broadcasting arithmetic, activations and data movement.
    a = keras.Input((6, 6, 4))
    h = keras.layers.Conv2D(4, 1)(a)
    se = keras.layers.GlobalAveragePooling2D(keepdims=True)(h)
    se = keras.layers.Dense(4, activation="sigmoid")(se)
    h = keras.layers.Multiply()([h, se])                           # MUL with [N,1,1,C]
    h = keras.layers.Activation("hard_swish")(h)
    h = keras.layers.LeakyReLU(negative_slope=0.1)(h)
    h = keras.layers.ZeroPadding2D(((1, 0), (0, 2)))(h)            # PAD
    h = keras.layers.UpSampling2D(2, interpolation="bilinear")(h)  # RESIZE_BILINEAR
    h2 = keras.layers.Conv2D(3, 3, strides=2, padding="same", activation="swish")(h)
    h = keras.layers.Concatenate()([keras.layers.MaxPooling2D(2, padding="same")(h), h2])
    h = keras.layers.Reshape((-1, 7))(h)
    h = keras.layers.Permute((2, 1))(h)                           # TRANSPOSE
    h = keras.layers.Lambda(lambda t: t[:, 1:6, ::2] - tf.reduce_mean(t, axis=-1, keepdims=True)[:, 1:6])(h)
    h = keras.layers.Flatten()(h)
    h = keras.layers.Dense(3, activation="gelu")(h)
    out["mixed"] = (keras.Model(a, h), [1, 2])

    # A Transformer encoder block: BATCH_MATMUL, SOFTMAX, LayerNormalization's ops.
    # (32-wide: its projections are 1024 weights and more, hybrid FULLY_CONNECTEDs with
    # keep_num_dims in the dynamic-range mode.)
    t = keras.Input((5, 32))
    att = keras.layers.MultiHeadAttention(num_heads=2, key_dim=16)(t, t)
    y = keras.layers.LayerNormalization()(t + att)
    ff = keras.layers.Dense(64, activation="relu")(y)
    y = keras.layers.LayerNormalization()(y + keras.layers.Dense(32)(ff))
    out["transformer"] = (keras.Model(t, y), [1, 2])

    mob = keras.applications.MobileNetV2(weights=None, input_shape=(96, 96, 3), alpha=0.35)
    out["mobilenet_v2_96"] = (mob, [1, 2])
    return out


def convert(fn_or_model, mode):
    if isinstance(fn_or_model, keras.Model):
        conv = tf.lite.TFLiteConverter.from_keras_model(fn_or_model)
    else:
        conv = tf.lite.TFLiteConverter.from_concrete_functions([fn_or_model.get_concrete_function()])
    if mode == "float16":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.target_spec.supported_types = [tf.float16]
    elif mode == "dynamic_range":
        # int8 weights (those of 1024 elements or more), float activations: hybrid kernels.
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    return conv.convert()


@tf.function(input_signature=[tf.TensorSpec((None, 3), tf.float32)])
def control_flow(x):
    """IF and WHILE subgraphs: a data-dependent branch and loop."""
    y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
    i = tf.constant(0)
    _, y = tf.while_loop(lambda i, v: tf.logical_and(i < 4, tf.reduce_max(v) < 50.0),
                         lambda i, v: (i + 1, v * 1.5 + 1.0), (i, y))
    return y


def run_litert(content, arrays):
    interp = litert.Interpreter(model_content=content,
                                experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
    for d, a in zip(interp.get_input_details(), arrays):
        interp.resize_tensor_input(d["index"], a.shape)
    interp.allocate_tensors()
    for d, a in zip(interp.get_input_details(), arrays):
        interp.set_tensor(d["index"], a)
    interp.invoke()
    return interp, [interp.get_tensor(d["index"]) for d in interp.get_output_details()]


def record_run(out, case, tag, content, arrays):
    """Runs LiteRT on arrays and writes both sides' files: one entry of a case's runs."""
    interp, outputs = run_litert(content, arrays)
    files = {"inputs": [], "outputs": []}
    for kind, details, values in (("in", interp.get_input_details(), arrays),
                                  ("out", interp.get_output_details(), outputs)):
        for i, (d, v) in enumerate(zip(details, values)):
            fname = f"{case}.{tag}.{kind}{i}.bin"
            np.ascontiguousarray(v).tofile(os.path.join(out, fname))
            files["inputs" if kind == "in" else "outputs"].append(
                {"name": d["name"], "index": int(d["index"]), "dtype": str(v.dtype), "shape": list(v.shape),
                 "file": fname})
    return files


def random_inputs(rng, content, shape_of):
    probe = litert.Interpreter(model_content=content)
    out = []
    for d in probe.get_input_details():
        if d["dtype"] == np.int8:
            out.append(rng.integers(-128, 128, shape_of(d)).astype(np.int8))
        else:
            out.append(rng.standard_normal(shape_of(d)).astype(d["dtype"]))
    return out


def int8_models():
    """name -> (model, input shape): Keras models of the ops with int8 kernels, for full
    integer quantization."""
    keras.utils.set_random_seed(13)
    L = keras.layers
    img = keras.Input((16, 16, 3))
    x = L.Conv2D(8, 3, padding="same", activation="relu")(img)
    x = L.BatchNormalization(beta_initializer="random_normal", gamma_initializer="random_uniform")(x)  # MUL, ADD
    x = L.MaxPooling2D()(x)
    r = L.DepthwiseConv2D(3, padding="same", activation="relu6")(x)
    x = L.Add()([x, L.Conv2D(8, 1)(r)])
    x = L.Conv2D(12, 3, strides=2, activation="relu")(x)
    x = L.AveragePooling2D(2, padding="same")(x)
    x = L.Dense(6)(L.Flatten()(x))
    cnn = keras.Model(img, L.Dense(4)(x))
    mlp = keras.Sequential([keras.Input((20,)), L.Dense(32, activation="relu"), L.Dense(16, activation="relu6"),
                            L.Dense(12, activation="tanh"), L.Dense(8, activation="sigmoid"),
                            L.Dense(5, activation="softmax")])
    g = keras.Input((12, 12, 4))
    h = L.Conv2D(16, 3, strides=2, padding="same", activation="relu6")(g)
    h = L.Add()([h, L.DepthwiseConv2D(3, padding="same")(h)])
    gap = keras.Model(g, L.Dense(6, activation="softmax")(L.GlobalAveragePooling2D()(h)))  # MEAN [1, 2]
    # Depthwise convolutions over blocks of 32 channels and their tails (the fast int8
    # kernel's interior and border paths), strides, a 5x5 window and a dilation.
    d = keras.Input((19, 21, 40))
    e = L.DepthwiseConv2D(3, padding="same", activation="relu6")(d)
    e = L.Conv2D(72, 1, activation="relu")(e)
    e = L.DepthwiseConv2D(3, strides=2, padding="same")(e)
    e = L.DepthwiseConv2D(5, padding="valid", activation="relu")(e)
    e = L.DepthwiseConv2D(3, dilation_rate=2, padding="same")(e)  # SPACE_TO_BATCH_ND's zero point
    e = L.DepthwiseConv2D(3, depth_multiplier=2, padding="same")(e)  # the direct int8 loops
    e = L.Conv2D(48, 1)(e)
    dw = keras.Model(d, L.Dense(7)(L.GlobalAveragePooling2D()(e)))
    # HARD_SWISH, CONCATENATION, SUB, SQUARED_DIFFERENCE, BATCH_MATMUL of two activations,
    # MEAN over the last axis (MobileNetV3's, DenseNet's and attention's int8 ops).
    s = keras.Input((6, 6, 4))
    u = L.Conv2D(8, 3, padding="same", activation="hard_swish")(s)
    u = L.Concatenate()([u, L.Conv2D(4, 1)(s)])
    seq = L.Reshape((36, 12))(u)
    q, k = L.Dense(8)(seq), L.Dense(8)(seq)
    att = L.Softmax()(L.Lambda(lambda t: tf.matmul(t[0], t[1], transpose_b=True))([q, k]))
    ctx_ = L.Lambda(lambda t: tf.matmul(t[0], t[1]))([att, L.Dense(8)(seq)])
    diff = L.Subtract()([ctx_, q])
    sq = L.Lambda(lambda t: tf.math.squared_difference(t[0], t[1]))([ctx_, k])
    mixed = L.Concatenate()([diff, sq])
    mixed = L.Lambda(lambda t: tf.reduce_mean(t, axis=-1, keepdims=True))(mixed) + mixed
    mix = keras.Model(s, L.Dense(5)(L.Flatten()(mixed)))
    # A transformer block: attention, layer norms (MEAN, SQUARED_DIFFERENCE, RSQRT) and GELU.
    t = keras.Input((12, 16))
    a = L.MultiHeadAttention(2, 8)(t, t)
    h = L.LayerNormalization()(t + a)
    h = L.LayerNormalization()(h + L.Dense(16)(L.Dense(32, activation="gelu")(h)))
    attn = keras.Model(t, L.Dense(4)(L.GlobalAveragePooling1D()(h)))
    return {"cnn": (cnn, [1, 16, 16, 3]), "mlp": (mlp, [1, 20]), "gap": (gap, [1, 12, 12, 4]),
            "dw": (dw, [1, 19, 21, 40]), "mix": (mix, [1, 6, 6, 4]), "attn": (attn, [1, 12, 16]),
            # Untrained: tiny scales deep inside reach HARD_SWISH's and MEAN's rounding corners.
            "mnv3": (keras.applications.MobileNetV3Small(weights=None, input_shape=(64, 64, 3), classifier_activation=None),
                     [1, 64, 64, 3])}


def convert_int8(model, shape, int8_io):
    """Full integer quantization (TFLite's int8 spec) calibrated on 16 fixed samples."""
    rng = np.random.default_rng(21)
    samples = [rng.standard_normal(shape).astype(np.float32) for _ in range(16)]
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = lambda: ([s] for s in samples)
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    if int8_io:
        conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.int8
    return conv.convert()


def one_op_models():
    """name -> content: one-op models of each conv / FC / matmul / pool variant (weights
    drawn at scale 0.5, so every path sees values of both signs)."""
    L = keras.layers
    rng = np.random.default_rng(1)

    def model(shape, *layers):
        x = keras.Input(shape[1:], batch_size=shape[0])
        y = x
        for layer in layers:
            y = layer(y)
        m = keras.Model(x, y)
        for w in m.weights:
            w.assign(rng.standard_normal(w.shape).astype(np.float32) * 0.5)
        return tf.lite.TFLiteConverter.from_keras_model(m).convert()

    def fn(*specs):
        def wrap(f):
            g = tf.function(f, input_signature=[tf.TensorSpec(s, tf.float32) for s in specs])
            return tf.lite.TFLiteConverter.from_concrete_functions([g.get_concrete_function()]).convert()
        return wrap

    w = tf.constant(rng.standard_normal([3, 16, 10]).astype(np.float32))
    return {
        "conv3x3_same_relu": model([2, 13, 11, 5], L.Conv2D(7, 3, padding="same", activation="relu")),
        "conv1x1": model([2, 9, 10, 20], L.Conv2D(33, 1)),
        "conv1x1_s2": model([1, 9, 10, 20], L.Conv2D(17, 1, strides=2)),
        "conv3x3_s2_valid": model([1, 17, 16, 6], L.Conv2D(19, 3, strides=2, activation="relu6")),
        "conv_dilated": model([1, 15, 14, 4], L.Conv2D(6, 3, dilation_rate=2, padding="same")),
        "conv_5x3_s21": model([1, 12, 15, 3], L.Conv2D(8, (5, 3), strides=(2, 1), padding="same")),
        "conv_grouped": model([1, 8, 8, 8], L.Conv2D(12, 3, groups=2, padding="same")),
        "conv_grouped_1x1": model([2, 5, 6, 8], L.Conv2D(12, 1, groups=4, activation="relu")),
        "conv_whole_image": model([3, 5, 4, 6], L.Conv2D(10, (5, 4))),
        "conv_big": model([1, 56, 56, 32], L.Conv2D(64, 3, padding="same", activation="relu")),
        "dw3x3_relu6": model([2, 11, 12, 20], L.DepthwiseConv2D(3, padding="same", activation="relu6")),
        "dw_mult2_s2": model([1, 12, 11, 5], L.DepthwiseConv2D(3, strides=2, depth_multiplier=2, padding="same")),
        "dw_mult3_valid": model([1, 9, 9, 3], L.DepthwiseConv2D(4, depth_multiplier=3)),
        "dw_dilated": model([1, 14, 13, 17], L.DepthwiseConv2D(3, dilation_rate=2, padding="same")),
        "tconv3_s2_same": model([2, 5, 6, 7], L.Conv2DTranspose(9, 3, strides=2, padding="same")),
        "tconv4_s2_valid": model([1, 5, 4, 3], L.Conv2DTranspose(5, 4, strides=2, padding="valid")),
        "tconv2_s3": model([1, 4, 5, 8], L.Conv2DTranspose(4, 2, strides=3, padding="valid", use_bias=False)),
        "dense_b1": model([1, 300], L.Dense(257)),
        "dense_rank3": model([2, 5, 24], L.Dense(13)),
        "dense_nobias": model([9, 33], L.Dense(21, use_bias=False)),
        "avgpool3_s2_same": model([2, 11, 10, 6], L.AveragePooling2D(3, strides=2, padding="same")),
        "maxpool3_s1_same": model([1, 7, 7, 4], L.MaxPooling2D(3, strides=1, padding="same")),
        "bmm": fn([2, 3, 5, 7], [2, 3, 7, 4])(lambda x, y: tf.matmul(x, y)),
        "bmm_bcast_adjy": fn([2, 1, 6, 7], [3, 4, 7])(lambda x, y: tf.matmul(x, y, transpose_b=True)),
        "bmm_adjx": fn([4, 9, 3], [4, 9, 20])(lambda x, y: tf.matmul(x, y, transpose_a=True)),
        "bmm_const": fn([3, 12, 16])(lambda x: tf.matmul(x, w)),
        "conv_var_filter": fn([1, 7, 6, 4], [3, 3, 4, 5])(lambda x, f: tf.nn.conv2d(x, f, 1, "SAME")),
        "fc_var_b9": fn([9, 40], [50, 40])(lambda x, f: tf.matmul(x, f, transpose_b=True)),
    }


# The Keras models also converted in the dynamic-range mode ("mixed" has no weight large
# enough to quantize).
DYNAMIC_RANGE_MODELS = ("mlp", "cnn", "transformer", "mobilenet_v2_96")


def hybrid_models():
    """name -> content: one-op dynamic-range models (int8 weights, float activations) of each
    hybrid conv / depthwise / FC / batch-matmul path, every weight of 1024 elements or more;
    and files rewritten into the forms TF 2.21's converter no longer writes: symmetric input
    quantization (asymmetric_quantize_inputs off: FC v3, BATCH_MATMUL) and per-tensor weights
    (FC; CONV_2D v2, whose inputs LiteRT then quantizes symmetrically)."""
    L = keras.layers
    rng = np.random.default_rng(2)

    def model(shape, *layers):
        x = keras.Input(shape[1:], batch_size=shape[0])
        y = x
        for layer in layers:
            y = layer(y)
        m = keras.Model(x, y)
        for w in m.weights:
            w.assign(rng.standard_normal(w.shape).astype(np.float32) * 0.5)
        return convert(m, "dynamic_range")

    def fn(*specs):
        def wrap(f):
            g = tf.function(f, input_signature=[tf.TensorSpec(s, tf.float32) for s in specs])
            return convert(g, "dynamic_range")
        return wrap

    w3 = tf.constant(rng.standard_normal([3, 64, 32]).astype(np.float32))
    w_adj = tf.constant(rng.standard_normal([2, 24, 48]).astype(np.float32))
    out = {
        "hyb_conv3x3_same_relu": model([2, 13, 11, 16], L.Conv2D(24, 3, padding="same", activation="relu")),
        "hyb_conv1x1": model([2, 9, 10, 40], L.Conv2D(33, 1)),
        "hyb_conv3x3_s2_valid": model([1, 17, 16, 12], L.Conv2D(19, 3, strides=2, activation="relu6")),
        "hyb_conv_dilated": model([1, 15, 14, 12], L.Conv2D(16, 3, dilation_rate=2, padding="same")),
        "hyb_conv_5x3_s21": model([1, 12, 15, 8], L.Conv2D(16, (5, 3), strides=(2, 1), padding="same")),
        "hyb_conv_grouped": model([1, 8, 8, 32], L.Conv2D(32, 3, groups=2, padding="same")),
        "hyb_conv_whole_image": model([3, 5, 4, 16], L.Conv2D(20, (5, 4))),
        "hyb_dw3x3_relu6": model([2, 11, 12, 128], L.DepthwiseConv2D(3, padding="same", activation="relu6")),
        "hyb_dw_mult2_s2": model([1, 12, 11, 64], L.DepthwiseConv2D(3, strides=2, depth_multiplier=2,
                                                                    padding="same")),
        "hyb_dw_dilated": model([1, 14, 13, 130], L.DepthwiseConv2D(3, dilation_rate=2, padding="same")),
        "hyb_dense_b1": model([1, 300], L.Dense(257)),
        "hyb_dense_rank3_relu": model([2, 5, 48], L.Dense(32, activation="relu")),
        "hyb_dense_nobias": model([9, 64], L.Dense(21, use_bias=False)),
        "hyb_bmm_const": fn([3, 12, 64])(lambda x: tf.matmul(x, w3)),
        "hyb_bmm_const_adj": fn([2, 48, 7])(lambda x: tf.matmul(x, w_adj, transpose_a=True, transpose_b=True)),
    }
    out["hyb_dense_b1_symmetric"] = rewrite(out["hyb_dense_b1"], symmetric_inputs)
    out["hyb_dense_nobias_symmetric"] = rewrite(out["hyb_dense_nobias"], symmetric_inputs)
    out["hyb_bmm_const_symmetric"] = rewrite(out["hyb_bmm_const"], symmetric_inputs)
    out["hyb_dense_b1_v3"] = rewrite(out["hyb_dense_b1_symmetric"], per_tensor_weights)  # FC v3 as first written
    out["hyb_dense_rank3_per_tensor"] = rewrite(out["hyb_dense_rank3_relu"], per_tensor_weights)
    out["hyb_conv3x3_per_tensor"] = rewrite(out["hyb_conv3x3_same_relu"], per_tensor_weights)
    out["hyb_conv1x1_per_tensor"] = rewrite(out["hyb_conv1x1"], per_tensor_weights)
    out["hyb_conv_dilated_per_tensor"] = rewrite(out["hyb_conv_dilated"], per_tensor_weights)
    return out


def rewrite(content, edit):
    """content with edit(model, subgraph, op, opcode name) applied to every operator (the
    flatbuffer's object API)."""
    from tensorflow.lite.python import schema_py_generated as schema
    import flatbuffers
    m = schema.ModelT.InitFromPackedBuf(content, 0)
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    for g in m.subgraphs:
        for op in g.operators:
            code = m.operatorCodes[op.opcodeIndex]
            edit(m, g, op, code, names[max(code.builtinCode, code.deprecatedBuiltinCode)])
    b = flatbuffers.Builder(len(content) + 1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def symmetric_inputs(m, g, op, code, name):
    """FULLY_CONNECTED / BATCH_MATMUL with asymmetric_quantize_inputs off."""
    if name in ("FULLY_CONNECTED", "BATCH_MATMUL"):
        op.builtinOptions.asymmetricQuantizeInputs = False
        if name == "FULLY_CONNECTED":
            code.version = 3


def per_tensor_weights(m, g, op, code, name):
    """A CONV_2D's or FULLY_CONNECTED's int8 weights with one scale (their channels' largest)
    instead of one per channel."""
    if name in ("CONV_2D", "FULLY_CONNECTED"):
        q = g.tensors[op.inputs[1]].quantization
        q.scale = [float(np.max(q.scale))]
        q.zeroPoint = [0]
        if name == "CONV_2D":
            code.version = 2


# Unknown dimensions past the batch in the real files: melspectrogram takes audio samples.
REAL_SHAPES = {"melspectrogram": [1, 1280]}


def main(out):
    rng = np.random.default_rng(5)
    cases = {}
    items = [(n, m, b) for n, (m, b) in keras_models().items()] + [("control_flow", control_flow, [2])]
    for name, model, batches in items:
        modes = ["float32"]
        if isinstance(model, keras.Model):
            modes += ["float16"] + (["dynamic_range"] if name in DYNAMIC_RANGE_MODELS else [])
        for mode in modes:
            case = f"{name}_{mode}"
            content = convert(model, mode)
            with open(os.path.join(out, case + ".tflite"), "wb") as f:
                f.write(content)
            runs = []
            for batch in batches:
                arrays = random_inputs(rng, content, lambda d: [batch if s == -1 else s for s in d["shape_signature"]])
                if name == "control_flow":
                    arrays = [np.abs(arrays[0])]  # the true branch; the run below takes the other
                runs.append({"batch": batch, **record_run(out, case, f"b{batch}", content, arrays)})
            if name == "control_flow":
                arrays = [-np.abs(rng.standard_normal((2, 3)).astype("float32"))]
                runs.append({"batch": 2, **record_run(out, case, "neg", content, arrays)})
            cases[case] = {"file": case + ".tflite", "runs": runs}
    for name, (model, shape) in int8_models().items():
        for io in ("int8_io", "float_io"):
            case = f"{name}_int8_{io}"
            content = convert_int8(model, shape, io == "int8_io")
            with open(os.path.join(out, case + ".tflite"), "wb") as f:
                f.write(content)
            runs = []
            for batch in (1, 3):
                arrays = random_inputs(rng, content, lambda d: [batch] + list(d["shape_signature"][1:]))
                runs.append({"batch": batch, **record_run(out, case, f"b{batch}", content, arrays)})
            cases[case] = {"file": case + ".tflite", "runs": runs}
    for case, content in list(one_op_models().items()) + list(hybrid_models().items()):
        with open(os.path.join(out, case + ".tflite"), "wb") as f:
            f.write(content)
        arrays = random_inputs(rng, content, lambda d: list(d["shape"]))
        cases[case] = {"file": case + ".tflite", "runs": [{"batch": 0, **record_run(out, case, "r", content, arrays)}]}
    real_root = os.path.join(ROOT, "data", "tflite_files")
    for path in sorted(glob.glob(os.path.join(real_root, "*", "*.tflite"))):
        name = os.path.basename(path)[:-len(".tflite")]
        case = "real_" + name.replace(".", "_")
        with open(path, "rb") as f:
            content = f.read()
        arrays = random_inputs(rng, content, lambda d: REAL_SHAPES.get(name) or [1 if s == -1 else s
                                                                                for s in d["shape_signature"]])
        cases[case] = {"file": path, "runs": [{"batch": 1, **record_run(out, case, "r", content, arrays)}]}
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
