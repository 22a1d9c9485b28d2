# SPDX-License-Identifier: Apache-2.0
"""tf.keras.optimizers.schedules: learning-rate schedules, passed to an optimizer as its
learning_rate (the C++ optimizer reads them from their Keras config)."""


class LearningRateSchedule:
    _keras_class = None

    def __init__(self, **config):
        self._config = config

    def get_config(self):
        return dict(self._config)

    def _df_keras_config(self):
        return {"class_name": self._keras_class, "config": self.get_config()}

    def __call__(self, step):
        raise NotImplementedError("[schedules] evaluate a schedule through the optimizer's learning rate")


def _schedule(cls_name, names):
    def __init__(self, *args, **kwargs):
        for k, v in zip(names, args):
            kwargs[k] = v
        LearningRateSchedule.__init__(self, **kwargs)
    return type(cls_name, (LearningRateSchedule,), {"__init__": __init__, "_keras_class": cls_name,
                                                    "__module__": __name__})


ExponentialDecay = _schedule("ExponentialDecay", ["initial_learning_rate", "decay_steps", "decay_rate", "staircase"])
PiecewiseConstantDecay = _schedule("PiecewiseConstantDecay", ["boundaries", "values"])
CosineDecay = _schedule("CosineDecay", ["initial_learning_rate", "decay_steps", "alpha"])
