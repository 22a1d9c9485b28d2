# SPDX-License-Identifier: Apache-2.0
"""tf.Module: a named container of variables, sub-modules and tf.functions, found through
its attributes (and lists, tuples and dicts in them), as TensorFlow tracks them. What
tf.train.Checkpoint and tf.saved_model.save walk."""
import re

from . import _deepflow

_SKIP = frozenset(("_name", "_scope_name"))


def _camel_to_snake(name):
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def trackable_children(obj):
    """(name, value) of what an object tracks: a dict's items, a list's or tuple's entries
    by index, and for other objects their attributes (Keras layers are leaves: their
    weights are tracked by the C++ layer)."""
    if isinstance(obj, dict):
        return [(str(k), obj[k]) for k in sorted(obj, key=str)]
    if isinstance(obj, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(obj)]
    d = getattr(obj, "__dict__", None)
    if d is None:
        return []
    # Sorted by name, as TensorFlow walks a module's attributes.
    return [(k, d[k]) for k in sorted(d)
            if not (k.startswith("__") or k.startswith("_df") or k in _SKIP or k in type(obj).__dict__.get(
                "_TF_MODULE_IGNORED_PROPERTIES", ()))]


def _nested_leaves(value):
    """The values inside lists, tuples and dicts (dicts by sorted key), as nest.flatten."""
    if isinstance(value, dict):
        return [x for k in sorted(value, key=str) for x in _nested_leaves(value[k])]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _nested_leaves(v)]
    return [value]


def _walk(obj, seen, want):
    """The variables `want` accepts, in TensorFlow's order: a module's own variables (its
    attributes sorted by name), then those of its sub-modules, each variable once."""
    submodules = []
    for _, value in trackable_children(obj):
        for leaf in _nested_leaves(value):
            if isinstance(leaf, _deepflow.Variable):
                if leaf._id not in seen:
                    seen.add(leaf._id)
                    if want(leaf):
                        yield leaf
            elif isinstance(leaf, (Module, _deepflow._Layer)) and id(leaf) not in seen:
                seen.add(id(leaf))
                submodules.append(leaf)
    for m in submodules:
        if isinstance(m, Module):
            yield from _walk(m, seen, want)
        else:
            for v in m.weights:
                if v._id not in seen:
                    seen.add(v._id)
                    if want(v):
                        yield v


class Module:
    """tf.Module(name=None): groups variables and functions; `variables`,
    `trainable_variables` and `submodules` are found through the attributes."""

    _TF_MODULE_IGNORED_PROPERTIES = frozenset()

    def __init__(self, name=None):
        if name is None:
            name = _camel_to_snake(type(self).__name__)
        elif not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-]*", name):
            raise ValueError(f"'{name}' is not a valid module name. Module names must be valid Python 3 identifiers.")
        self._name = name
        self._scope_name = name

    @property
    def name(self):
        return self._name

    @property
    def name_scope(self):
        from . import name_scope
        return name_scope(self._scope_name)

    @property
    def variables(self):
        return tuple(_walk(self, {id(self)}, lambda v: True))

    @property
    def trainable_variables(self):
        return tuple(_walk(self, {id(self)}, lambda v: v.trainable))

    @property
    def non_trainable_variables(self):
        return tuple(_walk(self, {id(self)}, lambda v: not v.trainable))

    @property
    def submodules(self):
        out, seen, stack = [], {id(self)}, [self]
        while stack:
            for _, value in trackable_children(stack.pop(0)):
                items = value if isinstance(value, (list, tuple)) else (
                    value.values() if isinstance(value, dict) else (value,))
                for item in items:
                    if isinstance(item, (Module, _deepflow._Layer)) and id(item) not in seen:
                        seen.add(id(item))
                        out.append(item)
                        if isinstance(item, Module):
                            stack.append(item)
        return tuple(out)

    @classmethod
    def with_name_scope(cls, method):
        """Decorates a method so that it runs inside the module's name scope."""
        import functools

        @functools.wraps(method)
        def wrapped(self, *args, **kwargs):
            with self.name_scope:
                return method(self, *args, **kwargs)
        return wrapped

    def __repr__(self):
        return f"<{type(self).__module__}.{type(self).__name__} object at 0x{id(self):x}>"
