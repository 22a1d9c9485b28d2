# SPDX-License-Identifier: Apache-2.0
"""tf.nn: activations, losses on logits, convolution, pooling, normalization, dropout.
Images are NHWC, as TensorFlow's default data_format."""
from . import _deepflow
from . import dtypes
from ._op_util import _op, _t, _axes, _ints, _pair


def _hw(v, what):
    """TF's 1, 2 or 4 entry strides/ksize/dilations -> [h, w] (NHWC)."""
    v = _ints(v)
    if len(v) == 1:
        return [v[0], v[0]]
    if len(v) == 2:
        return v
    if len(v) == 4:
        if v[0] != 1 or v[3] != 1:
            raise ValueError(f"[tf.nn] {what} in the batch and depth dimensions must be 1, got {v}")
        return v[1:3]
    raise ValueError(f"[tf.nn] {what} must have 1, 2 or 4 entries, got {v}")


def _nhwc(data_format):
    if data_format not in (None, "NHWC"):
        raise ValueError(f"[tf.nn] data_format {data_format!r} is not supported here; use NHWC")


def relu(features, name=None):
    return _op("relu", [_t(features)])


def relu6(features, name=None):
    return _deepflow.relu6(_t(features))


def elu(features, name=None):
    return _deepflow.elu(_t(features), 1.0)


def selu(features, name=None):
    return _deepflow.selu(_t(features))


def gelu(features, approximate=False, name=None):
    return _deepflow.gelu(_t(features), bool(approximate))


def softplus(features, name=None):
    return _deepflow.softplus(_t(features))


def softsign(features, name=None):
    x = _t(features)
    return x / (_op("abs", [x]) + 1.0)


def leaky_relu(features, alpha=0.2, name=None):
    return _deepflow.leaky_relu(_t(features), float(alpha))


def silu(features, beta=1.0, name=None):
    x = _t(features)
    return x * _op("sigmoid", [x * beta if beta != 1.0 else x])


swish = silu


def sigmoid(x, name=None):
    return _op("sigmoid", [_t(x)])


def tanh(x, name=None):
    return _op("tanh", [_t(x)])


def softmax(logits, axis=None, name=None):
    return _deepflow.softmax(_t(logits), -1 if axis is None else int(axis))


def log_softmax(logits, axis=None, name=None):
    return _deepflow.log_softmax(_t(logits), -1 if axis is None else int(axis))


def softmax_cross_entropy_with_logits(labels, logits, axis=-1, name=None):
    labels, logits = _pair(labels, logits)
    return _deepflow.softmax_cross_entropy_with_logits(labels, logits)


def sparse_softmax_cross_entropy_with_logits(labels, logits, name=None):
    return _deepflow.sparse_softmax_cross_entropy_with_logits(_t(labels), _t(logits))


def sigmoid_cross_entropy_with_logits(labels=None, logits=None, name=None):
    labels, logits = _pair(labels, logits)
    return _deepflow.sigmoid_cross_entropy_with_logits(labels, logits)


def l2_loss(t, name=None):
    t = _t(t)
    return _op("reduce_sum", [_op("square", [t])], {"axes": [], "keepdims": False}) * 0.5


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    from . import _ops
    x = _t(x)
    sq = _ops.reduce_sum(_ops.square(x), axis if axis is not None else dim, keepdims=True)
    return x * _ops.rsqrt(_ops.maximum(sq, epsilon))


def bias_add(value, bias, data_format=None, name=None):
    _nhwc(data_format)
    value, bias = _pair(value, bias)
    return value + bias


def conv2d(input, filters, strides, padding, data_format="NHWC", dilations=None, name=None):  # noqa: A002
    _nhwc(data_format)
    if not isinstance(padding, str):
        from . import _array_ops
        pads = [[int(a), int(b)] for a, b in padding]
        input = _array_ops.pad(input, pads)
        padding = "VALID"
    return _op("conv2d", [_t(input), _t(filters)], {
        "strides": _hw(strides, "strides"), "padding": padding.upper(),
        "dilations": _hw(dilations if dilations is not None else 1, "dilations")})


def convolution(input, filters, strides=None, padding="VALID", data_format=None, dilations=None,  # noqa: A002
                name=None):
    return conv2d(input, filters, strides if strides is not None else 1, padding, data_format or "NHWC",
                  dilations)


def depthwise_conv2d(input, filter, strides, padding, data_format=None, dilations=None, name=None):  # noqa: A002
    _nhwc(data_format)
    return _deepflow.depthwise_conv2d(_t(input), _t(filter), _hw(strides, "strides"), padding.upper(),
                                      _hw(dilations if dilations is not None else 1, "dilations"))


def conv2d_transpose(input, filters, output_shape, strides, padding="SAME", data_format="NHWC",  # noqa: A002
                     dilations=None, name=None):
    _nhwc(data_format)
    return _deepflow.conv2d_transpose(_t(input), _t(filters), _ints(output_shape), _hw(strides, "strides"),
                                      padding.upper(), _hw(dilations if dilations is not None else 1, "dilations"))


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    _nhwc(data_format)
    return _op("max_pool", [_t(input)], {"ksize": _hw(ksize, "ksize"), "strides": _hw(strides, "strides"),
                                         "padding": padding.upper()})


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    _nhwc(data_format)
    return _op("avg_pool", [_t(input)], {"ksize": _hw(ksize, "ksize"), "strides": _hw(strides, "strides"),
                                         "padding": padding.upper()})


max_pool = max_pool2d
avg_pool = avg_pool2d


def moments(x, axes, shift=None, keepdims=False, name=None):
    mean, var = _deepflow.moments(_t(x), _axes(axes), bool(keepdims))
    return mean, var


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name=None):
    x = _t(x)
    one = _t(1.0, x)
    zero = _t(0.0, x)
    return _deepflow.batch_normalization(x, _t(mean, x), _t(variance, x), _t(offset, x) if offset is not None
                                         else zero, _t(scale, x) if scale is not None else one,
                                         float(variance_epsilon))


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001, data_format="NHWC",
                     is_training=True, name=None, exponential_avg_factor=1.0):
    _nhwc(data_format)
    x = _t(x)
    from . import _array_ops
    empty = _array_ops.zeros([0], dtype=x.dtype)
    return tuple(_deepflow.fused_batch_norm(x, _t(scale, x), _t(offset, x),
                                            _t(mean, x) if mean is not None else empty,
                                            _t(variance, x) if variance is not None else empty,
                                            float(epsilon), bool(is_training)))


def dropout(x, rate, noise_shape=None, seed=None, name=None):
    if noise_shape is not None:
        raise NotImplementedError("[tf.nn.dropout] noise_shape is not supported here")
    return _deepflow.dropout(_t(x), float(rate), seed)


def compute_average_loss(per_example_loss, sample_weight=None, global_batch_size=None):
    from . import _ops
    loss = _t(per_example_loss)
    if sample_weight is not None:
        loss = loss * _t(sample_weight, loss)
    if global_batch_size is None:
        n = loss._shape[0] if loss.ndim else 1
        if n is None:
            return _ops.reduce_mean(loss)
        global_batch_size = n
    return _ops.reduce_sum(loss) / float(global_batch_size)


def top_k(input, k=1, sorted=True, index_type="int32", name=None):  # noqa: A002
    from . import _ops
    return _ops.top_k(input, k, sorted, index_type)


def embedding_lookup(params, ids, max_norm=None, name=None):
    from . import _array_ops
    return _array_ops.gather(params, ids)


def zero_fraction(value, name=None):
    from . import _ops
    v = _t(value)
    return _ops.reduce_mean(_ops.cast(_ops.equal(v, _ops.zeros_like(v)), dtypes.float32))
