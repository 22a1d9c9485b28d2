# SPDX-License-Identifier: Apache-2.0
"""Iterators over a Dataset: iter(ds) (tf.data.Iterator), as_numpy_iterator().

Each holds one C++ iterator (one pass). next() waits for the pipeline without the GIL,
so generator callbacks and parallel stages keep running meanwhile; the flat tuple it
returns is packed into the element's structure here.
"""
import atexit
import collections
import weakref

from .. import _deepflow
from .. import dtypes
from .. import errors
from ..io._sparse import SparseTensor
from . import _structure as structure

SparseTensorValue = collections.namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])
_live = weakref.WeakSet()  # iterators whose pipeline threads may still run


@atexit.register
def _close_live_iterators():
    # Before the interpreter finalizes: a pipeline thread that wants the GIL after that
    # (a generator, an interleave function) would be killed mid-call.
    for it in list(_live):
        it._it.close()


def _check_eager(what):
    if _deepflow._building_graph():
        raise NotImplementedError(
            f"[{what}] deepflow cannot read a dataset inside a traced function yet (the pipeline runs in "
            "C++ outside graphs): iterate eagerly and pass each element to the tf.function")


class OwnedIterator:
    """tf.data.Iterator: iter(dataset). Python iteration ends with StopIteration;
    get_next() raises OutOfRangeError at the end, as in TensorFlow."""

    def __init__(self, dataset):
        self._structure = dataset.element_spec
        self._it = dataset._ds.iter()
        _live.add(self)

    @property
    def element_spec(self):
        return self._structure

    def __iter__(self):
        return self

    def _next_flat(self):
        _check_eager("Iterator.get_next")
        return self._it.next()

    def __next__(self):
        flat = self._next_flat()
        if flat is None:
            raise StopIteration
        return structure.pack(self._structure, flat)

    next = __next__

    def get_next(self, name=None):
        flat = self._next_flat()
        if flat is None:
            raise errors.OutOfRangeError(None, None, "[Iterator.get_next] End of sequence")
        return structure.pack(self._structure, flat)

    def get_next_as_optional(self):
        flat = self._next_flat()
        value = None if flat is None else structure.pack(self._structure, flat)
        return Optional(value, self._structure)

    def _save(self):
        """The iterator's position as bytes (deepflow's checkpoint hook)."""
        return self._it.save()

    def _restore(self, state):
        self._it.restore(state)


def _to_numpy(x):
    if isinstance(x, SparseTensor):
        return SparseTensorValue(x.indices.numpy(), x.values.numpy(), x.dense_shape.numpy())
    return x.numpy()


class NumpyIterator:
    """Dataset.as_numpy_iterator(): the elements with numpy values (bytes for strings)."""

    def __init__(self, dataset):
        self._it = OwnedIterator(dataset)

    def __iter__(self):
        return self

    def __next__(self):
        return structure.map_structure(_to_numpy, next(self._it))

    next = __next__

    def _save(self):
        return self._it._save()

    def _restore(self, state):
        self._it._restore(state)


class Optional:
    """tf.experimental.Optional, as get_next_as_optional returns it: a value or none."""

    def __init__(self, value, element_spec):
        self._value = value
        self._spec = element_spec

    @property
    def element_spec(self):
        return self._spec

    def has_value(self, name=None):
        from .._op_util import convert_to_tensor
        return convert_to_tensor(self._value is not None, dtype=dtypes.bool)

    def get_value(self, name=None):
        if self._value is None:
            raise errors.InvalidArgumentError(None, None, "[Optional.get_value] The optional does not have a value.")
        return self._value

    @staticmethod
    def empty(element_spec):
        return Optional(None, element_spec)

    @staticmethod
    def from_value(value):
        v = structure.normalize(value, "Optional.from_value")
        return Optional(v, structure.spec_of(v))
