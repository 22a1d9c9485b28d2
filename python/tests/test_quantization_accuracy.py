# SPDX-License-Identifier: Apache-2.0
"""Post-training quantization keeps an MNIST CNN's accuracy: the CNN is trained here for one
epoch (deepflow's Keras), converted by tf.lite.TFLiteConverter, and the 10,000 test images run
in deepflow_lite: full-integer int8 within 0.5 accuracy points of float32, dynamic range
within 0.5, float16 weights within 0.1 and at most 0.52x the float32 file's size; after one
epoch of quantization-aware training (tf.quantization.keras.quantize_model), the int8 file
converted with the learned ranges (no representative dataset) within 0.2 points of the
QAT model in float.
bench/lite/quantization.py is the longer study (latencies, LiteRT, docs/quantization.md)."""
import numpy as np
import pytest

import deepflow as tf

keras = tf.keras


@pytest.fixture(scope="module")
def mnist_model():
    (x_train, y_train), (x_test, y_test) = keras.datasets.mnist.load_data()
    x_train = (x_train.astype(np.float32) / 255.0)[..., None]
    x_test = (x_test.astype(np.float32) / 255.0)[..., None]
    tf.random.set_seed(0)
    inp = keras.Input((28, 28, 1))
    h = keras.layers.Conv2D(16, 3, activation="relu")(inp)
    h = keras.layers.BatchNormalization()(h)
    h = keras.layers.MaxPooling2D()(h)
    h = keras.layers.Conv2D(32, 3, activation="relu")(h)
    h = keras.layers.MaxPooling2D()(h)
    h = keras.layers.Dense(64, activation="relu")(keras.layers.Flatten()(h))
    model = keras.Model(inp, keras.layers.Dense(10, activation="softmax")(h))
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=128, epochs=1, verbose=0)
    return model, x_train, y_train, x_test, y_test


def _accuracy(content, x, y, batch=1000):
    interp = tf.lite.Interpreter(model_content=content, num_threads=2)
    interp.resize_tensor_input(interp.get_input_details()[0]["index"], (batch, 28, 28, 1))
    interp.allocate_tensors()
    d, o = interp.get_input_details()[0], interp.get_output_details()[0]
    correct = 0
    for i in range(0, len(x), batch):
        interp.set_tensor(d["index"], x[i:i + batch])
        interp.invoke()
        correct += int((interp.get_tensor(o["index"]).argmax(-1) == y[i:i + batch]).sum())
    return 100.0 * correct / len(x)


def test_post_training_quantization_keeps_accuracy(mnist_model):
    model, x_train, _, x_test, y_test = mnist_model
    calib = x_train[:200]
    results = {}
    for mode in ("float32", "float16", "dynamic_range", "int8"):
        c = tf.lite.TFLiteConverter.from_keras_model(model)
        if mode != "float32":
            c.optimizations = [tf.lite.Optimize.DEFAULT]
        if mode == "float16":
            c.target_spec.supported_types = [tf.float16]
        if mode == "int8":
            c.representative_dataset = lambda: ([calib[i:i + 1]] for i in range(len(calib)))
        content = c.convert()
        assert c.conversion_mode == mode
        results[mode] = (len(content), _accuracy(content, x_test, y_test))
    size32, acc32 = results["float32"]
    assert acc32 > 95.0, results
    assert results["float16"][0] <= 0.52 * size32, results
    assert abs(results["float16"][1] - acc32) <= 0.1, results
    assert abs(results["dynamic_range"][1] - acc32) <= 0.5, results
    assert abs(results["int8"][1] - acc32) <= 0.5, results


def test_quantization_aware_training_keeps_accuracy(mnist_model):
    model, x_train, y_train, x_test, y_test = mnist_model   # the last test: QAT fine-tunes model's weights
    qat = tf.quantization.keras.quantize_model(model)
    qat.compile(optimizer=keras.optimizers.Adam(1e-4), loss="sparse_categorical_crossentropy")
    qat.fit(x_train, y_train, batch_size=128, epochs=1, verbose=0)
    c = tf.lite.TFLiteConverter.from_keras_model(qat)
    c.optimizations = [tf.lite.Optimize.DEFAULT]
    int8 = c.convert()
    assert c.conversion_mode == "int8"
    qat_float = _accuracy(tf.lite.TFLiteConverter.from_keras_model(qat).convert(), x_test, y_test)
    qat_int8 = _accuracy(int8, x_test, y_test)
    assert qat_float > 95.0
    assert abs(qat_int8 - qat_float) <= 0.2, (qat_int8, qat_float)
