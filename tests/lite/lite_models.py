# SPDX-License-Identifier: Apache-2.0
"""The TensorFlow side of tests/lite/*_test.cpp: .tflite files written by TensorFlow 2.21's
converter and LiteRT's answers on fixed inputs.

  lite_models.py OUT   writes OUT/<case>.tflite, OUT/<case>.in<i>.bin and
                       OUT/<case>.out<i>.bin (raw little-endian arrays) and OUT/cases.json:
                       {case: {file, inputs: [{name, dtype, shape, file}], outputs: [...],
                       batches: [...]}}; LiteRT runs with its reference kernels
                       (OpResolverType.BUILTIN_REF, lite.md 2.4), at every batch listed.

  .venv-peers/bin/python tests/lite/lite_models.py OUT"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from ai_edge_litert import interpreter as litert  # noqa: E402


def keras_models():
    """name -> (model, batches): small Keras 3 models that cover the float builtin ops."""
    keras.utils.set_random_seed(11)
    out = {}
    out["mlp"] = (keras.Sequential([keras.Input((12,)), keras.layers.Dense(16, activation="relu"),
                                    keras.layers.Dense(8, activation="tanh"),
                                    keras.layers.Dense(4, activation="softmax")]), [1, 3])

    img = keras.Input((20, 20, 3))
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(img)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.DepthwiseConv2D(3, padding="same", activation="relu6")(x)
    x = keras.layers.Conv2D(12, 3, strides=2, activation="relu")(x)
    x = keras.layers.Conv2D(12, 1)(x)
    x = keras.layers.AveragePooling2D(2, padding="same")(x)
    x = keras.layers.Conv2D(6, 3, dilation_rate=2, padding="same")(x)
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
    t = keras.Input((5, 8))
    att = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)(t, t)
    y = keras.layers.LayerNormalization()(t + att)
    ff = keras.layers.Dense(16, activation="relu")(y)
    y = keras.layers.LayerNormalization()(y + keras.layers.Dense(8)(ff))
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


def main(out):
    rng = np.random.default_rng(5)
    cases = {}
    items = [(n, m, b) for n, (m, b) in keras_models().items()] + [("control_flow", control_flow, [2])]
    for name, model, batches in items:
        modes = ["float32", "float16"] if isinstance(model, keras.Model) else ["float32"]
        for mode in modes:
            case = f"{name}_{mode}"
            content = convert(model, mode)
            with open(os.path.join(out, case + ".tflite"), "wb") as f:
                f.write(content)
            runs = []
            for batch in batches:
                probe = litert.Interpreter(model_content=content)
                arrays = []
                for d in probe.get_input_details():
                    shape = [batch if s == -1 else s for s in d["shape_signature"]]
                    arrays.append(rng.standard_normal(shape).astype(d["dtype"]))
                if name == "control_flow" and batch == 2:
                    arrays = [np.abs(arrays[0])]  # the true branch; the case below takes the other
                interp, outputs = run_litert(content, arrays)
                files = {"inputs": [], "outputs": []}
                for kind, details, values in (("in", interp.get_input_details(), arrays),
                                              ("out", interp.get_output_details(), outputs)):
                    for i, (d, v) in enumerate(zip(details, values)):
                        fname = f"{case}.b{batch}.{kind}{i}.bin"
                        np.ascontiguousarray(v).tofile(os.path.join(out, fname))
                        files["inputs" if kind == "in" else "outputs"].append(
                            {"name": d["name"], "index": int(d["index"]), "dtype": str(v.dtype),
                             "shape": list(v.shape), "file": fname})
                runs.append({"batch": batch, **files})
            if name == "control_flow":
                arrays = [-np.abs(rng.standard_normal((2, 3)).astype("float32"))]
                interp, outputs = run_litert(content, arrays)
                files = {"inputs": [], "outputs": []}
                for kind, details, values in (("in", interp.get_input_details(), arrays),
                                              ("out", interp.get_output_details(), outputs)):
                    for i, (d, v) in enumerate(zip(details, values)):
                        fname = f"{case}.neg.{kind}{i}.bin"
                        np.ascontiguousarray(v).tofile(os.path.join(out, fname))
                        files["inputs" if kind == "in" else "outputs"].append(
                            {"name": d["name"], "index": int(d["index"]), "dtype": str(v.dtype),
                             "shape": list(v.shape), "file": fname})
                runs.append({"batch": -1, **files})
            cases[case] = {"file": case + ".tflite", "runs": runs}
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
