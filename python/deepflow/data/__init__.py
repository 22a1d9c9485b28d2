# SPDX-License-Identifier: Apache-2.0
"""tf.data: input pipelines over deepflow's C++ pipeline (deepflow/data/dataset.h).

    ds = (tf.data.Dataset.from_tensor_slices((images, labels))
          .shuffle(1000).batch(32).map(normalize, num_parallel_calls=tf.data.AUTOTUNE)
          .prefetch(tf.data.AUTOTUNE))
    for x, y in ds: ...

Elements run through C++ without the GIL: map and filter functions are traced once
into graphs (as TensorFlow traces them), so parallel map threads do not wait on Python.
How deepflow differs from TensorFlow here is listed in _dataset.py and _functions.py:
flat_map / interleave functions run eagerly per element, and a dataset cannot be
iterated or reduced inside a traced function yet.
"""
from . import experimental  # noqa: F401
from ._dataset import AUTOTUNE  # noqa: F401
from ._dataset import DatasetV2 as Dataset  # noqa: F401
from ._dataset import INFINITE as INFINITE_CARDINALITY  # noqa: F401
from ._dataset import UNKNOWN as UNKNOWN_CARDINALITY  # noqa: F401
from ._iterator import OwnedIterator as Iterator  # noqa: F401
from ._options import Options, ThreadingOptions  # noqa: F401
from ._readers import TFRecordDatasetV2 as TFRecordDataset  # noqa: F401
from ._readers import TextLineDatasetV2 as TextLineDataset  # noqa: F401

__all__ = ["AUTOTUNE", "Dataset", "Iterator", "Options", "TFRecordDataset", "TextLineDataset", "ThreadingOptions",
           "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY", "experimental"]
