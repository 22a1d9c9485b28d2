# SPDX-License-Identifier: Apache-2.0
"""tf.train.Checkpoint.restore of checkpoints TensorFlow 2.21 wrote for Keras 3 and tf-keras
models with their Adam optimizer: through io::Checkpoint and the checkpoint's object graph
(deepflow/tf/checkpoint_format.cpp), with TensorFlow's predictions and, after one more
training step, TensorFlow's weights."""
import numpy as np
import pytest

import deepflow as tf

CODE = """
import importlib
K = importlib.import_module(flavor)
K.utils.set_random_seed(3)
m = K.Sequential([K.Input((4,)), K.layers.Dense(8, activation="relu"), K.layers.Dense(2)])
opt = K.optimizers.Adam(0.01)
m.compile(optimizer=opt, loss="mse")
m.train_on_batch(x, y)
m.train_on_batch(x, y)
tf.train.Checkpoint(model=m, optimizer=opt).write(prefix)
pred = np.asarray(m(x))
m.train_on_batch(x2, y2)
result = [pred, [np.asarray(w) for w in m.weights]]
"""


@pytest.mark.parametrize("flavor", ["keras", "tf_keras"])
def test_restores_what_tensorflow_wrote_and_trains_on_like_it(tf_oracle, tmp_path, flavor):
    rng = np.random.default_rng(0)
    x, x2 = (rng.standard_normal((6, 4)).astype(np.float32) for _ in range(2))
    y, y2 = (rng.standard_normal((6, 2)).astype(np.float32) for _ in range(2))
    prefix = str(tmp_path / "ckpt")
    pred, next_weights = tf_oracle.run(CODE, flavor=flavor, x=x, y=y, x2=x2, y2=y2, prefix=prefix)

    m = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8, activation="relu"),
                             tf.keras.layers.Dense(2)])
    opt = tf.keras.optimizers.Adam(0.001)  # the checkpoint's 0.01 must come across
    m.compile(optimizer=opt, loss="mse")
    tf.train.Checkpoint(model=m, optimizer=opt).restore(prefix).assert_consumed()
    assert int(opt.iterations.numpy()) == 2
    np.testing.assert_allclose(np.asarray(m(x)), pred, rtol=0, atol=1e-5)
    m.train_on_batch(x2, y2)
    ours = [np.asarray(w) for w in m.get_weights()]
    assert len(ours) == len(next_weights)
    for got, want in zip(ours, next_weights):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)
