# SPDX-License-Identifier: Apache-2.0
"""tf.keras.metrics: stateful metrics over the C++ ones (update_state / result /
reset_state), by object or by name in compile."""
from .. import _deepflow


class Metric:
    """A metric; built-in classes wrap the C++ metric of the same Keras class."""

    _keras_class = None

    def __init__(self, name=None, dtype=None, threshold=0.5, k=5, num_thresholds=200, _impl=None):
        cls = self._keras_class
        self._impl = _impl if _impl is not None else _deepflow._metric_make(
            cls, name or _default_name(cls), float(threshold if threshold is not None else 0.5),
            int(k if cls and "TopK" in cls else num_thresholds))

    @property
    def name(self):
        return self._impl.name

    def update_state(self, y_true, y_pred=None, sample_weight=None):
        self._impl.update_state(y_true, y_pred if y_pred is not None else y_true, sample_weight)

    def result(self):
        return self._impl.result()

    def reset_state(self):
        self._impl.reset_state()

    reset_states = reset_state

    def __call__(self, *args, **kwargs):
        self.update_state(*args, **kwargs)
        return self.result()

    def get_config(self):
        return {"name": self.name}

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}>"


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
