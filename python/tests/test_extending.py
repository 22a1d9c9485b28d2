# SPDX-License-Identifier: Apache-2.0
"""What users write themselves: a Python Optimizer subclass (Keras 3's build /
update_step), a Python Metric with its own state, tf.py_function / numpy_function, and
tracebacks that end at the user's line; the same programs run by TensorFlow 2.21 where
the answer is a number."""
import traceback

import numpy as np
import pytest

import deepflow as tf
from tf_oracle import assert_same, to_oracle_form

rng = np.random.default_rng(3)
X = rng.standard_normal((32, 3)).astype(np.float32)
Y = (X @ np.array([[1.0], [-1.0], [2.0]], np.float32)).astype(np.float32)

OPTIMIZER = """
class MomentumSGD(tf.keras.optimizers.Optimizer):
    def __init__(self, learning_rate=0.05, momentum=0.9, name="momentum_sgd", **kwargs):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.momentum = momentum

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self.velocities = [self.add_variable_from_reference(reference_variable=v, name="velocity")
                           for v in var_list]

    def update_step(self, gradient, variable, learning_rate):
        lr = tf.cast(learning_rate, variable.dtype)
        v = self.velocities[self._get_variable_index(variable)]
        self.assign(v, self.momentum * v - lr * gradient)
        self.assign_add(variable, v)

    def get_config(self):
        config = super().get_config()
        config.update({"momentum": self.momentum})
        return config
"""


def _model_code(body):
    return OPTIMIZER + """
model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(4, activation='tanh'),
                             tf.keras.layers.Dense(1)])
model.set_weights(weights)
""" + body


def test_python_optimizer_subclass_in_a_custom_loop_matches_tensorflow(tf_oracle):
    weights = [w.copy() for w in tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(4),
                                                      tf.keras.layers.Dense(1)]).get_weights()]
    code = _model_code("""
opt = MomentumSGD()
for _ in range(3):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
result = [tf.constant(w) for w in model.get_weights()] + [int(opt.iterations.numpy()), opt.get_config()['momentum']]
""")
    env = {"tf": tf, "np": np, "weights": weights, "x": X, "y": Y}
    exec(code, env)
    assert_same(to_oracle_form(env["result"]), tf_oracle.run(code, weights=weights, x=X, y=Y), rtol=1e-5, atol=1e-6)


def test_python_optimizer_subclass_in_fit_matches_tensorflow(tf_oracle):
    weights = [w.copy() for w in tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(4),
                                                      tf.keras.layers.Dense(1)]).get_weights()]
    code = _model_code("""
model.compile(optimizer=MomentumSGD(0.02), loss='mse')
model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
result = [tf.constant(w) for w in model.get_weights()] + [int(model.optimizer.iterations.numpy())]
""")
    env = {"tf": tf, "np": np, "weights": weights, "x": X, "y": Y}
    exec(code, env)
    assert_same(to_oracle_form(env["result"]), tf_oracle.run(code, weights=weights, x=X, y=Y), rtol=1e-4, atol=1e-5)
    # Its slots are the optimizer's variables (checkpoints save them).
    names = [v.name for v in env["model"].optimizer.variables]
    assert sum("velocity" in n for n in names) == 4


METRIC = """
class MeanAbsoluteErrorSum(tf.keras.metrics.Metric):
    def __init__(self, name="mae_sum", **kwargs):
        super().__init__(name=name, **kwargs)
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        err = tf.abs(tf.cast(y_true, tf.float32) - tf.cast(y_pred, tf.float32))
        self.total.assign_add(tf.reduce_sum(err))
        self.count.assign_add(tf.cast(tf.size(err), tf.float32))

    def result(self):
        return self.total / self.count

    def reset_state(self):
        self.total.assign(0.0)
        self.count.assign(0.0)
"""


def test_python_metric_subclass_matches_tensorflow(tf_oracle):
    code = METRIC + """
m = MeanAbsoluteErrorSum()
m.update_state(tf.constant([1.0, 2.0]), tf.constant([1.5, 1.0]))
first = m.result()
m.update_state(tf.constant([[0.0]]), tf.constant([[4.0]]))
second = m.result()
m.reset_state()
m.update_state(tf.constant([1.0]), tf.constant([3.0]))
result = [first, second, m.result(), m.name]
"""
    env = {"tf": tf, "np": np}
    exec(code, env)
    assert_same(to_oracle_form(env["result"]), tf_oracle.run(code))


def test_python_metric_in_compile_and_fit(tf_oracle):
    weights = [w.copy() for w in tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)]).get_weights()]
    code = METRIC + """
model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)])
model.set_weights(weights)
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss='mse', metrics=[MeanAbsoluteErrorSum()])
h = model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
result = [float(v) for v in h.history['mae_sum']] + [float(model.evaluate(x, y, verbose=0, return_dict=True)['mae_sum'])]
"""
    env = {"tf": tf, "np": np, "weights": weights, "x": X, "y": Y}
    exec(code, env)
    theirs = tf_oracle.run(code, weights=weights, x=X, y=Y)
    np.testing.assert_allclose(env["result"], theirs, rtol=1e-4)


# --- tf.py_function ---
def test_py_function_eagerly_in_tf_function_and_in_a_dataset_map(tf_oracle):
    code = """
def py_scale(x, k):
    return x.numpy() * float(k.numpy()) + 1.0

eager = tf.py_function(py_scale, [tf.constant([1.0, 2.0]), tf.constant(3.0)], tf.float32)

@tf.function
def traced(x):
    return tf.py_function(py_scale, [x, tf.constant(2.0)], tf.TensorSpec([None], tf.float32)) * 10

ds = tf.data.Dataset.range(4).map(
    lambda i: tf.py_function(lambda v: np.float32(v.numpy() ** 2), [i], tf.TensorSpec([], tf.float32)))
npf = tf.numpy_function(lambda a: (a * 2).astype(np.float32), [tf.constant([1.0, 4.0])], tf.float32)
result = [eager, traced(tf.constant([1.0, 2.0])), traced(tf.constant([5.0])), tf.stack(list(ds)), npf]
"""
    env = {"tf": tf, "np": np}
    exec(code, env)
    assert_same(to_oracle_form(env["result"]), tf_oracle.run(code))


def test_py_function_errors():
    @tf.function
    def no_rank(x):
        return tf.py_function(lambda v: v, [x], tf.float32)
    with pytest.raises(ValueError, match=r"\[tf.py_function\] inside a graph deepflow needs the rank"):
        no_rank(tf.constant([1.0]))

    @tf.function
    def wrong(x):
        return tf.py_function(lambda v: np.ones([2, 2], np.float32), [x], tf.TensorSpec([None], tf.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[tf.py_function\] output 0 is float32\[2,2\]"):
        wrong(tf.constant([1.0]))


# --- tracebacks ---
def _frames(e):
    return [(f.filename, f.name) for f in traceback.extract_tb(e.__traceback__)]


def test_tracebacks_end_at_the_users_line_and_name_the_function():
    @tf.function
    def bad_shape(x):
        return tf.reshape(x * 2, [3, 5])

    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        bad_shape(tf.ones([4]))
    frames = _frames(info.value)
    assert frames[-1] == (__file__, "bad_shape")  # the line of the op, inside the traced body
    assert not any("/deepflow/" in f and not f.endswith("_traceback.py") for f, _ in frames)

    @tf.function
    def bad_index(x, i):
        return tf.gather(x, i)
    bad_index(tf.ones([4]), tf.constant([1]))
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        bad_index(tf.ones([4]), tf.constant([7]))
    assert "[graph] node 'gather'" in str(info.value)
    notes = getattr(info.value, "__notes__", [])
    assert any("in tf.function 'bad_index', defined at File" in n and __file__ in n for n in notes)
    # The node that failed at run time, at the line that built it (as TF's "Detected at node").
    gather_line = bad_index.python_function.__code__.co_firstlineno + 2
    assert any(f"Detected at node 'gather'" in n and f'File "{__file__}", line {gather_line}, in bad_index' in n
               and "return tf.gather(x, i)" in n for n in notes), notes

    # A failure inside a branch graph names the node in the branch, at its line; an input of
    # unknown shape makes the mismatch a run-time error.
    @tf.function(input_signature=[tf.TensorSpec([None, 3]), tf.TensorSpec([None, None])])
    def in_branch(x, y):
        if tf.reduce_sum(x) > 0:
            w = tf.matmul(x * 2.0, y)
        else:
            w = x
        return w
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        in_branch(tf.ones([2, 3]), tf.ones([4, 2]))
    line = in_branch.python_function.__code__.co_firstlineno + 3
    assert any(f'line {line}' in n and "w = tf.matmul(x * 2.0, y)" in n
               for n in getattr(info.value, "__notes__", [])), info.value.__notes__

    tf.debugging.disable_traceback_filtering()
    try:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            bad_shape(tf.ones([4]))
        assert any("/deepflow/_function.py" in f for f, _ in _frames(info.value))
    finally:
        tf.debugging.enable_traceback_filtering()
