# SPDX-License-Identifier: Apache-2.0
"""Saving from Python: model.save / load_model / export, tf.saved_model.save / load of
tf.Modules, tf.train.Checkpoint and CheckpointManager (deferred restoration included),
tf.Module, and GradientTape.watched_variables; against TensorFlow 2.21 where the answer
does not depend on the file format (issue 19 makes the files TensorFlow's)."""
import os

import numpy as np
import pytest

import deepflow as tf

rng = np.random.default_rng(7)
X = rng.standard_normal((48, 4)).astype(np.float32)
Y = (X @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32)).astype(np.float32)


def _mlp(name=None):
    return tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8, activation="relu"),
                                tf.keras.layers.Dense(1)], name=name)


# --- Keras model files ---
def test_sequential_round_trip_resumes_training_exactly(tmp_path):
    straight, resumed = _mlp(), _mlp()
    resumed.set_weights(straight.get_weights())
    for m in (straight, resumed):
        m.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"])
    straight.fit(X, Y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    resumed.fit(X, Y, batch_size=16, epochs=2, shuffle=False, verbose=0)
    resumed.save(tmp_path / "m")  # a SavedModel directory keeps the optimizer state
    loaded = tf.keras.models.load_model(tmp_path / "m")
    assert isinstance(loaded, tf.keras.Sequential)
    assert int(loaded.optimizer.iterations.numpy()) == 6
    np.testing.assert_array_equal(loaded.predict(X, verbose=0), resumed.predict(X, verbose=0))
    loaded.fit(X, Y, batch_size=16, epochs=3, initial_epoch=2, shuffle=False, verbose=0)
    for a, b in zip(loaded.get_weights(), straight.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
    assert set(loaded.evaluate(X, Y, verbose=0, return_dict=True)) == {"loss", "mae"}


def test_functional_model_and_clone(tmp_path):
    a, b = tf.keras.Input((4,), name="a"), tf.keras.Input((2,), name="b")
    shared = tf.keras.layers.Dense(3, name="shared")
    h = tf.keras.layers.Concatenate()([shared(a), b])
    model = tf.keras.Model([a, b], [tf.keras.layers.Dense(1, name="o1")(h), tf.keras.layers.Dense(2, name="o2")(h)])
    xs = [X[:5], X[:5, :2]]
    model.save(tmp_path / "f")
    loaded = tf.keras.models.load_model(tmp_path / "f", compile=False)
    assert isinstance(loaded, tf.keras.Model) and [l.name for l in loaded.layers] == [l.name for l in model.layers]
    for p, q in zip(loaded.predict(xs, verbose=0), model.predict(xs, verbose=0)):
        np.testing.assert_array_equal(p, q)
    clone = tf.keras.models.clone_model(model)
    assert type(clone) is type(model) and clone.to_json() == model.to_json()
    assert not np.array_equal(clone.get_weights()[0], model.get_weights()[0])  # fresh weights


@tf.keras.utils.register_keras_serializable(package="Tests")
class _Scale(tf.keras.layers.Layer):
    def __init__(self, k=2.0, **kwargs):
        super().__init__(**kwargs)
        self.k = k

    def build(self, input_shape):
        self.s = self.add_weight(name="s", shape=(input_shape[-1],), initializer="ones")

    def call(self, x):
        return x * self.s * self.k

    def get_config(self):
        return {**super().get_config(), "k": self.k}


@tf.keras.utils.register_keras_serializable(package="Tests")
class _Net(tf.keras.Model):
    def __init__(self, units=3, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.hidden = tf.keras.layers.Dense(units, activation="relu")
        self.out = tf.keras.layers.Dense(1)

    def call(self, x, training=False):
        return self.out(self.hidden(x))

    def get_config(self):
        return {"units": self.units}


class _Unregistered(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.d = tf.keras.layers.Dense(1)

    def call(self, x):
        return self.d(x)


def test_custom_layers_and_subclassed_models_come_back_as_their_classes(tmp_path):
    seq = tf.keras.Sequential([tf.keras.Input((4,)), _Scale(3.0), tf.keras.layers.Dense(2)])
    seq.layers[0].s.assign([1.0, 2.0, 3.0, 4.0])
    seq.save(tmp_path / "seq")
    back = tf.keras.models.load_model(tmp_path / "seq")
    assert isinstance(back.layers[0], _Scale) and back.layers[0].k == 3.0
    np.testing.assert_array_equal(back.predict(X, verbose=0), seq.predict(X, verbose=0))

    net = _Net(5)
    net.compile("adam", "mse")
    net.fit(X, Y, epochs=1, verbose=0)
    net.save(tmp_path / "net")
    loaded = tf.keras.models.load_model(tmp_path / "net")
    assert type(loaded) is _Net and loaded.units == 5
    np.testing.assert_array_equal(loaded.predict(X, verbose=0), net.predict(X, verbose=0))
    assert int(loaded.optimizer.iterations.numpy()) == 2

    lone = _Unregistered()
    lone(X[:1])
    lone.save(tmp_path / "lone")
    with pytest.raises(TypeError, match="Could not locate class '_Unregistered'"):
        tf.keras.models.load_model(tmp_path / "lone")
    again = tf.keras.models.load_model(tmp_path / "lone", custom_objects={"_Unregistered": _Unregistered})
    np.testing.assert_array_equal(again.predict(X, verbose=0), lone.predict(X, verbose=0))


def test_keras_files_are_keras_3_zips(tmp_path):
    import zipfile
    a, b = tf.keras.Input((4,), name="a"), tf.keras.Input((2,), name="b")
    h = tf.keras.layers.Concatenate()([tf.keras.layers.Dense(3, activation="tanh")(a), b])
    model = tf.keras.Model([a, b], tf.keras.layers.Dense(2)(h))
    xs = [X[:5], X[:5, :2]]
    model.save(tmp_path / "f.keras")
    assert zipfile.is_zipfile(tmp_path / "f.keras")
    names = set(zipfile.ZipFile(tmp_path / "f.keras").namelist())
    assert {"config.json", "metadata.json", "model.weights.h5"} <= names
    loaded = tf.keras.models.load_model(tmp_path / "f.keras")
    np.testing.assert_allclose(loaded.predict(xs, verbose=0), model.predict(xs, verbose=0), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match=r"\[Model.save\] .*net.keras: a .keras file holds Sequential"):
        net = _Net(2)
        net(X[:1])
        net.save(tmp_path / "net.keras")


_KERAS3_SIDE = """
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import keras, numpy as np
d = sys.argv[1]
x = np.load(os.path.join(d, "x.npy"))
if sys.argv[2] == "write":
    keras.utils.set_random_seed(3)
    i = keras.Input((4,))
    h = keras.layers.BatchNormalization()(keras.layers.Dense(6, activation="relu")(i))
    m = keras.Model(i, keras.layers.Dense(2)(h))
    m.compile("adam", "mse")
    m.fit(x, x[:, :2], epochs=2, verbose=0)
    m.save(os.path.join(d, "theirs.keras"))
    np.save(os.path.join(d, "theirs.npy"), m.predict(x, verbose=0))
else:
    np.save(os.path.join(d, "ours_in_keras.npy"), keras.models.load_model(os.path.join(d, "ours.keras")).predict(x, verbose=0))
"""


def test_keras_files_cross_load_with_keras_3(tmp_path):
    import subprocess
    from tf_oracle import PEERS_PYTHON, oracle_missing
    if not os.path.exists(PEERS_PYTHON):
        oracle_missing(f"no Keras 3: {PEERS_PYTHON} is missing (make peers)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENBLAS_")}
    np.save(tmp_path / "x.npy", X[:6])

    def keras3(mode):
        subprocess.run([PEERS_PYTHON, "-c", _KERAS3_SIDE, str(tmp_path), mode], check=True, env=env)
    keras3("write")
    theirs = tf.keras.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(theirs.predict(X[:6], verbose=0), np.load(tmp_path / "theirs.npy"), rtol=1e-4, atol=1e-5)
    ours = _mlp()
    ours.save(tmp_path / "ours.keras")
    keras3("read")
    np.testing.assert_allclose(np.load(tmp_path / "ours_in_keras.npy"), ours.predict(X[:6], verbose=0), rtol=1e-4,
                               atol=1e-5)


def test_save_errors(tmp_path):
    m = _mlp()
    with pytest.raises(NotImplementedError, match=r"\[Model.save\] .*\.h5"):
        m.save(tmp_path / "m.h5")
    m.save(tmp_path / "d")
    with pytest.raises(FileExistsError, match="overwrite=False"):
        m.save(tmp_path / "d", overwrite=False)
    with pytest.raises(Exception, match=str(tmp_path / "missing")):
        tf.keras.models.load_model(tmp_path / "missing")


def test_export_serves_and_loads_as_a_saved_model(tmp_path, capsys):
    m = _mlp()
    m.export(tmp_path / "exp")
    assert "Endpoint 'serve'" in capsys.readouterr().out
    loaded = tf.saved_model.load(tmp_path / "exp")
    want = m.predict(X, verbose=0)
    np.testing.assert_allclose(loaded.serve(X).numpy(), want, rtol=1e-6)
    sig = loaded.signatures["serving_default"]
    (out,) = sig(tf.constant(X)).values()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6)
    assert tf.saved_model.contains_saved_model(tmp_path / "exp")
    tf.saved_model.save(m, tmp_path / "sm")  # a Keras model: its serving signature
    np.testing.assert_allclose(tf.saved_model.load(tmp_path / "sm")(X).numpy(), want, rtol=1e-6)


# --- tf.saved_model of tf.Module ---
class _Affine(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(2.0)
        self.extra = [tf.Variable(3.0, name="extra"), tf.Variable(4.0, trainable=False)]
        self.inner = tf.Module(name="inner")
        self.inner.b = tf.Variable(1.0)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32, name="features")])
    def __call__(self, x):
        return x * self.w + self.inner.b

    @tf.function
    def both(self, x, scale=2):
        return {"y": x * scale * self.extra[0], "n": tf.shape(x)[0]}

    @tf.function(input_signature=[tf.TensorSpec([], tf.float32)])
    def set_w(self, v):
        self.w.assign(v)


def test_module_functions_variables_and_signatures_come_back(tmp_path):
    m = _Affine()
    m.both(tf.constant([1.0, 2.0]))
    m.both(tf.constant([[1.0]]), scale=3)
    tf.saved_model.save(m, tmp_path / "m")
    loaded = tf.saved_model.load(tmp_path / "m")
    assert list(loaded.signatures) == ["serving_default"]
    sig = loaded.signatures["serving_default"]
    assert list(sig.structured_input_signature[1]) == ["features"]
    np.testing.assert_array_equal(sig(features=tf.constant([1.0, 2.0]))["output_0"].numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(loaded(tf.constant([1.0, 3.0])).numpy(), [3.0, 7.0])
    out = loaded.both(tf.constant([1.0, 2.0]))
    assert sorted(out) == ["n", "y"] and out["n"].numpy() == 2
    np.testing.assert_array_equal(out["y"].numpy(), [6.0, 12.0])
    np.testing.assert_array_equal(loaded.both(tf.constant([[5.0]]))["y"].numpy(), [[45.0]])
    with pytest.raises(ValueError, match="Could not find matching concrete function"):
        loaded.both(tf.constant([1, 2]))
    assert loaded.w.numpy() == 2.0 and loaded.inner.b.numpy() == 1.0
    assert [v.numpy() for v in loaded.extra] == [3.0, 4.0] and not loaded.extra[1].trainable
    loaded.set_w(tf.constant(10.0))  # a function with no outputs still assigns
    assert loaded.w.numpy() == 10.0
    np.testing.assert_array_equal(loaded(tf.constant([1.0])).numpy(), [11.0])
    assert m.w.numpy() == 2.0  # the loaded copy is separate


def test_explicit_signatures_and_output_names(tmp_path):
    m = _Affine()
    tf.saved_model.save(m, tmp_path / "s", signatures={
        "serving_default": m.__call__, "scaled": m.both.get_concrete_function(tf.TensorSpec([None], tf.float32))})
    loaded = tf.saved_model.load(tmp_path / "s")
    assert sorted(loaded.signatures) == ["scaled", "serving_default"]
    out = loaded.signatures["scaled"](x=tf.constant([1.0, 2.0]))
    assert sorted(out) == ["n", "y"]
    np.testing.assert_array_equal(out["y"].numpy(), [6.0, 12.0])


def test_module_attributes_match_tensorflow(tf_oracle):
    code = """
class Inner(tf.Module):
    def __init__(self):
        super().__init__()
        self.b = tf.Variable(1.0, name='b')
class Outer(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(2.0, name='w')
        self.layers_ = [Inner(), Inner()]
        self.frozen = tf.Variable(3.0, trainable=False, name='frozen')
m = Outer()
result = [m.name, [v.name for v in m.variables], [v.name for v in m.trainable_variables],
          [v.name for v in m.non_trainable_variables], len(m.submodules), type(m.submodules[0]).__name__]
"""
    env = {"tf": tf}
    exec(code, env)
    assert env["result"] == tf_oracle.run(code)


def test_checkpoint_keys_of_modules_match_tensorflow(tf_oracle, tmp_path):
    code = """
m = tf.Module()
m.w = tf.Variable([1.0, 2.0])
m.sub = tf.Module()
m.sub.b = tf.Variable(3.0)
m.vs = [tf.Variable(4.0), {'k': tf.Variable(5.0)}]
ckpt = tf.train.Checkpoint(model=m, step=tf.Variable(7, dtype=tf.int64))
path = ckpt.save(prefix)
result = sorted(n for n, _ in tf.train.list_variables(path) if n != '_CHECKPOINTABLE_OBJECT_GRAPH')
"""
    theirs = tf_oracle.run(code, prefix=str(tmp_path / "tf" / "ckpt"))
    env = {"tf": tf, "prefix": str(tmp_path / "df" / "ckpt")}
    exec(code.replace("result = sorted(n for n, _ in tf.train.list_variables(path) if n != "
                      "'_CHECKPOINTABLE_OBJECT_GRAPH')", "result = sorted(ckpt._current().keys())"), env)
    assert env["result"] == theirs


# --- tf.train.Checkpoint ---
def test_checkpoint_round_trip_of_model_optimizer_and_iterator(tmp_path):
    model = _mlp()
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
    model.fit(X, Y, epochs=1, verbose=0)
    it = iter(tf.data.Dataset.range(10))
    next(it), next(it)
    step = tf.Variable(3, dtype=tf.int64)
    ckpt = tf.train.Checkpoint(model=model, optimizer=model.optimizer, iterator=it, step=step)
    path = ckpt.save(tmp_path / "c" / "ckpt")
    assert path.endswith("ckpt-1") and tf.train.latest_checkpoint(tmp_path / "c") == path
    weights, slots = model.get_weights(), [v.numpy() for v in model.optimizer.variables]
    assert next(it).numpy() == 2
    model.fit(X, Y, epochs=1, verbose=0)
    step.assign(0)
    ckpt.restore(path).assert_consumed()
    assert next(it).numpy() == 2 and step.numpy() == 3 and ckpt.save_counter.numpy() == 1
    for a, b in zip(model.get_weights(), weights):
        np.testing.assert_array_equal(a, b)
    for v, s in zip(model.optimizer.variables, slots):
        np.testing.assert_array_equal(v.numpy(), s)


def test_checkpoint_manager_and_status(tmp_path):
    v = tf.Variable(0.0)
    ckpt = tf.train.Checkpoint(v=v)
    manager = tf.train.CheckpointManager(ckpt, tmp_path / "run", max_to_keep=2)
    assert manager.latest_checkpoint is None and manager.restore_or_initialize() is None
    for i in range(3):
        v.assign(float(i))
        manager.save()
    assert [os.path.basename(p) for p in manager.checkpoints] == ["ckpt-2", "ckpt-3"]
    assert not os.path.exists(str(tmp_path / "run" / "ckpt-1.index"))
    again = tf.train.CheckpointManager(tf.train.Checkpoint(v=v), tmp_path / "run", max_to_keep=2)
    v.assign(-1.0)
    assert again.restore_or_initialize().endswith("ckpt-3") and v.numpy() == 2.0

    extra = tf.train.Checkpoint(v=v, other=tf.Variable(1.0))
    with pytest.raises(AssertionError, match="other"):
        extra.restore(manager.latest_checkpoint).assert_consumed()
    extra.restore(manager.latest_checkpoint).expect_partial()
    with pytest.raises(AssertionError, match="No checkpoint specified"):
        ckpt.restore(None).assert_consumed()
    assert tf.train.latest_checkpoint(tmp_path) is None
    with pytest.raises(ValueError, match="was expecting a trackable object"):
        tf.train.Checkpoint(x=1)


def test_restore_into_an_unbuilt_model_is_deferred_until_it_is_built(tmp_path):
    net = _Net(4)
    net(X[:1])
    opt = tf.keras.optimizers.Adam(0.1)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((net(X) - Y) ** 2)
    opt.apply_gradients(zip(tape.gradient(loss, net.trainable_variables), net.trainable_variables))
    path = tf.train.Checkpoint(net=net, optimizer=opt).save(tmp_path / "ckpt")

    fresh, opt2 = _Net(4), tf.keras.optimizers.Adam(0.1)
    status = tf.train.Checkpoint(net=fresh, optimizer=opt2).restore(path)
    assert not fresh.weights
    np.testing.assert_array_equal(fresh(X).numpy(), net(X).numpy())  # restored as it was built
    status.assert_existing_objects_matched()
    assert int(opt2.iterations.numpy()) == 1


# --- GradientTape.watched_variables ---
def test_watched_variables_match_tensorflow(tf_oracle):
    code = """
a = tf.Variable(1.0, name='a')
b = tf.Variable(2.0, name='b')
c = tf.Variable(3.0, name='c')
frozen = tf.Variable(4.0, name='frozen', trainable=False)
@tf.function
def f(x):
    return x * c
with tf.GradientTape() as tape:
    y = a * frozen + a
    z = f(y)
    tape.watch(frozen)
with tf.GradientTape(watch_accessed_variables=False) as off:
    w = b * 2.0
result = [[v.name for v in tape.watched_variables()], [v.name for v in off.watched_variables()]]
"""
    env = {"tf": tf}
    exec(code, env)
    assert env["result"] == tf_oracle.run(code)
