# SPDX-License-Identifier: Apache-2.0
"""tf.saved_model.load: a SavedModel as a Python object whose `signatures` run the saved
functions, and, for what tf.saved_model.save wrote, the saved object's attributes again:
its variables, sub-objects and tf.functions (`loaded.f(x)` picks the saved trace whose
inputs match, as TensorFlow's restored functions do). A Keras model's directory loads
with its serving signature, callable as `loaded.serve(x)` and `loaded(x)`."""
import json
import os

from .. import _deepflow
from .. import dtypes
from .. import nest
from .._function import TensorSpec
from ._save import FORMAT, FUNCTION_KEY_PREFIX

Tensor = _deepflow.Tensor


def _spec(dtype, dims, name=None):
    return TensorSpec([None if d < 0 else d for d in dims], dtypes.from_enum(dtype), name)


class _Signature:
    """One signature: call with keyword tensors, get a dict of output tensors."""

    def __init__(self, model, key):
        self._model, self._key = model, key
        self._inputs = {name: _spec(dt, dims, name) for name, dt, dims in model._inputs(key)}
        self._outputs = {name: _spec(dt, dims, name) for name, dt, dims in model._outputs(key)}
        self._order = list(self._inputs)

    @property
    def structured_input_signature(self):
        return ((), dict(self._inputs))

    @property
    def structured_outputs(self):
        return dict(self._outputs)

    @property
    def name(self):
        return self._key

    def _run(self, feeds):
        from .._op_util import convert_to_tensor
        given = {k: convert_to_tensor(v, dtype=self._inputs[k].dtype) if k in self._inputs else v
                 for k, v in feeds.items()}
        return self._model._call(self._key, given)

    def __call__(self, *args, **kwargs):
        if args:
            if len(args) > len(self._order) - len(kwargs):
                raise TypeError(f"[signature {self._key}] takes keyword arguments {self._order}; got {len(args)} "
                                "positional")
            kwargs.update(zip([k for k in self._order if k not in kwargs], args))
        return self._run(kwargs)

    def __repr__(self):
        ins = ", ".join(f"{k}: {v}" for k, v in self._inputs.items())
        return f"<ConcreteFunction signature_wrapper({ins}) key={self._key!r}>"


class _RestoredFunction:
    """A saved tf.function: its saved traces, called positionally with tensors."""

    def __init__(self, model, name, entries):
        self._model, self._name = model, name
        self._traces = []
        for e in entries:
            specs = {n: _spec(dt, dims) for n, dt, dims in model._inputs(e["key"])}
            self._traces.append((e["key"], e["inputs"], [specs[n] for n in e["inputs"]], e["outputs"]))

    def __call__(self, *args, **kwargs):
        from .._op_util import convert_to_tensor
        flat = nest.flatten((list(args), dict(kwargs)))
        tensors = [x for x in flat if isinstance(x, (Tensor, _deepflow.Variable)) or not isinstance(x, (str, bool))]
        for key, names, specs, out in self._traces:
            if len(specs) != len(tensors):
                continue
            try:
                ts = [convert_to_tensor(x, dtype=s.dtype) for x, s in zip(tensors, specs)]
            except (TypeError, ValueError):
                continue
            if all(s.is_compatible_with(t) for s, t in zip(specs, ts)):
                result = self._model._call(key, dict(zip(names, ts)))
                flat_out = iter(result[f"output_{i}"] for i in range(len(result)))
                return _decode(out, flat_out)
        got = ", ".join(f"{TensorSpec.from_tensor(convert_to_tensor(x))}" for x in tensors)
        saved = "; ".join("(" + ", ".join(str(s) for s in specs) + ")" for _, _, specs, _ in self._traces)
        raise ValueError(f"Could not find matching concrete function to call loaded from the SavedModel. Got: "
                         f"({got}). Saved traces of '{self._name}': {saved}")

    @property
    def concrete_functions(self):
        return [k for k, *_ in self._traces]


def _decode(enc, it):
    if "t" in enc:
        return next(it)
    if "dict" in enc:
        return {k: _decode(v, it) for k, v in enc["dict"]}
    if "list" in enc:
        return [_decode(v, it) for v in enc["list"]]
    if "tuple" in enc:
        return tuple(_decode(v, it) for v in enc["tuple"])
    return enc.get("value")


class _Loaded:
    """What tf.saved_model.load returns (TensorFlow's AutoTrackable user object)."""

    def __init__(self, model):
        object.__setattr__(self, "_df_model", model)
        sigs = {k: _Signature(model, k) for k in model.signature_keys() if not k.startswith(FUNCTION_KEY_PREFIX)}
        self.signatures = sigs
        from .._variables import Variable
        self._df_variables = {name: Variable._share(v) for name, v in model.variables.items()}

    @property
    def variables(self):
        return list(self._df_variables.values())

    @property
    def trainable_variables(self):
        return [v for v in self._df_variables.values() if v.trainable]


class _Node:
    """A restored sub-object (a tf.Module or other attribute holder)."""


def _restore_node(node, model, variables, target):
    for name, var_name in node.get("variables", {}).items():
        setattr(target, name, variables[var_name])
    for name, entries in node.get("functions", {}).items():
        setattr(target, name, _RestoredFunction(model, name, entries))
    for name, child in node.get("children", {}).items():
        if child.get("kind") == "layer":
            obj = _Node()
            obj.weights = [variables[n] for n in child.get("weights", [])]
            obj.variables = obj.weights
            setattr(target, name, obj)
            continue
        obj = _Node()
        _restore_node(child, model, variables, obj)
        if child.get("kind") in ("list", "tuple"):
            items = [getattr(obj, str(i), None) for i in range(len(vars(obj)))]
            obj = items if child["kind"] == "list" else tuple(items)
        elif child.get("kind") == "dict":
            obj = dict(vars(obj))
        setattr(target, name, obj)


def load(export_dir, tags=None, options=None):
    """tf.saved_model.load(export_dir, tags=None, options=None)."""
    path = os.fspath(export_dir)
    tag_list = ["serve"] if tags is None else ([tags] if isinstance(tags, str) else list(tags))
    model = _deepflow._load_saved_model(path, tag_list)
    loaded = _Loaded(model)
    try:
        meta = json.loads(bytes(model.object_metadata).decode("utf-8") or "null")
    except (UnicodeDecodeError, ValueError):
        meta = None
    if isinstance(meta, dict) and meta.get("format") == FORMAT:
        _restore_node(meta["root"], model, loaded._df_variables, loaded)
    elif isinstance(meta, dict) and meta.get("format") == "deepflow.keras" and "serving_default" in loaded.signatures:
        serve = loaded.signatures["serving_default"]

        def call(*args, **kwargs):
            out = serve(*nest.flatten(list(args)), **kwargs)
            values = [out[k] for k in sorted(out)]
            return values[0] if len(values) == 1 else values
        object.__setattr__(loaded, "serve", call)
        object.__setattr__(loaded, "_df_call", call)
    return loaded


def _call_loaded(self, *args, **kwargs):
    fn = self.__dict__.get("_df_call") or self.__dict__.get("__call__")
    if fn is None:
        raise TypeError("'_UserObject' object is not callable")
    return fn(*args, **kwargs)


_Loaded.__call__ = _call_loaded
