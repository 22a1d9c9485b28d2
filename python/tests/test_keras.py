# SPDX-License-Identifier: Apache-2.0
"""tf.keras from Python: the three kinds of models, subclassing hooks, compile/fit with
callbacks, against TensorFlow 2.21 (Keras 3) where outputs can be compared."""
import json
import os

import numpy as np
import pytest

import deepflow as tf
from tf_oracle import assert_same, to_oracle_form

rng = np.random.default_rng(1)
X = rng.standard_normal((64, 8)).astype(np.float32)
Y = (X[:, 0] > 0).astype(np.int32)


def _mlp():
    return tf.keras.Sequential([tf.keras.Input(shape=(8,)), tf.keras.layers.Dense(16, activation="relu"),
                                tf.keras.layers.Dense(2)])


def test_sequential_predictions_match_tensorflow_with_the_same_weights(tf_oracle):
    model = _mlp()
    weights = [w for w in model.get_weights()]
    code = """
m = tf.keras.Sequential([tf.keras.Input(shape=(8,)), tf.keras.layers.Dense(16, activation='relu'),
                         tf.keras.layers.Dense(2)])
m.set_weights(weights)
result = tf.constant(m.predict(x, verbose=0))
"""
    theirs = tf_oracle.run(code, weights=weights, x=X)
    ours = model.predict(X, verbose=0)
    assert_same(("tensor", "float32", ours), theirs, rtol=1e-5, atol=1e-5)


def test_functional_model_with_two_inputs_and_two_outputs():
    a = tf.keras.Input(shape=(4,), name="a")
    b = tf.keras.Input(shape=(4,), name="b")
    h = tf.keras.layers.Concatenate()([a, b])
    h = tf.keras.layers.Dense(8, activation="relu")(h)
    out1 = tf.keras.layers.Dense(1, name="reg")(h)
    out2 = tf.keras.layers.Dense(3, activation="softmax", name="cls")(h)
    model = tf.keras.Model(inputs=[a, b], outputs=[out1, out2])
    model.compile(optimizer="adam", loss=["mse", "sparse_categorical_crossentropy"])
    xa, xb = X[:, :4], X[:, 4:]
    hist = model.fit([xa, xb], [X[:, :1], Y], epochs=2, batch_size=16, verbose=0)
    assert len(hist.history["loss"]) == 2
    p1, p2 = model.predict([xa, xb], verbose=0)
    assert p1.shape == (64, 1) and p2.shape == (64, 3)
    np.testing.assert_allclose(p2.sum(axis=1), 1.0, rtol=1e-5)


class Linear(tf.keras.layers.Layer):
    def __init__(self, units=4, **kwargs):
        super().__init__(**kwargs)
        self.units = units

    def build(self, input_shape):
        self.w = self.add_weight(name="w", shape=(input_shape[-1], self.units), initializer="random_normal",
                                 trainable=True)
        self.b = self.add_weight(name="b", shape=(self.units,), initializer="zeros", trainable=True)

    def call(self, inputs, training=None):
        return tf.matmul(inputs, self.w) + self.b

    def get_config(self):
        return {**super().get_config(), "units": self.units}


class Mlp(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden = Linear(16)
        self.blocks = [tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dropout(0.5)]
        self.head = tf.keras.layers.Dense(2)
        self.calls_with_training = []

    def call(self, inputs, training=False):
        self.calls_with_training.append(training)
        h = tf.nn.relu(self.hidden(inputs))
        for layer in self.blocks:
            h = layer(h, training=training)
        return self.head(h)


def test_custom_layer_weights_config_and_tracking():
    layer = Linear(3)
    y = layer(tf.ones([2, 5]))
    assert y.shape == (2, 3)
    assert [v.shape for v in layer.trainable_weights] == [(5, 3), (3,)]
    assert layer.get_config()["units"] == 3
    clone = Linear.from_config(layer.get_config())
    assert clone.units == 3


def test_subclassed_model_fits_and_tracks_lists():
    model = Mlp()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss=tf.keras.losses.SparseCategoricalCrossentropy(
        from_logits=True), metrics=["accuracy"])
    before = model.evaluate(X, Y, verbose=0, return_dict=True)
    model.fit(X, Y, epochs=20, batch_size=16, verbose=0)
    after = model.evaluate(X, Y, verbose=0, return_dict=True)
    assert after["loss"] < before["loss"]
    assert len(model.trainable_variables) == 6  # Linear's 2 + the list's Dense 2 + head 2
    assert True in model.calls_with_training and False in model.calls_with_training


def test_custom_train_step_as_in_the_keras_guide():
    class CustomModel(tf.keras.Model):
        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                y_pred = self(x, training=True)
                loss = self.compute_loss(y=y, y_pred=y_pred)
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            for metric in self.metrics:
                if metric.name == "loss":
                    metric.update_state(loss)
                else:
                    metric.update_state(y, y_pred)
            return {m.name: m.result() for m in self.metrics}

    inputs = tf.keras.Input(shape=(8,))
    outputs = tf.keras.layers.Dense(1)(inputs)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    hist = model.fit(X, X[:, :1], epochs=3, verbose=0)
    assert "loss" in hist.history and len(hist.history["loss"]) == 3


def test_python_callback_sees_every_epoch_and_can_stop():
    seen = []

    class Stop(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            seen.append((epoch, round(logs["loss"], 6)))
            if epoch == 2:
                self.model.stop_training = True

    model = _mlp()
    model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    hist = model.fit(X, Y, epochs=10, verbose=0, callbacks=[Stop(), tf.keras.callbacks.TerminateOnNaN()])
    assert [e for e, _ in seen] == [0, 1, 2]
    assert len(hist.history["loss"]) == 3


def test_early_stopping_and_validation():
    model = _mlp()
    model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    hist = model.fit(X, Y, epochs=50, verbose=0, validation_split=0.25,
                     callbacks=[tf.keras.callbacks.EarlyStopping(monitor="val_loss", patience=1, min_delta=10.0)])
    assert "val_loss" in hist.history and "val_accuracy" in hist.history
    assert len(hist.history["loss"]) == 2  # no epoch improves by 10: stops after patience + 1


def test_optimizer_and_loss_objects_by_name_and_schedule():
    sched = tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
    for opt in ("sgd", "rmsprop", "adagrad", tf.keras.optimizers.Adam(learning_rate=sched),
                tf.keras.optimizers.AdamW(1e-3)):
        model = _mlp()
        model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
        model.fit(X, Y, epochs=1, verbose=0)
    with pytest.raises(TypeError, match="Unrecognized keyword arguments passed to Dense"):
        tf.keras.layers.Dense(3, not_an_arg=1)


def test_function_loss_and_metric_objects():
    def my_loss(y_true, y_pred):
        return tf.reduce_mean(tf.square(y_true - y_pred), axis=-1)

    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(1)])
    model.compile("sgd", loss=my_loss, metrics=[tf.keras.metrics.MeanAbsoluteError()])
    hist = model.fit(X, X[:, :1], epochs=2, verbose=0)
    assert hist.history["loss"][1] < hist.history["loss"][0]
    m = tf.keras.metrics.SparseCategoricalAccuracy()
    m.update_state([1, 0], [[0.1, 0.9], [0.2, 0.8]])
    assert float(m.result()) == 0.5


def test_gradient_tape_training_loop_on_keras_model():
    model = _mlp()
    opt = tf.keras.optimizers.Adam(0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    first = float(step(X, Y))
    for _ in range(30):
        last = float(step(X, Y))
    assert last < first


def test_summary_json_and_datasets_error(capsys):
    model = _mlp()
    model.summary()
    assert "Total params: 178" in capsys.readouterr().out
    cfg = json.loads(model.to_json())
    assert cfg["class_name"] == "Sequential"
    clone = tf.keras.models.model_from_json(model.to_json())
    assert clone.count_params() == model.count_params()


def test_fashion_mnist_loads_or_names_the_install_command():
    try:
        (x, y), (xt, yt) = tf.keras.datasets.fashion_mnist.load_data()
    except tf.errors.NotFoundError as e:
        assert "apt-get install dataset-fashion-mnist" in str(e)
        if os.environ.get("CI"):  # scripts/install-deps.sh test installs it: on CI it must be there
            raise
        return
    assert x.shape == (60000, 28, 28) and x.dtype == np.uint8 and yt.shape == (10000,)


def test_fit_evaluate_predict_on_a_dataset():
    ds = tf.data.Dataset.from_tensor_slices((X, Y)).shuffle(64, seed=1).batch(16).prefetch(tf.data.AUTOTUNE)
    model = _mlp()
    model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
    hist = model.fit(ds, epochs=3, verbose=0, validation_data=tf.data.Dataset.from_tensor_slices((X, Y)).batch(32))
    assert len(hist.history["loss"]) == 3 and "val_accuracy" in hist.history
    logs = model.evaluate(tf.data.Dataset.from_tensor_slices((X, Y)).batch(32), verbose=0, return_dict=True)
    assert 0.0 <= logs["accuracy"] <= 1.0
    p = model.predict(tf.data.Dataset.from_tensor_slices(X).batch(10), verbose=0)
    assert p.shape == (64, 2)


def test_schedules_evaluate_as_tensorflow(tf_oracle):
    code = """
s = tf.keras.optimizers.schedules
steps = [0, 5, 10, 25]
result = [tf.constant([float(f(t)) for t in steps]) for f in (
    s.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5),
    s.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5, staircase=True),
    s.PiecewiseConstantDecay([5, 20], [1.0, 0.5, 0.1]),
    s.CosineDecay(0.2, decay_steps=20, alpha=0.1))]
"""
    env = {"tf": tf}
    exec(code, env)
    assert_same(to_oracle_form(env["result"]), tf_oracle.run(code), rtol=1e-5, atol=1e-6)


# --- masking: Embedding(mask_zero) into recurrent layers, as Keras 3 computes it ---

TOKENS = np.array([[3, 9, 4, 0, 0, 0], [0, 7, 7, 1, 5, 2], [8, 6, 1, 0, 2, 0]], dtype=np.int32)


def _masked_text(functional):
    layers = [tf.keras.layers.Embedding(20, 6, mask_zero=True), tf.keras.layers.GRU(5, return_sequences=True),
              tf.keras.layers.LSTM(4), tf.keras.layers.Dense(2)]
    if not functional:
        return tf.keras.Sequential([tf.keras.Input(shape=(None,), dtype="int32")] + layers)
    x = tf.keras.Input(shape=(None,), dtype="int32")
    h = x
    for layer in layers:
        h = layer(h)
    return tf.keras.Model(x, h)


@pytest.mark.parametrize("functional", [False, True])
def test_mask_zero_matches_tensorflow(tf_oracle, functional):
    model = _masked_text(functional)
    weights = model.get_weights()
    code = """
m = tf.keras.Sequential([tf.keras.Input(shape=(None,), dtype='int32'), tf.keras.layers.Embedding(20, 6, mask_zero=True),
                         tf.keras.layers.GRU(5, return_sequences=True), tf.keras.layers.LSTM(4),
                         tf.keras.layers.Dense(2)])
m.set_weights(weights)
result = tf.constant(m.predict(x, verbose=0))
"""
    theirs = tf_oracle.run(code, weights=weights, x=TOKENS)
    ours = model.predict(TOKENS, verbose=0)
    assert_same(("tensor", "float32", ours), theirs, rtol=1e-5, atol=1e-5)


def test_explicit_mask_and_a_python_layer_that_reads_it():
    seen = {}

    class CountKept(tf.keras.layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.supports_masking = True

        def call(self, inputs, mask=None):
            seen["mask"] = mask is not None
            return inputs

    emb = tf.keras.layers.Embedding(20, 3, mask_zero=True)
    assert emb.compute_mask(TOKENS).numpy().tolist() == (TOKENS != 0).tolist()
    x = tf.keras.Input(shape=(None,), dtype="int32")
    h = CountKept()(emb(x))
    y = tf.keras.layers.GlobalAveragePooling1D()(h)
    model = tf.keras.Model(x, y)
    out = model.predict(TOKENS, verbose=0)
    assert seen["mask"]
    vectors = emb(TOKENS).numpy()
    kept = (TOKENS != 0)[..., None]
    np.testing.assert_allclose(out, (vectors * kept).sum(1) / kept.sum(1), rtol=1e-5)
    # layer(x, mask=m) on a C++ layer: masked steps hold the state.
    gru = tf.keras.layers.GRU(2)
    seq = np.random.default_rng(0).standard_normal((1, 4, 3)).astype(np.float32)
    held = gru(seq, mask=tf.constant([[True, True, False, False]])).numpy()
    np.testing.assert_allclose(held, gru(seq[:, :2]).numpy(), rtol=1e-5)
