# SPDX-License-Identifier: Apache-2.0
"""A minimal tf.SparseTensor: what tf.io.VarLenFeature parses to.

values[i] sits at indices[i] of a dense tensor of shape dense_shape. It carries the
three tensors and converts to a dense tensor; the sparse op family (tf.sparse.*) is
not here. In a dataset it is one component made of three tensors (SparseTensorSpec).
"""
import numpy as np

from .. import dtypes
from .._function import TensorSpec
from ..tensor_shape import TensorShape


class SparseTensor:
    """tf.SparseTensor(indices, values, dense_shape)."""

    def __init__(self, indices, values, dense_shape):
        from .._op_util import convert_to_tensor
        self.indices = convert_to_tensor(indices, dtype=dtypes.int64)
        self.values = convert_to_tensor(values)
        self.dense_shape = convert_to_tensor(dense_shape, dtype=dtypes.int64)

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def shape(self):
        if self.dense_shape._is_symbolic:
            return TensorShape([None] * (self.dense_shape.shape[0] or 0))
        return TensorShape([int(d) for d in self.dense_shape.numpy()])

    def to_dense(self, default_value=None):
        """The dense tensor (tf.sparse.to_dense), computed with numpy (eager only)."""
        from .._op_util import convert_to_tensor
        shape = [int(d) for d in self.dense_shape.numpy()]
        values = self.values.numpy()
        fill = default_value if default_value is not None else (b"" if self.dtype == dtypes.string else 0)
        out = np.full(shape, fill, dtype=values.dtype if values.dtype != object else object)
        for idx, v in zip(self.indices.numpy().reshape(-1, len(shape)), values.reshape(-1)):
            out[tuple(idx)] = v
        return convert_to_tensor(out, dtype=self.dtype)

    def __repr__(self):
        return f"SparseTensor(indices={self.indices!r}, values={self.values!r}, dense_shape={self.dense_shape!r})"


class SparseTensorSpec:
    """tf.SparseTensorSpec(shape, dtype): the spec of a SparseTensor component."""

    def __init__(self, shape=None, dtype=dtypes.float32):
        self.shape = TensorShape(shape)
        self.dtype = dtypes.as_dtype(dtype)

    @classmethod
    def from_value(cls, st):
        return cls(st.shape, st.dtype)

    @property
    def _component_specs(self):
        rank = self.shape.rank
        if rank is None:
            raise ValueError(f"[tf.data] a SparseTensor of unknown rank is not supported here: {self}")
        return [TensorSpec([None, rank], dtypes.int64), TensorSpec([None], self.dtype),
                TensorSpec([rank], dtypes.int64)]

    def __eq__(self, other):
        return isinstance(other, SparseTensorSpec) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        return f"SparseTensorSpec(TensorShape({self.shape.dims}), {self.dtype!r})"
