# SPDX-License-Identifier: Apache-2.0
"""tf.lite.Interpreter on deepflow_lite against LiteRT (ai-edge-litert, reference kernels)
on files TensorFlow 2.21's converter writes: the same outputs, TFLite's details dicts,
resize (strict), signature runners, zero-copy tensor(), clear errors."""
import numpy as np
import pytest

import deepflow as tf

# A small CNN and an MLP with two signatures, converted by TensorFlow; LiteRT's answers.
_ORACLE = """
import keras
from ai_edge_litert import interpreter as litert
keras.utils.set_random_seed(3)
inp = keras.Input((10, 10, 2))
h = keras.layers.Conv2D(4, 3, padding="same", activation="relu")(inp)
h = keras.layers.DepthwiseConv2D(3, strides=2, padding="same")(h)
h = keras.layers.GlobalAveragePooling2D()(h)
model = keras.Model(inp, keras.layers.Dense(3, activation="softmax")(h))
content = tf.lite.TFLiteConverter.from_keras_model(model).convert()
lr = litert.Interpreter(model_content=content, experimental_op_resolver_type=litert.OpResolverType.BUILTIN_REF)
d = lr.get_input_details()[0]
lr.resize_tensor_input(d["index"], x.shape)
lr.allocate_tensors()
lr.set_tensor(d["index"], x)
lr.invoke()
result = [content, lr.get_tensor(lr.get_output_details()[0]["index"]), lr.get_input_details(), lr.get_output_details()]
"""


@pytest.fixture(scope="module")
def cnn(tf_oracle):
    x = np.random.default_rng(0).standard_normal((3, 10, 10, 2)).astype(np.float32)
    content, want, in_details, out_details = tf_oracle.run(_ORACLE, x=x)
    return content, x, want, in_details, out_details


def test_matches_litert(cnn):
    content, x, want, in_details, out_details = cnn
    for threads in (1, 2):
        interp = tf.lite.Interpreter(model_content=content, num_threads=threads)
        index = interp.get_input_details()[0]["index"]
        interp.resize_tensor_input(index, x.shape)
        interp.allocate_tensors()
        interp.set_tensor(index, x)
        interp.invoke()
        got = interp.get_tensor(interp.get_output_details()[0]["index"])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_details_are_tflites(cnn, tmp_path):
    content, x, _, in_details, out_details = cnn
    path = tmp_path / "cnn.tflite"
    path.write_bytes(content)
    interp = tf.lite.Interpreter(model_path=str(path))
    interp.resize_tensor_input(interp.get_input_details()[0]["index"], [3, 10, 10, 2])  # as the oracle did
    interp.allocate_tensors()
    for ours, theirs in ((interp.get_input_details(), in_details), (interp.get_output_details(), out_details)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert a["name"] == b["name"] and a["index"] == b["index"] and a["dtype"] == b["dtype"]
            np.testing.assert_array_equal(a["shape"], b["shape"])
            np.testing.assert_array_equal(a["shape_signature"], b["shape_signature"])
            assert a["quantization"] == b["quantization"]


def test_signature_runner_and_zero_copy_view(cnn):
    content, x, want, _, _ = cnn
    interp = tf.lite.Interpreter(model_content=content)
    sigs = interp.get_signature_list()
    assert list(sigs) == ["serving_default"]
    runner = interp.get_signature_runner()
    (name,) = sigs["serving_default"]["inputs"]
    (out,) = runner(**{name: x}).values()
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)

    index = interp.get_input_details()[0]["index"]
    interp.resize_tensor_input(index, [1, 10, 10, 2], strict=True)
    interp.allocate_tensors()
    view = interp.tensor(index)()
    view[...] = x[:1]  # writes the interpreter's memory
    interp.invoke()
    np.testing.assert_allclose(interp.get_tensor(interp.get_output_details()[0]["index"]), want[:1],
                               rtol=1e-5, atol=1e-6)


def test_errors_name_the_fault(cnn):
    content, x, _, _, _ = cnn
    interp = tf.lite.Interpreter(model_content=content)
    index = interp.get_input_details()[0]["index"]
    with pytest.raises(Exception, match=r"strict resizing to \[1,11,10,2\]"):
        interp.resize_tensor_input(index, [1, 11, 10, 2], strict=True)
    with pytest.raises(ValueError, match="allocate_tensors"):
        interp.set_tensor(index, x)
    interp.allocate_tensors()
    with pytest.raises(ValueError, match=r"has shape \[1, 10, 10, 2\], got \[3, 10, 10, 2\]"):
        interp.set_tensor(index, x)
    with pytest.raises(Exception, match=r"not a \.tflite file"):
        tf.lite.Interpreter(model_content=b"\0" * 64)
    with pytest.raises(Exception, match="corrupt or truncated"):
        tf.lite.Interpreter(model_content=content[: len(content) // 2])
