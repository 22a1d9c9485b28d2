# SPDX-License-Identifier: Apache-2.0
"""Element structures of tf.data.

The C++ pipeline moves flat tuples of tensors; the Python Dataset keeps the nested
structure of its elements as TensorSpecs (element_spec) and packs each flat tuple back.
As in TensorFlow's tf.data (not tf.nest): tuples, namedtuples and dicts are structure
(dict entries in sorted key order), a list is a value (converted to one tensor), and a
SparseTensor is a composite of three tensors (indices, values, dense_shape).
"""
import collections

import numpy as np

from .. import _deepflow
from .. import dtypes
from .._function import TensorSpec
from ..io._sparse import SparseTensor, SparseTensorSpec
from ..io._util import to_tensor  # noqa: F401  (used by the other data modules too)
from ..tensor_shape import TensorShape

Tensor = _deepflow.Tensor


def is_structure(x):
    return isinstance(x, (tuple, collections.abc.Mapping))


def _children(s):
    if isinstance(s, collections.abc.Mapping):
        return [s[k] for k in sorted(s)]
    return list(s)


def _rebuild(s, children):
    if isinstance(s, collections.abc.Mapping):
        by_key = dict(zip(sorted(s), children))
        return type(s)((k, by_key[k]) for k in s)
    if hasattr(s, "_fields"):
        return type(s)(*children)
    return tuple(children)


def map_structure(fn, s):
    """fn applied to every leaf (a TensorSpec, SparseTensorSpec, tensor or value)."""
    if is_structure(s):
        return _rebuild(s, [map_structure(fn, c) for c in _children(s)])
    return fn(s)


def flatten_up_to(spec, value, where="tf.data"):
    """The parts of `value` at the leaves of `spec` (each taken whole: a shape given as a
    tuple stays one leaf), as tf.nest.flatten_up_to. A list counts as a tuple here."""
    if not is_structure(spec):
        return [value]
    if isinstance(spec, collections.abc.Mapping):
        if not isinstance(value, collections.abc.Mapping) or sorted(value) != sorted(spec):
            raise ValueError(f"[{where}] {value!r} does not match the structure {spec!r}")
        return [x for k in sorted(spec) for x in flatten_up_to(spec[k], value[k], where)]
    if not isinstance(value, (tuple, list)) or len(value) != len(spec):
        raise ValueError(f"[{where}] {value!r} does not match the structure {spec!r}")
    return [x for s, v in zip(spec, value) for x in flatten_up_to(s, v, where)]


def leaves(s):
    if is_structure(s):
        out = []
        for c in _children(s):
            out.extend(leaves(c))
        return out
    return [s]


def flatten(value):
    """The flat tensors of an element (a SparseTensor gives its three)."""
    out = []
    for leaf in leaves(value):
        if isinstance(leaf, SparseTensor):
            out.extend([leaf.indices, leaf.values, leaf.dense_shape])
        else:
            out.append(leaf)
    return out


def flat_specs(spec):
    """The flat TensorSpecs of a structure of specs (a SparseTensorSpec gives three)."""
    out = []
    for leaf in leaves(spec):
        if isinstance(leaf, SparseTensorSpec):
            out.extend(leaf._component_specs)
        else:
            out.append(leaf)
    return out


def pack(spec, flat):
    """The element of structure `spec` made of the flat tensors."""
    it = iter(flat)

    def leaf(s):
        if isinstance(s, SparseTensorSpec):
            return SparseTensor(next(it), next(it), next(it))
        return next(it)
    return map_structure(leaf, spec)


def signature(spec):
    """[(dtype number, dims with -1)] of the flat specs, as the C++ side takes them."""
    sig = []
    for s in flat_specs(spec):
        if s.shape.rank is None:
            raise ValueError(f"[tf.data] a component of unknown rank is not supported here: {s}")
        sig.append((s.dtype._enum, [-1 if d is None else d for d in s.shape.as_list()]))
    return sig


def from_signature(sig):
    return [TensorSpec([None if d < 0 else d for d in dims], dtypes.from_enum(dt)) for dt, dims in sig]


def normalize(value, where="tf.data"):
    """A structure of tensors from a structure of values: each leaf (a list and a numpy
    array included) becomes one tensor, as tf.data's normalize_element."""
    def leaf(v):
        if isinstance(v, (Tensor, SparseTensor)):
            return v
        if v is None:
            raise TypeError(f"[{where}] None is not a supported element component")
        if isinstance(v, _deepflow.Variable):
            return v.value()
        if isinstance(v, np.ndarray):
            # A copy: tensors view numpy arrays, and a dataset outlives the call; TensorFlow
            # copies too, so a later change to the array is not seen by the pipeline.
            v = np.array(v)
        return to_tensor(v)
    return map_structure(leaf, value)


def spec_of(value):
    """The element_spec of a structure of tensors."""
    def leaf(t):
        if isinstance(t, SparseTensor):
            return SparseTensorSpec.from_value(t)
        return TensorSpec(t.shape, t.dtype)
    return map_structure(leaf, value)


def dense_specs(spec, where):
    """Checks that no component is sparse (transformations that stack or slice tensors)."""
    for leaf in leaves(spec):
        if isinstance(leaf, SparseTensorSpec):
            raise TypeError(f"[{where}] SparseTensor components are not supported here yet: {spec}")


def same_structure(a, b):
    """True when two spec structures have the same nesting, keys and leaf kinds."""
    if is_structure(a) or is_structure(b):
        if not (is_structure(a) and is_structure(b)):
            return False
        if isinstance(a, collections.abc.Mapping) != isinstance(b, collections.abc.Mapping):
            return False
        if isinstance(a, collections.abc.Mapping) and sorted(a) != sorted(b):
            return False
        ca, cb = _children(a), _children(b)
        return len(ca) == len(cb) and all(same_structure(x, y) for x, y in zip(ca, cb))
    return isinstance(a, SparseTensorSpec) == isinstance(b, SparseTensorSpec)


def most_specific_common(a, b):
    """The spec both a and b fit: equal dims kept, others None (concatenate, flat_map)."""
    ca, cb = leaves(a), leaves(b)
    out = []
    for x, y in zip(ca, cb):
        if isinstance(x, SparseTensorSpec):
            out.append(x if x == y else SparseTensorSpec(None, x.dtype))
            continue
        if x.dtype != y.dtype:
            raise TypeError(f"[Dataset.concatenate] Incompatible dataset elements:\n  {a} vs. \n  {b}")
        if x.shape.rank != y.shape.rank:
            raise TypeError(f"[tf.data] components of different ranks cannot be combined yet: {x} vs. {y}")
        dims = [d if d == e else None for d, e in zip(x.shape.as_list(), y.shape.as_list())]
        out.append(TensorSpec(dims, x.dtype))
    it = iter(out)
    return map_structure(lambda _: next(it), a)


def shape_of(s):
    """A padded_shapes entry as a TensorShape: a TensorShape, a list or tuple of ints or
    None (-1 for unknown), or a 1-D integer tensor."""
    if isinstance(s, TensorShape):
        return s
    if isinstance(s, Tensor):
        s = s.numpy().tolist()
        if not isinstance(s, list):
            s = [s]
    return TensorShape([None if d is None or int(d) < 0 else int(d) for d in s])
