# SPDX-License-Identifier: Apache-2.0
"""The tensor-side seam: AutoGraph's operators call only this object.

The protocol is documented in the package docstring (__init__.py).  Until a
backend is set, a Python-only one is active: nothing is a tensor, so converted
code runs as plain Python.
"""
import contextlib

REQUIRED = (
    'is_tensor', 'is_dataset', 'cond', 'while_loop', 'logical_and',
    'logical_or', 'logical_not', 'tensor_len', 'getitem', 'dataset_reduce',
    'dtype_of', 'shape_of',
)

# Used when present; each has a documented fallback.
OPTIONAL = ('zeros_like', 'assert_true', 'staging_scope', 'range')


class _PythonOnlyBackend:
    """Active before set_backend: no value is a tensor or a dataset."""

    def is_tensor(self, x):
        return False

    def is_dataset(self, x):
        return False

    def dtype_of(self, x):
        return None

    def shape_of(self, x):
        return None

    def __getattr__(self, name):
        if name in REQUIRED:
            raise RuntimeError(
                f'AutoGraph needs a backend for {name}(); call '
                'autograph.set_backend(...) first')
        raise AttributeError(name)


_PYTHON_ONLY = _PythonOnlyBackend()
_current = _PYTHON_ONLY


def set_backend(backend):
    """Installs `backend` (None restores the Python-only one); returns the old one."""
    global _current
    if backend is None:
        backend = _PYTHON_ONLY
    else:
        missing = [name for name in REQUIRED if not callable(getattr(backend, name, None))]
        if missing:
            raise TypeError(
                f'AutoGraph backend {backend!r} lacks: {", ".join(missing)}')
    previous, _current = _current, backend
    return None if previous is _PYTHON_ONLY else previous


def get_backend():
    return _current


def staging(backend):
    """The backend's scope for throw-away tracing, or a no-op context."""
    scope = getattr(backend, 'staging_scope', None)
    return scope() if scope is not None else contextlib.nullcontext()
