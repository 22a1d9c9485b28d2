# SPDX-License-Identifier: Apache-2.0
"""tf.keras.datasets: mnist and fashion_mnist from the files the project installs
(MNIST: scripts/fetch-data.sh into data/mnist; Fashion-MNIST: Debian's
dataset-fashion-mnist), as numpy arrays ((x_train, y_train), (x_test, y_test))."""
import glob
import os
import types

import numpy as np

from .. import _deepflow

_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
_FASHION_DIRS = ("/usr/share/dataset-fashion-mnist", "/usr/share/fashion-mnist", "/usr/share/datasets/fashion-mnist")


def _find(directory, name):
    for candidate in (name, name + ".gz"):
        p = os.path.join(directory, candidate)
        if os.path.exists(p):
            return p
    hits = glob.glob(os.path.join(directory, "**", name + "*"), recursive=True)
    return hits[0] if hits else None


def _read(path):
    if path.endswith(".gz"):
        import gzip
        import tempfile
        with gzip.open(path, "rb") as f, tempfile.NamedTemporaryFile(suffix=".idx", delete=False) as out:
            out.write(f.read())
        try:
            return np.array(_deepflow._read_idx(out.name).numpy())
        finally:
            os.unlink(out.name)
    return np.array(_deepflow._read_idx(path).numpy())


def _load(directories, what, install):
    from ..errors import NotFoundError
    for d in directories:
        paths = [_find(d, f) for f in _FILES]
        if all(paths):
            xtr, ytr, xte, yte = (_read(p) for p in paths)
            return (xtr, ytr), (xte, yte)
    raise NotFoundError(None, None, f"[keras.datasets.{what}.load_data] the {what} files are not found in "
                                    f"{', '.join(directories)}; install them with: {install}")


def _mnist_load_data(path="mnist.npz"):
    dirs = [os.path.dirname(path)] if os.path.isabs(path) else []
    return _load(dirs + [_deepflow._mnist_dir()], "mnist", "scripts/fetch-data.sh (make deps runs it)")


def _fashion_load_data():
    return _load(list(_FASHION_DIRS), "fashion_mnist", "apt-get install dataset-fashion-mnist "
                                                       "(scripts/install-deps.sh test)")


mnist = types.SimpleNamespace(load_data=_mnist_load_data)
fashion_mnist = types.SimpleNamespace(load_data=_fashion_load_data)
