# SPDX-License-Identifier: Apache-2.0
"""tf.data.Dataset over the C++ pipeline (deepflow/data/dataset.h).

A Dataset is the C++ handle (_deepflow.data.Dataset, flat tuples of tensors) plus the
nested structure of its elements as TensorSpecs (element_spec) and its Options. Every
transformation builds the C++ node and computes the new element_spec the way
TensorFlow does, so map functions are traced against the right signature. Iteration
happens in C++ without the GIL; Python packs each flat element into its structure.
"""
import numpy as np

from .. import _deepflow
from .. import dtypes
from .. import errors
from .._function import TensorSpec
from .._op_util import convert_to_tensor
from . import _structure as structure
from ._functions import DatasetFunction, StructuredFunction
from ._options import Options

_core = _deepflow.data
Tensor = _deepflow.Tensor
AUTOTUNE = _core.AUTOTUNE
INFINITE = _core.INFINITE_CARDINALITY
UNKNOWN = _core.UNKNOWN_CARDINALITY


def _int(x, what):
    """An integer argument that may be a Python int, a numpy integer or a scalar tensor."""
    if isinstance(x, Tensor):
        x = x.numpy()
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"[Dataset] {what} must be an integer, got {x!r}")
    return int(x)


def _parallelism(n, what="num_parallel_calls"):
    return 1 if n is None else _int(n, what)


def _executing_eagerly():
    return not _deepflow._building_graph()


class DatasetV2:
    """tf.data.Dataset: an immutable pipeline of elements (nested tuples / dicts of tensors)."""

    _df_dataset = True  # what AutoGraph looks for: `for x in ds` in a tf.function becomes reduce

    def __init__(self, core, element_spec, options=None, kind="Dataset"):
        self._ds = core
        self._structure = element_spec
        self._options_attr = options if options is not None else Options()
        self._kind = kind

    def _derive(self, core, element_spec=None, kind="Dataset"):
        return DatasetV2(core, self._structure if element_spec is None else element_spec,
                         self._options_attr, kind)

    # --- sources ---

    @staticmethod
    def from_tensor_slices(tensors, name=None):
        """One element per row of the tensors' first dimension (which they must share)."""
        element = structure.normalize(tensors, "Dataset.from_tensor_slices")
        structure.dense_specs(structure.spec_of(element), "Dataset.from_tensor_slices")
        flat = structure.flatten(element)
        for t in flat:
            if t.ndim == 0:
                raise ValueError(f"[Dataset.from_tensor_slices] Unbatching a tensor is only supported for rank "
                                 f">= 1, got a scalar: {t!r}")
        spec = structure.map_structure(lambda t: TensorSpec(t.shape[1:], t.dtype), element)
        return DatasetV2(_core.Dataset.from_tensor_slices(flat), spec, kind="TensorSlice")

    @staticmethod
    def from_tensors(tensors, name=None):
        """One element: the tensors as given."""
        element = structure.normalize(tensors, "Dataset.from_tensors")
        return DatasetV2(_core.Dataset.from_tensors(structure.flatten(element)), structure.spec_of(element),
                         kind="Tensor")

    @staticmethod
    def from_generator(generator, output_types=None, output_shapes=None, args=None, output_signature=None,
                       name=None):
        """The elements a Python generator yields, converted to output_signature."""
        from ._generator import from_generator
        return from_generator(generator, output_types, output_shapes, args, output_signature)

    @staticmethod
    def range(*args, output_type=dtypes.int64, name=None):
        """range(stop), range(start, stop) or range(start, stop, step), as Python's range."""
        if not 1 <= len(args) <= 3:
            raise ValueError(f"[Dataset.range] takes 1 to 3 arguments (stop / start, stop / start, stop, step), "
                             f"got {len(args)}")
        ints = [_int(a, "a range bound") for a in args]
        start, stop, step = (0, ints[0], 1) if len(ints) == 1 else (ints + [1])[:3]
        dtype = dtypes.as_dtype(output_type)
        return DatasetV2(_core.Dataset.range(start, stop, step, dtype._enum), TensorSpec([], dtype), kind="Range")

    @staticmethod
    def zip(*args, datasets=None, name=None):
        """Elements of the datasets side by side, in their structure; ends with the shortest."""
        if datasets is None:
            datasets = args[0] if len(args) == 1 else args
        elif args:
            raise TypeError("Both `*args` and `datasets` cannot be set.")
        for d in structure.leaves(datasets):
            if not isinstance(d, DatasetV2):
                raise TypeError(f"[Dataset.zip] Invalid input to `zip`. Inputs are expected to be (nested) "
                                f"structures of `tf.data.Dataset` objects. Python `list` is not supported and "
                                f"you should use `tuple` instead. Got {d!r}")
        flat = structure.leaves(datasets)
        spec = structure.map_structure(lambda d: d._structure, datasets)
        options = Options()
        for d in flat:
            options = options.merge(d._options_attr)
        return DatasetV2(_core.Dataset.zip([d._ds for d in flat]), spec, options, kind="Zip")

    @staticmethod
    def list_files(file_pattern, shuffle=None, seed=None, name=None):
        """The files matching a glob pattern (or list of patterns), shuffled unless shuffle=False."""
        from ._readers import list_files
        return list_files(file_pattern, shuffle, seed)

    # --- element-wise transformations ---

    def map(self, map_func, num_parallel_calls=None, deterministic=None, synchronous=None,
            use_unbounded_threadpool=False, name=None):
        """map_func traced once on the element spec; run in C++ (in parallel with num_parallel_calls)."""
        f = StructuredFunction(map_func, self._structure, "Dataset.map")
        core = self._ds.map(f.concrete, _parallelism(num_parallel_calls), deterministic)
        return self._derive(core, f.output_structure, "ParallelMap" if num_parallel_calls else "Map")

    def filter(self, predicate, name=None):
        """Keeps the elements for which the traced predicate is true."""
        f = StructuredFunction(predicate, self._structure, "Dataset.filter")
        out = f.output_structure
        if not (isinstance(out, TensorSpec) and out.dtype == dtypes.bool and out.shape.rank in (0, None)):
            raise ValueError(f"[Dataset.filter] Invalid `predicate`. `predicate` must return a `tf.bool` scalar "
                             f"tensor, but its return type is {out}.")
        return self._derive(self._ds.filter(f.concrete), kind="Filter")

    def flat_map(self, map_func, name=None):
        """The elements of the datasets map_func makes of each element, one after another."""
        f = DatasetFunction(map_func, self._structure, "Dataset.flat_map")
        return self._derive(self._ds.flat_map(f), f.output_structure, "FlatMap")

    def interleave(self, map_func, cycle_length=None, block_length=None, num_parallel_calls=None,
                   deterministic=None, name=None):
        """cycle_length datasets of map_func open at once, block_length elements from each in turn."""
        f = DatasetFunction(map_func, self._structure, "Dataset.interleave")
        cycle = AUTOTUNE if cycle_length is None else _int(cycle_length, "cycle_length")
        block = 1 if block_length is None else _int(block_length, "block_length")
        core = self._ds.interleave(f, cycle, block, _parallelism(num_parallel_calls), deterministic)
        return self._derive(core, f.output_structure, "Interleave")

    def enumerate(self, start=0, name=None):
        """(index, element) pairs, the index an int64 counting from start."""
        spec = (TensorSpec([], dtypes.int64), self._structure)
        return self._derive(self._ds.enumerate(_int(start, "start")), spec, "Enumerate")

    # --- batching ---

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None, name=None):
        """Stacks batch_size consecutive elements (the last batch may be smaller)."""
        structure.dense_specs(self._structure, "Dataset.batch")
        n = _int(batch_size, "batch_size")
        lead = n if drop_remainder else None
        spec = structure.map_structure(lambda s: TensorSpec([lead] + s.shape.as_list(), s.dtype), self._structure)
        core = self._ds.batch(n, bool(drop_remainder), _parallelism(num_parallel_calls), deterministic)
        return self._derive(core, spec, "Batch")

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False, name=None):
        """batch for elements of different shapes: each dim padded to padded_shapes (None or
        unset: to the longest in the batch) with padding_values (default 0, and b"")."""
        where = "Dataset.padded_batch"
        structure.dense_specs(self._structure, where)
        specs = structure.leaves(self._structure)
        if padded_shapes is None:
            shapes = [s.shape for s in specs]
        else:
            shapes = [structure.shape_of(p) for p in structure.flatten_up_to(self._structure, padded_shapes, where)]
        for s, p in zip(specs, shapes):
            # TensorFlow's rule: the same rank, and no known dim padded to less than it is.
            if p.rank != s.shape.rank or any(a is not None and b is not None and a < b
                                             for a, b in zip(p.as_list(), s.shape.as_list())):
                raise ValueError(f"[Dataset.padded_batch] The padded shape {p} is not compatible with the shape "
                                 f"{s.shape} of the corresponding input component.")
        values = []
        if padding_values is not None:
            if structure.is_structure(padding_values) or not structure.is_structure(self._structure):
                flat_values = structure.flatten_up_to(self._structure, padding_values, where)
            else:
                flat_values = [padding_values] * len(specs)  # one scalar for every component
            for v, s in zip(flat_values, specs):
                t = structure.to_tensor(v, dtype=s.dtype)
                if t.ndim != 0:
                    raise ValueError(f"[{where}] a padding value must be a scalar, got {t!r}")
                values.append(t)
        lead = _int(batch_size, "batch_size") if drop_remainder else None
        out = [TensorSpec([lead] + p.as_list(), s.dtype) for s, p in zip(specs, shapes)]
        it = iter(out)
        spec = structure.map_structure(lambda _: next(it), self._structure)
        dims = [[-1 if d is None else d for d in p.as_list()] for p in shapes]
        core = self._ds.padded_batch(_int(batch_size, "batch_size"), dims, values, bool(drop_remainder))
        return self._derive(core, spec, "PaddedBatch")

    def unbatch(self, name=None):
        """Splits each element along its first dimension into rows."""
        structure.dense_specs(self._structure, "Dataset.unbatch")
        for s in structure.leaves(self._structure):
            if s.shape.rank == 0:
                raise ValueError(f"[Dataset.unbatch] Cannot unbatch an input with scalar components: {self._structure}")
        spec = structure.map_structure(lambda s: TensorSpec(s.shape[1:], s.dtype), self._structure)
        return self._derive(self._ds.unbatch(), spec, "Unbatch")

    # --- order and count ---

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None, name=None):
        """Random picks from a buffer of buffer_size elements (reshuffled every epoch by default)."""
        reshuffle = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        seed = None if seed is None else _int(seed, "seed")
        return self._derive(self._ds.shuffle(_int(buffer_size, "buffer_size"), seed, reshuffle), kind="Shuffle")

    def repeat(self, count=None, name=None):
        return self._derive(self._ds.repeat(-1 if count is None else _int(count, "count")), kind="Repeat")

    def take(self, count, name=None):
        return self._derive(self._ds.take(_int(count, "count")), kind="Take")

    def skip(self, count, name=None):
        return self._derive(self._ds.skip(_int(count, "count")), kind="Skip")

    def shard(self, num_shards, index, name=None):
        return self._derive(self._ds.shard(_int(num_shards, "num_shards"), _int(index, "index")), kind="Shard")

    def cache(self, filename="", name=None):
        """Elements kept after the first complete pass: in memory, or in files named filename*."""
        if isinstance(filename, Tensor):
            filename = filename.numpy()
        if isinstance(filename, bytes):
            filename = filename.decode()
        return self._derive(self._ds.cache(str(filename)), kind="Cache")

    def prefetch(self, buffer_size, name=None):
        """A background producer keeping up to buffer_size elements ready (AUTOTUNE: tuned)."""
        return self._derive(self._ds.prefetch(_int(buffer_size, "buffer_size")), kind="Prefetch")

    def concatenate(self, dataset, name=None):
        """This dataset's elements, then dataset's (their structures and dtypes must agree)."""
        if not structure.same_structure(self._structure, dataset._structure):
            raise TypeError(f"[Dataset.concatenate] Incompatible dataset elements:\n  {self._structure} vs. \n  "
                            f"{dataset._structure}")
        spec = structure.most_specific_common(self._structure, dataset._structure)
        options = self._options_attr.merge(dataset._options_attr)
        return DatasetV2(self._ds.concatenate(dataset._ds), spec, options, "Concatenate")

    # --- options and composition ---

    def with_options(self, options, name=None):
        if not isinstance(options, Options):
            raise TypeError(f"[Dataset.with_options] options must be a tf.data.Options, got {options!r}")
        merged = self._options_attr.merge(options)
        return DatasetV2(self._ds.with_options(*merged._core()), self._structure, merged, "Options")

    def options(self):
        return self._options_attr.merge(Options())

    def apply(self, transformation_func):
        ds = transformation_func(self)
        if not isinstance(ds, DatasetV2):
            raise TypeError(f"[Dataset.apply] `transformation_func` must return a `tf.data.Dataset` object. "
                            f"Got {type(ds)}.")
        return ds

    # --- inspection ---

    @property
    def element_spec(self):
        return self._structure

    def cardinality(self):
        """The number of elements as an int64 tensor, or INFINITE_CARDINALITY (-1) /
        UNKNOWN_CARDINALITY (-2)."""
        return convert_to_tensor(np.int64(self._ds.cardinality()))

    def __len__(self):
        if not _executing_eagerly():
            raise TypeError("`tf.data.Dataset` only supports `len` in eager mode. Use "
                            "`tf.data.Dataset.cardinality()` instead.")
        n = self._ds.cardinality()
        if n == INFINITE:
            raise TypeError("[Dataset.__len__] The dataset is infinite.")
        if n == UNKNOWN:
            raise TypeError("[Dataset.__len__] The dataset length is unknown.")
        return n

    def __bool__(self):
        return True  # __len__ is defined: without this, `if ds:` would ask for the length

    __nonzero__ = __bool__

    def __repr__(self):
        return f"<_{self._kind}Dataset element_spec={self._structure}>"

    # --- iteration ---

    def __iter__(self):
        from ._iterator import OwnedIterator
        if not _executing_eagerly():
            raise NotImplementedError(
                "[tf.data] iter(dataset) inside a traced function is not supported by deepflow yet: a `for x in "
                "dataset` loop (which AutoGraph makes a loop in the graph) or Dataset.reduce works there")
        return OwnedIterator(self)

    def as_numpy_iterator(self):
        """An iterator of the elements as numpy values (bytes for strings)."""
        from ._iterator import NumpyIterator
        if not _executing_eagerly():
            raise RuntimeError("`tf.data.Dataset.as_numpy_iterator()` is only supported in eager mode.")
        return NumpyIterator(self)

    def reduce(self, initial_state, reduce_func, name=None):
        """reduce_func(state, element) -> state over every element: eagerly, or inside a
        traced function as a while loop over a pass of the dataset made each time the
        function runs (what `for x in dataset` in a tf.function becomes)."""
        if not _executing_eagerly():
            from ._graph_reduce import graph_reduce
            return graph_reduce(self, initial_state, reduce_func)
        state = structure.normalize(initial_state, "Dataset.reduce")
        state_spec = structure.spec_of(state)
        for element in self:
            new = reduce_func(state, element)
            if isinstance(new, list):
                new = tuple(new)
            new = structure.normalize(new, "Dataset.reduce")
            if not structure.same_structure(state_spec, structure.spec_of(new)):
                raise TypeError(f"[Dataset.reduce] The element types for the new state must match the initial "
                                f"state. Expected {state_spec}; got {structure.spec_of(new)}.")
            for a, b in zip(structure.flat_specs(state_spec), structure.flat_specs(structure.spec_of(new))):
                if a.dtype != b.dtype:
                    raise TypeError(f"[Dataset.reduce] The element types for the new state must match the "
                                    f"initial state. Expected {state_spec}; got {structure.spec_of(new)}.")
            state = new
        return state

    def get_single_element(self, name=None):
        """The one element of a dataset that has exactly one (eagerly)."""
        it = iter(self)
        try:
            element = next(it)
        except StopIteration:
            raise errors.InvalidArgumentError(None, None, "[Dataset.get_single_element] Dataset was empty.") from None
        try:
            next(it)
        except StopIteration:
            return element
        raise errors.InvalidArgumentError(None, None, "[Dataset.get_single_element] Dataset had more than one "
                                                    "element.")


Dataset = DatasetV2
