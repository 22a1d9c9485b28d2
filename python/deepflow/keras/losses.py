# SPDX-License-Identifier: Apache-2.0
"""tf.keras.losses: the C++ losses made from Keras configs, plus Python losses.

A loss object wraps a C++ loss (compile hands that to the C++ training loop); a Python
subclass that defines call(y_true, y_pred), or a plain function, becomes a C++ loss
calling back into Python (while the train step is traced only)."""
import json

from .. import _deepflow

Reduction = type("Reduction", (), {"AUTO": "sum_over_batch_size", "NONE": "none", "SUM": "sum",
                                   "SUM_OVER_BATCH_SIZE": "sum_over_batch_size"})


class Loss:
    """tf.keras.losses.Loss(name=None, reduction="sum_over_batch_size")."""

    _keras_class = None

    def __init__(self, name=None, reduction="sum_over_batch_size", dtype=None, **config):
        self.name = name or _snake(type(self).__name__)
        self.reduction = reduction or "sum_over_batch_size"
        self._config = config
        if self._keras_class is not None:
            cfg = {"name": self.name, "reduction": self.reduction, **config}
            self._impl = _deepflow._loss_from_config(json.dumps({"class_name": self._keras_class, "config": cfg}))
        else:
            self._impl = _deepflow._fn_loss(self.call, self.name, self.reduction)

    def call(self, y_true, y_pred):
        if self._keras_class is not None:
            return self._impl.call(y_true, y_pred)
        raise NotImplementedError("a Loss subclass must define call(y_true, y_pred)")

    def __call__(self, y_true, y_pred, sample_weight=None):
        return self._impl(y_true, y_pred, sample_weight)

    def get_config(self):
        return {"name": self.name, "reduction": self.reduction, **self._config}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _snake(name):
    import re
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def _builtin(cls_name, default_name, **defaults):
    def __init__(self, *args, **kwargs):
        names = list(defaults)
        for k, v in zip(names, args):
            kwargs[k] = v
        name = kwargs.pop("name", default_name)
        reduction = kwargs.pop("reduction", "sum_over_batch_size")
        kwargs.pop("dtype", None)
        unknown = [k for k in kwargs if k not in defaults]
        if unknown:
            raise TypeError(f"Unrecognized keyword arguments passed to {cls_name}: {unknown}")
        Loss.__init__(self, name=name, reduction=reduction, **{**defaults, **kwargs})
    return type(cls_name, (Loss,), {"__init__": __init__, "_keras_class": cls_name, "__module__": __name__,
                                    "__doc__": f"tf.keras.losses.{cls_name}"})


MeanSquaredError = _builtin("MeanSquaredError", "mean_squared_error")
MeanAbsoluteError = _builtin("MeanAbsoluteError", "mean_absolute_error")
Huber = _builtin("Huber", "huber_loss", delta=1.0)
BinaryCrossentropy = _builtin("BinaryCrossentropy", "binary_crossentropy", from_logits=False, label_smoothing=0.0,
                              axis=-1)
CategoricalCrossentropy = _builtin("CategoricalCrossentropy", "categorical_crossentropy", from_logits=False,
                                   label_smoothing=0.0, axis=-1)
SparseCategoricalCrossentropy = _builtin("SparseCategoricalCrossentropy", "sparse_categorical_crossentropy",
                                         from_logits=False, ignore_class=None)
KLDivergence = _builtin("KLDivergence", "kl_divergence")


class _FunctionLoss(Loss):
    def __init__(self, fn, name=None):
        self._fn = fn
        super().__init__(name=name or getattr(fn, "__name__", "loss"))

    def call(self, y_true, y_pred):
        return self._fn(y_true, y_pred)


def _functional(cls):
    def fn(y_true, y_pred):
        return cls(reduction="none")(y_true, y_pred)
    return fn


mse = MSE = _functional(MeanSquaredError)
mae = MAE = _functional(MeanAbsoluteError)


def _last_axis(who, axis):
    if axis not in (-1, None):
        raise NotImplementedError(f"[tf.keras.losses.{who}] axis={axis}: only the last axis is supported")


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    _last_axis("binary_crossentropy", axis)
    return BinaryCrossentropy(from_logits=from_logits, label_smoothing=label_smoothing,
                              reduction="none")(y_true, y_pred)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    _last_axis("categorical_crossentropy", axis)
    return CategoricalCrossentropy(from_logits=from_logits, label_smoothing=label_smoothing,
                                   reduction="none")(y_true, y_pred)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, ignore_class=None, axis=-1):
    _last_axis("sparse_categorical_crossentropy", axis)
    if ignore_class is not None:
        raise NotImplementedError("[tf.keras.losses.sparse_categorical_crossentropy] ignore_class is not supported yet")
    return SparseCategoricalCrossentropy(from_logits=from_logits, reduction="none")(y_true, y_pred)


def get(identifier):
    if identifier is None or isinstance(identifier, Loss):
        return identifier
    if isinstance(identifier, str):
        return identifier
    if callable(identifier):
        return _FunctionLoss(identifier)
    raise ValueError(f"Could not interpret loss identifier: {identifier!r}")


class _Named(Loss):
    """A loss given by name in compile, as an object (a custom train_step calls it)."""

    def __init__(self, name):
        self.name = name
        self.reduction = "sum_over_batch_size"
        self._config = {}
        self._impl = _deepflow._loss_get(name)

    def call(self, y_true, y_pred):
        return self._impl.call(y_true, y_pred)


def _python_loss(identifier):
    v = get(identifier)
    return _Named(v) if isinstance(v, str) else v


def _cpp_loss(identifier):
    """What compile hands to C++: a name or a C++ loss object."""
    v = get(identifier)
    if isinstance(v, str):
        return v
    return v._impl
