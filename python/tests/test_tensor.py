# SPDX-License-Identifier: Apache-2.0
"""tf.Tensor's Python protocols and numpy interop (TensorFlow's rules, research/python.md §5)."""
import numpy as np
import pytest

import deepflow as tf
from tf_oracle import assert_same, to_oracle_form


def test_python_scalars_convert_as_tensorflow_does():
    assert tf.constant(1.5).dtype == tf.float32
    assert tf.constant(3).dtype == tf.int32
    assert tf.constant(2**40).dtype == tf.int64
    assert tf.constant(True).dtype == tf.bool
    assert tf.constant([1, 2.5]).dtype == tf.float32
    assert tf.constant([]).dtype == tf.float32 and tf.constant([]).shape == (0,)
    assert tf.constant(np.arange(3)).dtype == tf.int64  # numpy keeps its dtype
    assert tf.constant(np.float64(1.0)).dtype == tf.float64


def test_no_silent_promotion_between_tensors():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[add\]"):
        tf.constant([1.0]) + tf.constant([1])
    with pytest.raises(ValueError):  # InvalidArgumentError is also a ValueError
        tf.constant([1.0]) * tf.constant([1], dtype=tf.int64)
    with pytest.raises(TypeError, match="Cannot convert 1.5 to EagerTensor of dtype int32"):
        tf.constant(1) + 1.5
    assert (tf.constant([1.0, 2.0]) + 1).dtype == tf.float32


def test_numpy_arrays_are_not_copied():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = tf.convert_to_tensor(x)
    view = np.asarray(t)
    assert np.shares_memory(view, x)
    assert not view.flags.writeable
    c = t.numpy()
    assert not np.shares_memory(c, x) and c.flags.writeable  # .numpy() copies, as in TF
    y = tf.reduce_sum(x)  # an op on a numpy array reads it in place
    assert float(y) == 66.0
    # A non-contiguous view is copied first.
    s = tf.constant(x[:, ::2])
    np.testing.assert_array_equal(s.numpy(), x[:, ::2])


def test_variable_owns_its_value():
    x = np.zeros(3, dtype=np.float32)
    v = tf.Variable(x)
    v.assign_add([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(x, 0)  # the caller's array is untouched
    np.testing.assert_array_equal(v.numpy(), [1, 2, 3])


def test_dlpack_round_trip():
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    back = tf.experimental.dlpack.from_dlpack(tf.experimental.dlpack.to_dlpack(t))
    np.testing.assert_array_equal(back.numpy(), t.numpy())
    a = np.arange(4, dtype=np.int32)
    t2 = tf.experimental.dlpack.from_dlpack(a)
    assert np.shares_memory(np.asarray(t2), a)


def test_protocols():
    t = tf.constant([[1, 2], [3, 4]])
    assert len(t) == 2 and t.ndim == 2 and t.shape == (2, 2) and t.shape.as_list() == [2, 2]
    assert [r.numpy().tolist() for r in t] == [[1, 2], [3, 4]]
    assert bool(tf.constant(True)) and float(tf.constant(2.5)) == 2.5 and int(tf.constant(7)) == 7
    assert [0, 1, 2, 3][tf.constant(2)] == 2  # __index__
    with pytest.raises(ValueError, match="ambiguous"):
        bool(t)
    with pytest.raises(TypeError, match="unhashable"):
        hash(t)
    d = {t.ref(): 1}
    assert d[t.ref()] == 1
    with pytest.raises(TypeError, match="Scalar tensor has no `len\\(\\)`"):
        len(tf.constant(1))
    assert (t == None) is False  # noqa: E711 - TF 2's rule
    assert repr(tf.constant([1.0, 2.0])) == ("<tf.Tensor: shape=(2,), dtype=float32, "
                                             "numpy=array([1., 2.], dtype=float32)>")
    assert str(tf.constant([1, 2])) == "tf.Tensor([1 2], shape=(2,), dtype=int32)"


def test_numpy_operand_defers_to_the_tensor():
    r = np.ones(2, dtype=np.float32) + tf.constant([1.0, 2.0])
    assert isinstance(r, tf.Tensor)


def test_indexing_errors_match_tensorflow():
    t = tf.constant([[1, 2], [3, 4]])
    with pytest.raises(TypeError, match="Only integers, slices"):
        t[[0, 1]]
    np.testing.assert_array_equal(t[tf.constant([True, False])].numpy(), [[1, 2]])


def test_symbolic_tensors_refuse_python_bool():
    @tf.function
    def f(x):
        return bool(x > 0)
    with pytest.raises(TypeError, match="symbolic"):
        f(tf.constant(1.0))


def test_string_tensors(tf_oracle):
    t = tf.constant(["ab", "c"])
    assert t.dtype == tf.string
    assert t.numpy().tolist() == [b"ab", b"c"]
    assert_same(to_oracle_form(t), tf_oracle.run("tf.constant(['ab', 'c'])"))


def test_core_messages_carry_the_op_and_shapes():
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        tf.matmul(tf.zeros([2, 3]), tf.zeros([4, 5]))
    assert str(e.value).startswith("[matmul]") and "[2,3]" in str(e.value)
    assert e.value.op == "matmul"
    with pytest.raises(tf.errors.NotFoundError):
        tf.load_op_library("/nonexistent/lib.so")


def test_comparison_with_a_python_value_takes_the_tensor_dtype():
    t = tf.constant([4, 5], dtype=tf.int64)
    np.testing.assert_array_equal((t == 4).numpy(), [True, False])
    np.testing.assert_array_equal((t != 4).numpy(), [False, True])
    assert tf.constant(b"abc").numpy() == b"abc"
