# SPDX-License-Identifier: Apache-2.0
"""tf.keras.metrics: stateful metrics over the C++ ones (update_state / result /
reset_state), by object or by name in compile.

A Python subclass of Metric follows Keras 3's contract: state made with add_variable (or
add_weight), update_state(y_true, y_pred, sample_weight=None) assigning to it, result(),
and reset_state() (by default every state variable back to its initial value). compile
hands it to the C++ training loop, which traces its update_state into the train step.
"""
import json

from .. import _deepflow


class Metric:
    """A metric; built-in classes wrap the C++ metric of the same Keras class."""

    _keras_class = None

    def __init__(self, dtype=None, name=None, threshold=0.5, k=5, num_thresholds=200, _impl=None, **kwargs):
        cls = self._keras_class
        if cls is None and _impl is None:
            if kwargs:
                raise TypeError(f"Unrecognized keyword arguments passed to {type(self).__name__}: {list(kwargs)}")
            self._df_state = []  # (variable, initial value)
            self._df_dtype = dtype or "float32"
            self._impl = _Hooks(self, name or _default_name(type(self).__name__))
            return
        self._impl = _impl if _impl is not None else _deepflow._metric_make(
            cls, name or _default_name(cls), float(threshold if threshold is not None else 0.5),
            int(k if cls and "TopK" in cls else num_thresholds))

    @property
    def name(self):
        return self._impl.name

    def update_state(self, y_true=None, y_pred=None, sample_weight=None):
        self._impl.update_state(y_true, y_pred if y_pred is not None else y_true, sample_weight)

    def result(self):
        return self._impl.result()

    def reset_state(self):
        if hasattr(self, "_df_state"):
            for v, value in self._df_state:
                v.assign(value)
            return
        self._impl.reset_state()


    def __call__(self, *args, **kwargs):
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name, "dtype": getattr(self, "_df_dtype", "float32")}

    # --- what a Python subclass uses ---
    def add_variable(self, shape=(), initializer="zeros", dtype=None, aggregation="sum", name=None):
        """A state variable (non-trainable), restored to its initial value by reset_state()."""
        from .. import init_scope
        from .._variables import Variable
        from . import initializers
        with init_scope():
            init = initializer
            if isinstance(init, str):
                init = {"zeros": initializers.Zeros, "ones": initializers.Ones}.get(init.lower())
                if init is None:
                    raise ValueError(f"[{type(self).__name__}.add_variable] initializer {initializer!r}: give "
                                     "'zeros', 'ones' or an initializer object")
                init = init()
            value = init(list(shape), dtype=dtype or self._df_dtype)
            v = Variable(value, trainable=False, name=name or "variable")
        self._df_state.append((v, value))
        return v

    def add_weight(self, shape=(), initializer="zeros", dtype=None, name=None):
        return self.add_variable(shape, initializer, dtype, name=name)

    @property
    def variables(self):
        if hasattr(self, "_df_state"):
            return [v for v, _ in self._df_state]
        from .._variables import Variable
        return [Variable._share(v) for v in getattr(self._impl, "_variables", [])]

    @property
    def dtype(self):
        return getattr(self, "_df_dtype", "float32")

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


class _Hooks(_deepflow._Metric):
    """The C++ metric of a Python subclass: the training loop calls these, which call the
    Python object (held weakly: it owns this one)."""

    def __init__(self, owner, name):
        import weakref
        _deepflow._Metric.__init__(self, name)
        self._owner = weakref.ref(owner)

    def _df_update_state(self, y_true, y_pred, sample_weight):
        self._owner().update_state(y_true, y_pred, sample_weight=sample_weight)

    def _df_result(self):
        return self._owner().result()

    def _df_reset_state(self):
        self._owner().reset_state()

    def _df_class_name(self):
        return type(self._owner()).__name__

    def _df_config_json(self):
        return json.dumps(self._owner().get_config())


def _default_name(cls):
    import re
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", cls)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def _metric_class(cls_name, **params):
    def __init__(self, *args, name=None, dtype=None, **kwargs):
        for k, v in zip(params, args):
            kwargs[k] = v
        Metric.__init__(self, name=name, dtype=dtype, **{**params, **kwargs})
    return type(cls_name, (Metric,), {"__init__": __init__, "_keras_class": cls_name, "__module__": __name__,
                                      "__doc__": f"tf.keras.metrics.{cls_name}"})


Mean = _metric_class("Mean")
Accuracy = _metric_class("Accuracy")
BinaryAccuracy = _metric_class("BinaryAccuracy", threshold=0.5)
CategoricalAccuracy = _metric_class("CategoricalAccuracy")
SparseCategoricalAccuracy = _metric_class("SparseCategoricalAccuracy")
SparseTopKCategoricalAccuracy = _metric_class("SparseTopKCategoricalAccuracy", k=5)
TopKCategoricalAccuracy = _metric_class("TopKCategoricalAccuracy", k=5)
Precision = _metric_class("Precision", thresholds=None)
Recall = _metric_class("Recall", thresholds=None)
AUC = _metric_class("AUC", num_thresholds=200)
MeanSquaredError = _metric_class("MeanSquaredError")
MeanAbsoluteError = _metric_class("MeanAbsoluteError")


def _precision_fix(cls):
    base = cls.__init__

    def __init__(self, thresholds=None, top_k=None, class_id=None, name=None, dtype=None):
        if top_k is not None or class_id is not None:
            raise NotImplementedError(f"[keras.metrics.{cls.__name__}] top_k and class_id are not supported")
        base(self, name=name, dtype=dtype, threshold=0.5 if thresholds is None else float(thresholds))
    cls.__init__ = __init__


_precision_fix(Precision)
_precision_fix(Recall)


class _Wrapped(Metric):
    def __init__(self, impl):
        Metric.__init__(self, _impl=impl)


def _wrap_cpp_metric(impl):
    return _Wrapped(impl)


def _cpp_metric(m):
    """What compile hands to C++: a name or a C++ metric object."""
    if isinstance(m, str):
        return m
    if isinstance(m, Metric):
        return m._impl
    if isinstance(m, type) and issubclass(m, Metric):
        return m()._impl
    raise ValueError(f"[Model.compile] a metric must be a name or a tf.keras.metrics.Metric, got {m!r}")


def get(identifier):
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str):
        return _Wrapped(_deepflow._metric_get(identifier))
    raise ValueError(f"Could not interpret metric identifier: {identifier!r}")
