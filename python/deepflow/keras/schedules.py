# SPDX-License-Identifier: Apache-2.0
"""tf.keras.optimizers.schedules: learning-rate schedules, passed to an optimizer as its
learning_rate (the C++ optimizer reads them from their Keras config)."""
from ._serializable import KerasObject, keras_class


class LearningRateSchedule(KerasObject):
    """A Keras learning-rate schedule (the C++ optimizer evaluates it per step)."""

    def __call__(self, step):
        raise NotImplementedError("[schedules] evaluate a schedule through the optimizer's learning rate")


def _schedule(cls_name, names):
    return keras_class(LearningRateSchedule, cls_name, names, __name__)


ExponentialDecay = _schedule("ExponentialDecay", ["initial_learning_rate", "decay_steps", "decay_rate", "staircase"])
PiecewiseConstantDecay = _schedule("PiecewiseConstantDecay", ["boundaries", "values"])
CosineDecay = _schedule("CosineDecay", ["initial_learning_rate", "decay_steps", "alpha"])
