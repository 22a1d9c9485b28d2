# SPDX-License-Identifier: Apache-2.0
"""tf.keras.optimizers.schedules: learning-rate schedules, passed to an optimizer as its
learning_rate (the C++ optimizer reads them from their Keras config)."""
from ._serializable import KerasObject


class LearningRateSchedule(KerasObject):
    """A Keras learning-rate schedule: the C++ optimizer evaluates it per step from its
    config; calling it here gives the same value (eagerly or while tracing)."""

    def __call__(self, step):
        from .. import _ops
        return self._value(_ops.cast(step, "float32"), self.get_config())


def _float(x):
    from .. import _ops
    return _ops.convert_to_tensor(float(x), dtype="float32")


class ExponentialDecay(LearningRateSchedule):
    """lr * decay_rate ** (step / decay_steps), the exponent floored when staircase."""

    _keras_class = "ExponentialDecay"

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False, name="ExponentialDecay"):
        super().__init__(initial_learning_rate=initial_learning_rate, decay_steps=decay_steps,
                         decay_rate=decay_rate, staircase=staircase)

    @staticmethod
    def _value(step, c):
        from .. import _ops
        p = step / _float(c["decay_steps"])
        if c["staircase"]:
            p = _ops.floor(p)
        return _float(c["initial_learning_rate"]) * _ops.pow(_float(c["decay_rate"]), p)


class PiecewiseConstantDecay(LearningRateSchedule):
    """values[0] up to boundaries[0], values[i] up to boundaries[i], values[-1] after."""

    _keras_class = "PiecewiseConstantDecay"

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if len(values) != len(boundaries) + 1:
            raise ValueError("The length of boundaries should be 1 less than the length of values")
        super().__init__(boundaries=list(boundaries), values=list(values))

    @staticmethod
    def _value(step, c):
        from .. import _ops
        out = _float(c["values"][-1])
        for b, v in reversed(list(zip(c["boundaries"], c["values"]))):
            out = _ops.where(_ops.less_equal(step, _float(b)), _float(v), out)
        return out


class CosineDecay(LearningRateSchedule):
    """lr * ((1 - alpha) * 0.5 * (1 + cos(pi * min(step, decay_steps) / decay_steps)) + alpha)."""

    _keras_class = "CosineDecay"

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay"):
        super().__init__(initial_learning_rate=initial_learning_rate, decay_steps=decay_steps, alpha=alpha)

    @staticmethod
    def _value(step, c):
        import math
        from .. import _ops
        t = _ops.minimum(step, _float(c["decay_steps"])) / _float(c["decay_steps"])
        cosine = (_ops.cos(t * math.pi) + 1.0) * 0.5
        alpha = _float(c["alpha"])
        return _float(c["initial_learning_rate"]) * ((1.0 - alpha) * cosine + alpha)
