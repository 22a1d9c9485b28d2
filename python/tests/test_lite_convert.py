# SPDX-License-Identifier: Apache-2.0
"""tf.lite.TFLiteConverter (deepflow_quantize) checked against LiteRT (ai-edge-litert): the
files we write load and run there with the outputs deepflow_lite gives: float32 and float16
within 1e-5, full-integer int8 bit for bit with LiteRT's reference kernels and within one
quantization step of its default (XNNPACK) kernels, dynamic range within 1e-5 of its hybrid
kernels; and every mode close to the Keras model it came from."""
import numpy as np
import pytest

import deepflow as tf

keras = tf.keras

_LITERT = """
from ai_edge_litert import interpreter as litert
def run(ref):
    kind = litert.OpResolverType.BUILTIN_REF if ref else litert.OpResolverType.AUTO
    lr = litert.Interpreter(model_content=content, experimental_op_resolver_type=kind)
    for d, x in zip(lr.get_input_details(), xs):
        lr.resize_tensor_input(d["index"], x.shape)
    lr.allocate_tensors()
    for d, x in zip(lr.get_input_details(), xs):
        lr.set_tensor(d["index"], x)
    lr.invoke()
    return [lr.get_tensor(d["index"]) for d in lr.get_output_details()]
result = [run(True), run(False)]
"""


def _cnn():
    tf.random.set_seed(1)
    inp = keras.Input((12, 12, 3), name="image")
    h = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(inp)
    h = keras.layers.BatchNormalization(beta_initializer="random_normal", moving_variance_initializer="ones")(h)
    h = keras.layers.DepthwiseConv2D(3, strides=2, padding="same", activation="relu6")(h)
    r = keras.layers.Conv2D(8, 1, padding="same")(h)
    h = keras.layers.Activation("relu")(keras.layers.Add()([h, r]))
    h = keras.layers.ZeroPadding2D(((1, 0), (0, 1)))(h)
    h = keras.layers.MaxPooling2D()(h)
    side = keras.layers.Flatten()(keras.layers.AveragePooling2D()(h))
    h = keras.layers.GlobalAveragePooling2D()(h)
    h = keras.layers.Dense(40, activation="relu")(h)
    out = keras.layers.Dense(5, activation="softmax")(h)
    return keras.Model(inp, [out, side])


def _mlp():
    tf.random.set_seed(2)
    inp = keras.Input((64,), name="features")
    h = keras.layers.Dense(128, activation="relu")(inp)
    h = keras.layers.Dense(32, activation="tanh")(h)
    out = keras.layers.Dense(10, activation="sigmoid")(h)
    return keras.Model(inp, out)


def _mixed():
    tf.random.set_seed(3)
    inp = keras.Input((6, 8), name="sequence")
    h = keras.layers.Dense(16, activation="gelu")(inp)                # FULLY_CONNECTED keep_num_dims, GELU
    h = keras.layers.LayerNormalization()(h)
    h = keras.layers.Lambda(lambda t: tf.transpose(t, [0, 2, 1]))(h)  # TRANSPOSE
    h = keras.layers.Reshape((-1,))(h)
    h = keras.layers.Dense(12)(h)
    h = keras.layers.LeakyReLU(negative_slope=0.2)(h)
    out = keras.layers.Concatenate()([keras.layers.Activation("sigmoid")(h), keras.layers.Activation("tanh")(h)])
    return keras.Model(inp, out)


def _norm():
    tf.random.set_seed(5)
    inp = keras.Input((6, 8), name="sequence")
    h = keras.layers.Dense(16, activation="gelu")(inp)                # GELU
    h = keras.layers.LayerNormalization()(h)                          # MEAN, SQUARED_DIFFERENCE, RSQRT, SUB
    h = keras.layers.Reshape((-1,))(h)
    h = keras.layers.LeakyReLU(negative_slope=0.2)(keras.layers.Dense(12)(h))
    return keras.Model(inp, keras.layers.Dense(5)(h))


MODELS = {"cnn": (_cnn, (12, 12, 3)), "mlp": (_mlp, (64,)), "mixed": (_mixed, (6, 8)), "norm": (_norm, (6, 8))}


def _convert(model, mode, shape):
    c = tf.lite.TFLiteConverter.from_keras_model(model)
    if mode != "float32":
        c.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "float16":
        c.target_spec.supported_types = [tf.float16]
    if mode.startswith("int8"):
        rng = np.random.default_rng(7)
        c.representative_dataset = lambda: ([rng.standard_normal((1,) + shape).astype(np.float32)] for _ in range(24))
    if mode in ("int8_int8_io", "int8_uint8_io"):
        t = tf.int8 if mode == "int8_int8_io" else tf.uint8
        c.inference_input_type = t
        c.inference_output_type = t
    return c.convert(), c


def _inputs(interp, x):
    d = interp.get_input_details()[0]
    if d["dtype"] == np.float32:
        return [x]
    scale, zp = d["quantization"]
    info = np.iinfo(d["dtype"])
    return [np.clip(np.round(x / scale) + zp, info.min, info.max).astype(d["dtype"])]


def _run_ours(content, xs, threads=1, fast=False):
    interp = tf.lite.Interpreter(model_content=content, num_threads=threads, experimental_fast_int8=fast)
    for d, x in zip(interp.get_input_details(), xs):
        interp.resize_tensor_input(d["index"], x.shape)
    interp.allocate_tensors()
    for d, x in zip(interp.get_input_details(), xs):
        interp.set_tensor(d["index"], x)
    interp.invoke()
    return interp, [interp.get_tensor(d["index"]) for d in interp.get_output_details()]


def _dequantized(interp, outs):
    res = []
    for d, y in zip(interp.get_output_details(), outs):
        if y.dtype == np.float32:
            res.append(y)
        else:
            scale, zp = d["quantization"]
            res.append((y.astype(np.float64) - zp) * scale)
    return res


MODES = ["float32", "float16", "dynamic_range", "int8", "int8_int8_io", "int8_uint8_io"]
# "mixed" concatenates a sigmoid's and a tanh's outputs, whose int8 parameters are fixed and
# differ: the converter requantizes them (QUANTIZE int8 -> int8) before the concatenation.
CASES = [(n, m) for n in sorted(MODELS) for m in MODES]


@pytest.mark.parametrize("name,mode", CASES)
def test_our_files_run_in_litert(tf_oracle, name, mode):
    build, shape = MODELS[name]
    model = build()
    x = np.random.default_rng(11).standard_normal((3,) + shape).astype(np.float32)
    want = model(x, training=False)
    want = [np.asarray(w) for w in (want if isinstance(want, (list, tuple)) else [want])]
    content, conv = _convert(model, mode, shape)
    assert content[4:8] == b"TFL3"
    assert conv.conversion_mode == mode.split("_int8_io")[0].split("_uint8_io")[0]
    xs = _inputs(tf.lite.Interpreter(model_content=content), x)
    interp, ours = _run_ours(content, xs)
    _, ours2 = _run_ours(content, xs, threads=2)
    ref, default = tf_oracle.run(_LITERT, content=content, xs=xs)
    assert len(ref) == len(ours) == len(want)
    for o, o2, r, d in zip(ours, ours2, ref, default):
        assert o.dtype == r.dtype and o.shape == r.shape
        if mode.startswith("int8"):
            np.testing.assert_array_equal(o, r)   # LiteRT's reference kernels, bit for bit
            np.testing.assert_array_equal(o2, r)
        else:
            np.testing.assert_allclose(o, r, rtol=0, atol=1e-5 * max(1.0, np.abs(r).max()))
            np.testing.assert_allclose(o2, r, rtol=0, atol=1e-5 * max(1.0, np.abs(r).max()))
    if mode.startswith("int8"):
        # LiteRT's default kernels round differently in places: one quantization step, or as far
        # as LiteRT's own reference and default kernels are apart (a layer norm's RSQRT and
        # the ops after it widen that gap).
        for dd, o, r, d in zip(interp.get_output_details(), ours, ref, default):
            if o.dtype == np.float32:
                gap = float(np.abs(r.astype(np.float64) - d).max())
                np.testing.assert_allclose(o, d, rtol=0, atol=max(1e-6, 1.01 * _float_step(interp, dd), 1.01 * gap))
            else:
                gap = int(np.abs(r.astype(np.int32) - d.astype(np.int32)).max())
                assert np.abs(o.astype(np.int32) - d.astype(np.int32)).max() <= max(1, gap)
        # experimental_fast_int8 requantizes in float, as XNNPACK: as close to LiteRT's default.
        _, fast = _run_ours(content, xs, fast=True)
        for dd, f, r, d in zip(interp.get_output_details(), fast, ref, default):
            if f.dtype == np.float32:
                gap = float(np.abs(r.astype(np.float64) - d).max())
                np.testing.assert_allclose(f, d, rtol=0, atol=max(1e-6, 1.01 * _float_step(interp, dd), 1.01 * gap))
            else:
                gap = int(np.abs(r.astype(np.int32) - d.astype(np.int32)).max())
                assert np.abs(f.astype(np.int32) - d.astype(np.int32)).max() <= max(1, gap)
    tol = {"float32": 1e-5, "float16": 3e-3, "dynamic_range": 3e-2}.get(mode, 0.08)
    for got, w in zip(_dequantized(interp, ours), want):
        np.testing.assert_allclose(got, w, rtol=0, atol=tol * max(1.0, np.abs(w).max()))


def _float_step(interp, detail):
    """The quantization step of the int8 tensor a float output was dequantized from."""
    for t in interp.get_tensor_details():
        if t["name"] == detail["name"] + "_int8":
            return t["quantization"][0]
    return 0.0


def test_quantization_report_and_errors():
    model = _mlp()
    content, conv = _convert(model, "int8", (64,))
    report = conv.quantization_report
    assert [r["op"] for r in report].count("FULLY_CONNECTED") == 3
    assert all(r["rmse"] <= 64 * r["scale"] for r in report)
    c = tf.lite.TFLiteConverter.from_keras_model(model)
    c.optimizations = [tf.lite.Optimize.DEFAULT]
    c.representative_dataset = lambda: ([np.zeros((1, 63), np.float32)] for _ in range(2))
    with pytest.raises(Exception, match=r"does not fit the model's float32\[\?, 64\]"):
        c.convert()
    inp = keras.Input((6,))
    with pytest.raises(Exception, match=r"no int8 kernel[^$]*EXP \(from node"):
        _convert(keras.Model(inp, keras.layers.Dense(4)(keras.layers.Lambda(tf.exp)(inp))), "int8", (6,))
    c = tf.lite.TFLiteConverter.from_keras_model(model)
    c.target_spec.supported_ops = [tf.lite.OpsSet.SELECT_TF_OPS]
    with pytest.raises(ValueError, match="Flex"):
        c.convert()
    c = tf.lite.TFLiteConverter.from_keras_model(model)
    c.inference_input_type = tf.int8
    with pytest.raises(Exception, match="representative dataset"):
        c.convert()


def test_from_concrete_functions_and_saved_model(tmp_path):
    w = tf.Variable(np.random.default_rng(4).standard_normal((5, 3)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 5], tf.float32)])
    def f(x):
        return tf.nn.softmax(tf.matmul(x, w) + 1.0)

    x = np.random.default_rng(5).standard_normal((2, 5)).astype(np.float32)
    content = tf.lite.TFLiteConverter.from_concrete_functions([f.get_concrete_function()]).convert()
    _, out = _run_ours(content, [x])
    np.testing.assert_allclose(out[0], f(x).numpy(), rtol=1e-5, atol=1e-6)
    module = tf.Module()
    module.w = w
    module.f = f
    tf.saved_model.save(module, str(tmp_path / "sm"), signatures={"serving_default": f})
    content = tf.lite.TFLiteConverter.from_saved_model(str(tmp_path / "sm")).convert()
    interp, out = _run_ours(content, [x])
    np.testing.assert_allclose(out[0], f(x).numpy(), rtol=1e-5, atol=1e-6)
    assert interp.get_signature_list()["serving_default"]["inputs"] == ["x"]
