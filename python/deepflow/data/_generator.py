# SPDX-License-Identifier: Apache-2.0
"""Dataset.from_generator: the elements a Python generator yields.

The C++ pipeline pulls from the generator through a callback that takes the GIL only
while the generator runs (python/src/data.cpp). Each yielded value is checked against
the output signature and converted here, with TensorFlow's messages: a value that does
not fit the structure or the dtype is a TypeError, a wrong shape a ValueError (both
reach the consumer as InvalidArgumentError from get_next, as in TensorFlow).
"""
import numpy as np

from .. import _deepflow
from .. import dtypes
from .._function import TensorSpec
from .._op_util import convert_to_tensor
from ..tensor_shape import TensorShape
from . import _structure as structure

_core = _deepflow.data


def _spec_from_types(output_types, output_shapes):
    if output_types is None:
        raise TypeError("[Dataset.from_generator] To specify the output signature you need to provide either the "
                        "`output_signature` argument or the `output_types` argument.")
    types = structure.map_structure(dtypes.as_dtype, output_types)
    if output_shapes is None:
        shapes = [TensorShape(None)] * len(structure.leaves(types))
    else:
        shapes = [TensorShape(s) for s in structure.flatten_up_to(types, output_shapes, "Dataset.from_generator")]
    it = iter(shapes)
    return structure.map_structure(lambda t: TensorSpec(next(it), t), types)


def _convert(value, spec):
    """One yielded component as a tensor of spec's dtype; a copy, so a generator that
    reuses one buffer does not change elements already handed out."""
    if spec.dtype == dtypes.string:
        try:
            t = structure.to_tensor(value, dtype=dtypes.string)
        except (TypeError, ValueError) as e:
            raise TypeError(f"`generator` yielded an element that could not be converted to the expected type. "
                            f"The expected type was {spec.dtype.name}, but the yielded element was {value}.") from e
    else:
        np_type = spec.dtype.as_numpy_dtype if spec.dtype != dtypes.bfloat16 else np.float32
        try:
            arr = np.array(value, dtype=np_type, order="C")
        except (TypeError, ValueError) as e:
            raise TypeError(f"`generator` yielded an element that could not be converted to the expected type. "
                            f"The expected type was {spec.dtype.name}, but the yielded element was {value}.") from e
        t = _deepflow.to_tensor(arr) if spec.dtype != dtypes.bfloat16 else convert_to_tensor(arr, spec.dtype)
    if not spec.shape.is_compatible_with(t.shape):
        raise ValueError(f"`generator` yielded an element of shape {t.shape} where an element of shape "
                         f"{spec.shape} was expected.")
    return t


def _flat_elements(generator, args, spec):
    specs = structure.leaves(spec)
    for value in generator(*args):
        try:
            parts = structure.flatten_up_to(spec, value, "Dataset.from_generator")
        except ValueError:
            raise TypeError(f"`generator` yielded an element that did not match the expected structure. The "
                            f"expected structure was {spec}, but the yielded element was {value}.") from None
        yield [_convert(v, s) for v, s in zip(parts, specs)]


def _with_known_ranks(generator, args, spec):
    """Components of unknown rank (output_types without output_shapes) get the rank of
    the first element, all dims unknown: the core's specs have a rank. The generator is
    called once more for this."""
    specs = structure.leaves(spec)
    if all(s.shape.rank is not None for s in specs):
        return spec
    first = next(iter(generator(*args)), None)
    parts = structure.flatten_up_to(spec, first, "Dataset.from_generator") if first is not None else [0] * len(specs)
    ranks = [np.ndim(v) if s.dtype != dtypes.string else structure.to_tensor(v, dtypes.string).ndim
             for v, s in zip(parts, specs)]
    it = iter(zip(specs, ranks))

    def fix(_):
        s, r = next(it)
        return s if s.shape.rank is not None else TensorSpec([None] * r, s.dtype)
    return structure.map_structure(fix, spec)


def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None):
    if not callable(generator):
        raise TypeError("[Dataset.from_generator] `generator` must be a Python callable.")
    if output_signature is not None:
        if output_types is not None:
            raise TypeError("[Dataset.from_generator] The `output_types` argument can not be used together with the "
                            "`output_signature` argument.")
        if output_shapes is not None:
            raise TypeError("[Dataset.from_generator] The `output_shapes` argument can not be used together with the "
                            "`output_signature` argument.")
        if isinstance(output_signature, list):
            output_signature = tuple(output_signature)
        for s in structure.leaves(output_signature):
            if not isinstance(s, TensorSpec):
                raise TypeError(f"[Dataset.from_generator] `output_signature` must contain objects that are subclass "
                                f"of `tf.TypeSpec` but found {type(s)} which is not.")
        spec = output_signature
    else:
        spec = _spec_from_types(output_types, output_shapes)
    args = tuple(convert_to_tensor(a).numpy() for a in (args or ()))
    spec = _with_known_ranks(generator, args, spec)

    def make():
        return _flat_elements(generator, args, spec)

    from ._dataset import DatasetV2
    return DatasetV2(_core.Dataset.from_generator(make, structure.signature(spec)), spec, kind="Generator")
