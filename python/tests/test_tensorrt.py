# SPDX-License-Identifier: Apache-2.0
"""tf.experimental.tensorrt (TF-TRT's converter API on deepflow's serving optimizer) on a
SavedModel TensorFlow 2.21 wrote (data/tf_models/cnn, made by scripts/make-tf-models.py):
FP32 keeps TensorFlow's outputs, INT8 puts its conv chain in int8 and stays close, the
saved model loads with tf.saved_model.load and serves from `deepflow serve` over REST, and
bad settings are clear errors."""
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request

import numpy as np
import pytest

import deepflow as tf

trt = tf.experimental.tensorrt
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("DEEPFLOW_BUILD_DIR", os.path.join(ROOT, "build"))
CNN = os.path.join(ROOT, "data", "tf_models", "cnn")


@pytest.fixture(scope="module")
def cnn():
    if not os.path.isdir(os.path.join(CNN, "saved_model")):
        if os.environ.get("CI"):
            pytest.fail("data/tf_models/cnn is missing (make tf-models)")
        pytest.skip("data/tf_models/cnn is missing (make tf-models)")
    x = np.load(os.path.join(CNN, "cases", "b3", "in", "image.npy"))
    want = np.load(os.path.join(CNN, "cases", "b3", "saved_model", "serving_default", "output_0.npy"))
    return os.path.join(CNN, "saved_model"), x, want


def _calibration(x):
    """Batches like x (the model's test images) with noise: calibration data should look
    like what the model will serve."""
    def fn():
        r = np.random.default_rng(0)
        for _ in range(4):
            yield ((x + r.normal(0, 0.1 * x.std(), size=x.shape)).astype(np.float32),)
    return fn


def _run(path, x):
    f = tf.saved_model.load(path).signatures["serving_default"]
    key = list(f.structured_input_signature[1].keys())[0]
    return list(f(**{key: tf.constant(x)}).values())[0].numpy()


def test_fp32_keeps_tensorflows_outputs(cnn, tmp_path, capsys):
    src, x, want = cnn
    c = trt.TrtGraphConverterV2(input_saved_model_dir=src, precision_mode=trt.TrtPrecisionMode.FP32)
    c.convert()
    c.summary()
    assert "conv chains" in capsys.readouterr().out
    c.save(str(tmp_path / "fp32"))
    np.testing.assert_allclose(_run(str(tmp_path / "fp32"), x), want, rtol=1e-5, atol=1e-6)


def test_int8_runs_in_int8_close_to_tensorflow_and_serves(cnn, tmp_path, capsys):
    src, x, want = cnn
    params = trt.ConversionParams(precision_mode="INT8", minimum_segment_size=1)
    c = trt.Converter(input_saved_model_dir=src, conversion_params=params, calibration_method="min_max")
    c.convert(calibration_input_fn=_calibration(x))
    c.build(input_fn=lambda: iter([(x[:1],), (x,)]))
    c.summary()
    assert "1 in int8" in capsys.readouterr().out
    out = tmp_path / "base" / "1"
    c.save(str(out))
    got = _run(str(out), x)
    err = np.abs(got - want).max()
    assert 0 < err < 0.02 * np.abs(want).max(), err
    assert (got.argmax(1) == want.argmax(1)).all()
    # deepflow serve takes the converted model as it is, over TF Serving's REST API.
    cli = os.path.join(BUILD, "tools", "cli", "deepflow")
    if not os.path.exists(cli):
        if os.environ.get("CI"):
            pytest.fail(f"{cli} is missing")
        pytest.skip(f"{cli} is missing (build the deepflow_cli target)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([cli, "serve", "--port", "0", "--rest_api_port", str(port), "--host", "127.0.0.1",
                               "--model_name", "cnn", "--model_base_path", str(tmp_path / "base")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        body = json.dumps({"instances": x.tolist()}).encode()
        for _ in range(200):
            try:
                req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/models/cnn:predict", data=body)
                served = np.array(json.loads(urllib.request.urlopen(req, timeout=10).read())["predictions"])
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode()
                time.sleep(0.05)
        else:
            pytest.fail("deepflow serve did not answer")
    finally:
        server.terminate()
        server.wait(timeout=10)
    np.testing.assert_allclose(served, got, rtol=1e-5, atol=1e-6)


def test_calibration_items_as_dicts_and_arrays(cnn, tmp_path):
    src, x, _ = cnn
    key = list(tf.saved_model.load(src).signatures["serving_default"].structured_input_signature[1].keys())[0]
    c = trt.TrtGraphConverterV2(input_saved_model_dir=src, precision_mode="int8", minimum_segment_size=1)
    c.convert(calibration_input_fn=lambda: iter([{key: x}, x]))
    c.save(str(tmp_path / "m"))
    assert _run(str(tmp_path / "m"), x).shape == x.shape[:1] + (_run(src, x).shape[1],)


def test_errors(cnn):
    src, x, _ = cnn
    with pytest.raises(ValueError, match="INT8 needs calibration_input_fn"):
        trt.TrtGraphConverterV2(input_saved_model_dir=src, precision_mode="INT8").convert()
    with pytest.raises(ValueError, match="use_calibration=True"):
        trt.TrtGraphConverterV2(input_saved_model_dir=src, precision_mode="INT8", use_calibration=False)
    with pytest.raises(Exception, match=r"\[ServingOptimizer\] precision_mode must be"):
        trt.TrtGraphConverterV2(input_saved_model_dir=src, precision_mode="INT4")
    c = trt.TrtGraphConverterV2(input_saved_model_dir=src, precision_mode="INT8")
    with pytest.raises(Exception, match=r"does not fit float32\[\?,28,28,1\]"):
        c.convert(calibration_input_fn=lambda: iter([(np.zeros((2, 7, 7, 1), np.float32),)]))
    with pytest.raises(RuntimeError, match="save\\(\\) before convert\\(\\)"):
        trt.TrtGraphConverterV2(input_saved_model_dir=src).save("/tmp/never")


def test_cli_convert(cnn, tmp_path):
    src, x, want = cnn
    cli = os.path.join(BUILD, "tools", "cli", "deepflow")
    if not os.path.exists(cli):
        if os.environ.get("CI"):
            pytest.fail(f"{cli} is missing")
        pytest.skip(f"{cli} is missing (build the deepflow_cli target)")
    key = list(tf.saved_model.load(src).signatures["serving_default"].structured_input_signature[1].keys())[0]
    np.save(tmp_path / "calib.npy", np.concatenate([x] * 4))
    out = tmp_path / "int8" / "1"
    r = subprocess.run([cli, "saved_model", "convert", "--dir", src, "--output_dir", str(out), "--precision_mode",
                        "INT8", "--minimum_segment_size", "1", "--calibration_inputs",
                        f"{key}={tmp_path / 'calib.npy'}", "--calibration_batch_size", "5"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "1 in int8" in r.stdout and "calibrated on 3 batches" in r.stdout, r.stdout
    got = _run(str(out), x)
    assert np.abs(got - want).max() < 0.02 * np.abs(want).max()
    bad = subprocess.run([cli, "saved_model", "convert", "--dir", src, "--output_dir", str(tmp_path / "x"),
                          "--precision_mode", "INT8", "--calibration_inputs", f"{key}={tmp_path / 'calib.npy'}",
                          "--calibration_method", "kl"], capture_output=True, text=True)
    assert bad.returncode == 1 and "--calibration_method: calibration must be" in bad.stderr, bad.stderr
