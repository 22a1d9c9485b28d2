# SPDX-License-Identifier: Apache-2.0
"""tf.keras.optimizers: the C++ optimizers made from Keras configs (SGD, Adam, AdamW,
RMSprop, Adagrad, ...) and their learning-rate schedules.

A Python subclass of Optimizer follows Keras 3's contract: __init__ passes the base
arguments to super().__init__, build(var_list) makes slots with
add_variable_from_reference, update_step(gradient, variable, learning_rate) updates one
variable with assign / assign_add / assign_sub, get_config adds its own arguments. It runs
in the C++ apply_gradients (clipping and weight decay included), eagerly or traced inside
fit's train step, and its slots are checkpointed like the built-in optimizers'.
"""
import json
import re

from .. import _deepflow
from . import schedules  # noqa: F401


class Optimizer:
    """An optimizer; built-in classes wrap the C++ optimizer of the same Keras class."""

    _keras_class = None
    _defaults = {}

    def __init__(self, *args, **kwargs):
        if self._keras_class is None:
            self._df_init_custom(*args, **kwargs)
            return
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

    # --- a Python subclass (Keras 3's build / update_step contract) ---
    def _df_init_custom(self, learning_rate=0.001, weight_decay=None, clipnorm=None, clipvalue=None,
                        global_clipnorm=None, name=None, **kwargs):
        unknown = [k for k in kwargs if k not in _COMMON]
        if unknown:
            raise TypeError(f"Unrecognized keyword arguments passed to {type(self).__name__}: {unknown}")
        schedule = ""
        if hasattr(learning_rate, "_df_keras_config"):
            schedule, learning_rate = json.dumps(learning_rate._df_keras_config()), 0.0
        name = name or re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", type(self).__name__).lower()
        self._config = {}
        self._df_vars = []           # the variables build_slots was asked for, in order
        self._df_index = {}          # variable id -> its index in _df_vars
        self._df_built = False
        self._impl = _Hooks(self, name, float(learning_rate), schedule, clipnorm, clipvalue, global_clipnorm,
                            weight_decay)

    @property
    def built(self):
        return self.__dict__.get("_df_built", True)

    def _df_register(self, variable):
        if variable._id not in self._df_index:
            self._df_index[variable._id] = len(self._df_vars)
            self._df_vars.append(variable)

    def _df_update(self, gradient, variable, learning_rate):
        from .. import init_scope
        from .._variables import Variable
        var = Variable._share(variable)
        if not self._df_built:
            with init_scope():
                self.build([Variable._share(v) for v in self._df_vars])
            self._df_built = True
        self.update_step(gradient, var, learning_rate)

    def _get_variable_index(self, variable):
        return self._df_index[variable._id]

    def add_variable_from_reference(self, reference_variable, name=None, initializer="zeros"):
        """A slot like reference_variable (its dtype and shape), zero-initialized."""
        from .._variables import Variable
        if initializer != "zeros":
            raise NotImplementedError("[Optimizer.add_variable_from_reference] only initializer='zeros' is supported")
        return Variable._share(self._impl._add_slot(reference_variable, name or "slot"))

    def add_variable(self, shape, initializer="zeros", dtype=None, aggregation="none", layout=None, name=None):
        from .. import zeros
        from .._variables import Variable
        if initializer != "zeros":
            raise NotImplementedError("[Optimizer.add_variable] only initializer='zeros' is supported")
        return Variable(zeros(shape, dtype or "float32"), trainable=False, name=name or "variable")

    def assign(self, variable, value):
        variable.assign(value)

    def assign_add(self, variable, value):
        variable.assign_add(value)

    def assign_sub(self, variable, value):
        variable.assign_sub(value)

    def update_step(self, gradient, variable, learning_rate):
        raise NotImplementedError(f"[{type(self).__name__}] an Optimizer subclass must define update_step()")

    def apply_gradients(self, grads_and_vars, name=None, skip_gradients_aggregation=False, **kwargs):
        pairs = list(grads_and_vars)
        # The slots are made now (eagerly, even inside a trace), as Keras builds on first use.
        self._impl.build([v for g, v in pairs if g is not None])
        self._impl.apply_gradients(pairs)
        return self.iterations

    def apply(self, grads, trainable_variables=None):
        return self.apply_gradients(zip(grads, trainable_variables))


    def build(self, variables):
        if self._keras_class is None:
            return  # a subclass's super().build(): the variables are known already
        self._impl.build(list(variables))

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
        if self._keras_class is None:
            return json.loads(self._impl._base_config_json())
        return json.loads(self._impl._config_json())

    @classmethod
    def from_config(cls, config, custom_objects=None):
        return cls(**config)


class _Hooks(_deepflow._Optimizer):
    """The C++ optimizer of a Python subclass: its hooks call the Python object (held
    weakly: the Python optimizer owns this object)."""

    def __init__(self, owner, *args):
        import weakref
        _deepflow._Optimizer.__init__(self, *args)
        self._owner = weakref.ref(owner)

    def _df_build_slot(self, variable):
        self._owner()._df_register(variable)

    def _df_update_step(self, gradient, variable, learning_rate):
        self._owner()._df_update(gradient, variable, learning_rate)

    def _df_config_json(self):
        owner = self._owner()
        return json.dumps(owner.get_config() if owner is not None else json.loads(self._base_config_json()))


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
