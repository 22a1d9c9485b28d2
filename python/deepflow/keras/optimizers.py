# SPDX-License-Identifier: Apache-2.0
"""tf.keras.optimizers: the C++ optimizers made from Keras configs (SGD, Adam, AdamW,
RMSprop, Adagrad, ...) and their learning-rate schedules."""
import json

from .. import _deepflow
from . import schedules  # noqa: F401


class Optimizer:
    """An optimizer; built-in classes wrap the C++ optimizer of the same Keras class."""

    _keras_class = None
    _defaults = {}

    def __init__(self, *args, **kwargs):
        for k, v in zip(self._defaults, args):
            kwargs[k] = v
        unknown = [k for k in kwargs if k not in self._defaults and k not in _COMMON]
        if unknown:
            raise TypeError(f"Unrecognized keyword arguments passed to {type(self).__name__}: {unknown}")
        cfg = {**self._defaults, **kwargs}
        lr = cfg.get("learning_rate")
        if hasattr(lr, "_df_keras_config"):
            cfg["learning_rate"] = lr._df_keras_config()
        for k in [k for k, v in cfg.items() if v is None]:
            cfg.pop(k)
        self._config = cfg
        self._impl = _deepflow._optimizer_from_config(json.dumps({"class_name": self._keras_class, "config": cfg}))

    def apply_gradients(self, grads_and_vars, name=None, skip_gradients_aggregation=False, **kwargs):
        pairs = list(grads_and_vars)
        # The slots are made now (eagerly, even inside a trace), as Keras builds on first use.
        self._impl.build([v for g, v in pairs if g is not None])
        self._impl.apply_gradients(pairs)
        return self.iterations

    def apply(self, grads, trainable_variables=None):
        return self.apply_gradients(zip(grads, trainable_variables))

    def minimize(self, loss, var_list, tape=None):
        from ..backprop import GradientTape
        if tape is None:
            with GradientTape() as tape:
                value = loss() if callable(loss) else loss
        else:
            value = loss
        grads = tape.gradient(value, var_list)
        return self.apply_gradients(zip(grads, var_list))

    def build(self, var_list):
        self._impl.build(list(var_list))

    @property
    def learning_rate(self):
        return self._impl._learning_rate

    @learning_rate.setter
    def learning_rate(self, value):
        self._impl._set_learning_rate(float(value))

    lr = learning_rate

    @property
    def iterations(self):
        from .._variables import Variable
        return Variable._share(self._impl.iterations)

    @property
    def variables(self):
        from .._variables import Variable
        return [Variable._share(v) for v in self._impl.variables]

    @property
    def name(self):
        return self._impl.name

    def get_config(self):
        return json.loads(self._impl._config_json())

    @classmethod
    def from_config(cls, config):
        return cls(**config)


_COMMON = {"weight_decay", "clipnorm", "clipvalue", "global_clipnorm", "use_ema", "ema_momentum",
           "ema_overwrite_frequency", "loss_scale_factor", "gradient_accumulation_steps", "name"}


def _optimizer(cls_name, **defaults):
    return type(cls_name, (Optimizer,), {"_keras_class": cls_name, "_defaults": defaults, "__module__": __name__,
                                         "__doc__": f"tf.keras.optimizers.{cls_name}"})


SGD = _optimizer("SGD", learning_rate=0.01, momentum=0.0, nesterov=False)
Adam = _optimizer("Adam", learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, amsgrad=False)
AdamW = _optimizer("AdamW", learning_rate=0.001, weight_decay=0.004, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                   amsgrad=False)
RMSprop = _optimizer("RMSprop", learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7, centered=False)
Adagrad = _optimizer("Adagrad", learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7)

_BY_NAME = {"sgd": SGD, "adam": Adam, "adamw": AdamW, "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier):
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str):
        cls = _BY_NAME.get(identifier.lower())
        if cls is None:
            raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}; known: {sorted(_BY_NAME)}")
        return cls()
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}")
