# SPDX-License-Identifier: Apache-2.0
"""The user functions of tf.data transformations.

map and filter functions are traced once, as TensorFlow traces them: the Python
function runs on symbolic tensors of the element's spec (AutoGraph on, like
tf.function), and the C++ pipeline calls the resulting ConcreteFunction for every
element, with no Python and no GIL, so parallel map threads really run in parallel.
Python side effects in the function therefore happen once, while tracing.

flat_map and interleave functions return a Dataset, which a graph cannot hold here:
they stay Python, called eagerly once per input element with the GIL. To know their
element_spec up front (later transformations trace against it), the function is also
called on two placeholder elements (zeros, or empty strings; unknown dims as 1 and
then 2): dims that agree are kept, the others become None.
"""
import numpy as np

from .. import _deepflow
from .. import _function
from .. import dtypes
from . import _structure as structure

Tensor = _deepflow.Tensor


def _converted(func):
    """The function as tf.function would run it (AutoGraph-converted, through the same
    machinery: deepflow._function.Function)."""
    if isinstance(func, _function.Function):
        return func  # inlines its own (converted) body while a graph is built
    try:
        return _function.Function(func, autograph=True)._callable()
    except Exception:  # noqa: BLE001 - not convertible (a builtin, no source): run it as is
        return func


def _call(func, element):
    """TensorFlow's rule: a tuple element is passed as positional arguments, anything
    else (a dict, a single tensor, a namedtuple) as one argument."""
    if type(element) is tuple:
        return func(*element)
    return func(element)


def _name_of(func):
    return getattr(func, "__name__", type(func).__name__).replace("<", "").replace(">", "")


class StructuredFunction:
    """A Python function of one element, traced once into a ConcreteFunction.

    output_structure: the element_spec of its result; concrete: the C++
    ConcreteFunction the pipeline runs.
    """

    def __init__(self, func, input_structure, where):
        self._where = where
        fn = _converted(func)
        sig = structure.signature(input_structure)
        holder = {}

        def trace(symbolic):
            ret = _call(fn, structure.pack(input_structure, symbolic))
            if isinstance(ret, list):
                ret = tuple(ret)  # TensorFlow's rule: a returned list is a tuple of components
            if ret is None:
                raise TypeError(f"[{where}] the function returned None; it must return the new element "
                                "(tensors, or tuples and dicts of them)")
            ret = structure.normalize(ret, where)
            holder["structure"] = structure.spec_of(ret)
            return structure.flatten(ret)

        self._traced = _deepflow._Function(trace, f"{where}_{_name_of(func)}", sig, False)
        self.concrete = self._traced.get_concrete_function(sig)
        out = structure.from_signature(self.concrete._outputs)
        # The structure as traced, with the graph's output types (they agree; the graph's
        # are what runs).
        self.output_structure = _with_flat_specs(holder["structure"], out)


def _with_flat_specs(spec, flat):
    it = iter(flat)

    def leaf(s):
        if isinstance(s, structure.SparseTensorSpec):
            for _ in range(3):
                next(it)
            return s
        return next(it)
    return structure.map_structure(leaf, spec)


def _placeholder(spec, unknown):
    """A concrete element of the spec: zeros (empty strings), unknown dims as `unknown`."""
    from .._op_util import convert_to_tensor
    dims = [unknown if d is None else d for d in spec.shape.as_list()]
    if spec.dtype == dtypes.string:
        return convert_to_tensor(np.full(dims, b"", dtype=object), dtype=dtypes.string)
    np_type = spec.dtype.as_numpy_dtype if spec.dtype != dtypes.bfloat16 else np.float32
    return convert_to_tensor(np.zeros(dims, dtype=np_type), dtype=spec.dtype)


class DatasetFunction:
    """A Python function of one element returning a Dataset (flat_map, interleave)."""

    def __init__(self, func, input_structure, where):
        from ._dataset import DatasetV2
        self._func = func
        self._input = input_structure
        self._where = where
        self._dataset_type = DatasetV2
        specs = []
        for unknown in (1, 2):
            flat = [_placeholder(s, unknown) for s in structure.flat_specs(input_structure)]
            try:
                ds = self._apply(flat)
            except Exception as e:
                raise ValueError(f"[{where}] deepflow calls the function on a placeholder element (zeros, "
                                 f"empty strings) to learn the element_spec of the datasets it returns, and "
                                 f"that call failed: {type(e).__name__}: {e}") from e
            specs.append(ds.element_spec)
        if not structure.same_structure(specs[0], specs[1]):
            raise TypeError(f"[{where}] the function returns datasets of different structures: "
                            f"{specs[0]} and {specs[1]}")
        self.output_structure = structure.most_specific_common(specs[0], specs[1])

    def _apply(self, flat):
        ds = _call(self._func, structure.pack(self._input, flat))
        if not isinstance(ds, self._dataset_type):
            raise TypeError(f"[{self._where}] the function must return a tf.data.Dataset, got "
                            f"{type(ds).__name__}: {ds!r}")
        return ds

    def __call__(self, flat):
        """What the C++ pipeline calls (with the GIL): the C++ dataset for one element."""
        ds = self._apply(flat)
        spec = ds.element_spec
        ok = structure.same_structure(spec, self.output_structure) and all(
            a.dtype == b.dtype and a.shape.is_compatible_with(b.shape)
            for a, b in zip(structure.flat_specs(spec), structure.flat_specs(self.output_structure)))
        if not ok:
            raise TypeError(f"[{self._where}] the function returned a dataset of elements {spec}, which does "
                            f"not match {self.output_structure}, the element_spec found for it")
        return ds._ds
