# SPDX-License-Identifier: Apache-2.0
"""One row per public op: the same expression evaluated with deepflow and with
TensorFlow 2.21 (the oracle) on the same inputs: values, dtypes and shapes must agree,
and where TensorFlow raises, deepflow must raise too."""
import numpy as np
import pytest

import deepflow as tf
from tf_oracle import OracleError, assert_same, to_oracle_form

rng = np.random.default_rng(0)
X = rng.standard_normal((3, 4)).astype(np.float32)
Y = rng.standard_normal((3, 4)).astype(np.float32)
P = (np.abs(X) + 0.5).astype(np.float32)
I = np.array([[1, -2, 3], [4, 5, -6]], dtype=np.int32)
J = np.array([[2, 3, -2], [1, 4, 5]], dtype=np.int32)
IMG = rng.standard_normal((2, 6, 6, 3)).astype(np.float32)
K = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
DK = rng.standard_normal((3, 3, 3, 2)).astype(np.float32)
V = dict(x=X, y=Y, p=P, i=I, j=J, img=IMG, k=K, dk=DK, labels=np.array([0, 3, 1], dtype=np.int32))

ROWS = [
    # creation and conversion
    "tf.constant([1.0, 2.0])", "tf.constant([1, 2])", "tf.constant(2**40)", "tf.constant([True, False])",
    "tf.constant(x)", "tf.constant([[1, 2], [3, 4]], dtype=tf.float32)", "tf.constant(0.5, shape=[2, 3])",
    "tf.constant([1, 2, 3, 4], shape=[2, 2])", "tf.convert_to_tensor([[1.5], [2.5]])",
    "tf.constant(np.float64(2.5))", "tf.constant([np.int64(3)])", "tf.zeros([2, 3])",
    "tf.ones([2], dtype=tf.int32)", "tf.fill([2, 2], 7)", "tf.zeros_like(x)", "tf.ones_like(i)",
    "tf.range(5)", "tf.range(1, 10, 3)", "tf.range(0.0, 1.0, 0.25)", "tf.linspace(0.0, 1.0, 5)",
    "tf.eye(3)", "tf.constant('hello')", "tf.constant([b'a', b'bc'])", "tf.cast(x, tf.int32)",
    "tf.cast(i, tf.float32)", "tf.cast(i > 0, tf.float32)",
    # operators and their dtype rules
    "tf.constant(x) + 1", "1 - tf.constant(x)", "tf.constant(x) * tf.constant(y)", "tf.constant(x) / 2",
    "tf.constant(i) / tf.constant(j)", "tf.constant(i) // tf.constant(j)", "tf.constant(i) % tf.constant(j)",
    "tf.constant(x) // 0.7", "tf.constant(x) % 0.7", "tf.constant(p) ** 2", "2 ** tf.constant(x)",
    "tf.constant(x) @ tf.transpose(tf.constant(y))", "-tf.constant(i)", "abs(tf.constant(x))",
    "tf.constant(x) < tf.constant(y)", "tf.constant(x) >= 0", "tf.constant(i) == tf.constant(j)",
    "tf.constant(i) != 1", "tf.constant(i) + 1.5", "tf.constant(x) + tf.constant(i)",
    "tf.constant([True, False]) & tf.constant([True, True])", "~tf.constant([True, False])",
    "tf.constant(x) + x", "x + tf.constant(x)",
    # math
    "tf.add(x, y)", "tf.subtract(x, y)", "tf.multiply(x, 2.0)", "tf.divide(x, y)", "tf.math.floordiv(i, j)",
    "tf.math.floormod(i, j)", "tf.math.truediv(i, j)", "tf.maximum(x, y)", "tf.minimum(x, 0.0)",
    "tf.pow(p, 0.5)", "tf.square(x)", "tf.sqrt(p)", "tf.math.rsqrt(p)", "tf.exp(x)", "tf.math.log(p)",
    "tf.math.log1p(p)", "tf.math.expm1(x)", "tf.sin(x)", "tf.cos(x)", "tf.tanh(x)", "tf.sigmoid(x)",
    "tf.math.erf(x)", "tf.abs(i)", "tf.sign(x)", "tf.floor(x)", "tf.math.ceil(x)", "tf.round(x * 2)",
    "tf.math.reciprocal(p)", "tf.math.squared_difference(x, y)", "tf.math.is_nan(x)",
    "tf.clip_by_value(x, -0.5, 0.5)", "tf.add_n([x, y, x])", "tf.where(x > 0, x, y)",
    "tf.math.logical_and(x > 0, y > 0)", "tf.math.logical_or(x > 0, y > 0)", "tf.math.logical_not(x > 0)",
    "tf.math.logical_xor(x > 0, y > 0)", "tf.math.divide_no_nan(x, tf.constant([[0.0, 1.0, 2.0, 0.0]]))",
    # reductions
    "tf.reduce_sum(x)", "tf.reduce_sum(x, axis=0)", "tf.reduce_sum(x, axis=[0, 1], keepdims=True)",
    "tf.reduce_mean(x, 1)", "tf.reduce_max(x, -1)", "tf.reduce_min(i)", "tf.reduce_prod(p, 0)",
    "tf.reduce_logsumexp(x, 1)", "tf.reduce_any(x > 1)", "tf.reduce_all(x > -5, axis=0)",
    "tf.math.reduce_std(x)", "tf.math.reduce_variance(x, 0)", "tf.argmax(x, 1)", "tf.argmin(x, axis=0)",
    "tf.argmax(x, 1, output_type=tf.int32)", "tf.cumsum(x, 1)", "tf.cumsum(x, 0, exclusive=True, reverse=True)",
    "tf.math.top_k(x, 2)", "tf.math.count_nonzero(i > 2)",
    # shape and layout
    "tf.reshape(x, [4, 3])", "tf.reshape(x, [-1])", "tf.transpose(x)", "tf.transpose(img, [0, 3, 1, 2])",
    "tf.expand_dims(x, 0)", "tf.squeeze(tf.zeros([1, 3, 1]))", "tf.squeeze(tf.zeros([1, 3, 1]), [2])",
    "tf.concat([x, y], 0)", "tf.concat([x, y], axis=-1)", "tf.stack([x, y])", "tf.stack([x, y], axis=1)",
    "tf.unstack(x)", "tf.split(x, 2, axis=1)", "tf.split(x, [1, 3], 1)", "tf.slice(x, [1, 0], [2, 3])",
    "tf.tile(x, [2, 1])", "tf.broadcast_to(tf.constant([1, 2]), [3, 2])", "tf.reverse(x, [1])",
    "tf.pad(x, [[1, 0], [0, 2]])", "tf.pad(x, [[1, 1], [1, 1]], mode='REFLECT')", "tf.shape(x)",
    "tf.size(x)", "tf.rank(img)", "tf.constant(x).shape", "tf.constant(x).dtype", "tf.constant(x).ndim",
    # indexing
    "tf.constant(x)[1]", "tf.constant(x)[-1, ::2]", "tf.constant(x)[:, 1:3]", "tf.constant(x)[::-1]",
    "tf.constant(x)[..., 0]", "tf.constant(x)[tf.newaxis, :, None].shape", "tf.constant(x)[1:, tf.constant(2)]",
    "tf.constant(x)[x > 0]", "tf.gather(x, [2, 0])", "tf.gather(x, [[0, 1]], axis=1)",
    "tf.gather_nd(x, [[0, 1], [2, 3]])", "tf.scatter_nd([[1], [0]], tf.constant([[1.0, 2.0], [3.0, 4.0]]), [3, 2])",
    "tf.one_hot([0, 2, 1], 3)", "tf.one_hot([0, 2], 3, on_value=5.0, off_value=-1.0)",
    "tf.boolean_mask(x, [True, False, True])", "tf.sequence_mask([1, 3], 4)",
    # nn
    "tf.nn.relu(x)", "tf.nn.relu6(x * 10)", "tf.nn.elu(x)", "tf.nn.selu(x)", "tf.nn.gelu(x)",
    "tf.nn.gelu(x, approximate=True)", "tf.nn.softplus(x)", "tf.nn.leaky_relu(x)", "tf.nn.silu(x)",
    "tf.nn.softmax(x)", "tf.nn.log_softmax(x, axis=0)", "tf.nn.sigmoid(x)", "tf.nn.l2_normalize(x, 1)",
    "tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x)",
    "tf.nn.softmax_cross_entropy_with_logits(labels=tf.nn.softmax(y), logits=x)",
    "tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.sigmoid(y), logits=x)",
    "tf.nn.conv2d(img, k, strides=1, padding='SAME')", "tf.nn.conv2d(img, k, strides=[1, 2, 2, 1], padding='VALID')",
    "tf.nn.conv2d(img, k, 1, 'SAME', dilations=2)", "tf.nn.depthwise_conv2d(img, dk, [1, 1, 1, 1], 'SAME')",
    "tf.nn.max_pool2d(img, 2, 2, 'VALID')", "tf.nn.avg_pool2d(img, 3, 1, 'SAME')", "tf.nn.moments(x, [0])",
    "tf.nn.batch_normalization(x, 0.1, 2.0, 0.5, 1.5, 1e-3)", "tf.nn.bias_add(x, [1.0, 2.0, 3.0, 4.0])",
    "tf.nn.l2_loss(x)", "tf.linalg.matmul(x, y, transpose_b=True)", "tf.tensordot(x, y, [[1], [1]])",
    "tf.linalg.matrix_transpose(x)", "tf.linalg.trace(tf.eye(3) * 2)", "tf.linalg.norm(x)",
    # errors TensorFlow raises too
    "tf.reshape(x, [5, 3])", "tf.matmul(x, y)", "tf.concat([x, tf.zeros([3, 2, 1])], 0)",
    "tf.constant([1.5], dtype=tf.int32)", "tf.constant([[1], [2, 3]])", "tf.constant(x)[5]",
]


@pytest.mark.parametrize("expr", ROWS)
def test_row_matches_tensorflow(expr, tf_oracle):
    try:
        theirs = tf_oracle.run(expr, **V)
        their_error = None
    except OracleError as e:
        their_error = e
    env = {"tf": tf, "np": np}
    env.update(V)
    if their_error is not None:
        with pytest.raises(Exception) as info:
            eval(expr, env)
        assert not isinstance(info.value, (AttributeError, NameError, NotImplementedError)), (
            f"TensorFlow raises {their_error.cls}; deepflow raises {info.type.__name__}: {info.value}")
        return
    ours = to_oracle_form(eval(expr, env))
    assert_same(ours, theirs, rtol=2e-5, atol=2e-5)
