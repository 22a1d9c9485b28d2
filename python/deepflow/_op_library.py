# SPDX-License-Identifier: Apache-2.0
"""tf.load_op_library: loads a shared library of C++ ops registered with the core's macros
(register_custom_op + register_kernel, as examples/custom_op.cpp does) and returns a
module with one Python function per op it registered. The ops run eagerly, in traced
functions and in graphs, with their vjp, like built-in ones."""
import ctypes
import os
import types

from . import _deepflow

_loaded = {}


def _op_function(op_name):
    attr_kinds = dict(_deepflow.op_attrs(op_name))
    op_id = _deepflow.op_id(op_name)

    def call(*inputs, name=None, **attrs):
        unknown = set(attrs) - set(attr_kinds)
        if unknown:
            raise TypeError(f"{op_name}() got unexpected attributes {sorted(unknown)}; it has "
                            f"{sorted(attr_kinds)}")
        from . import dtypes
        attrs = {k: (dtypes.as_dtype(v)._enum if attr_kinds[k] == "dtype" else v) for k, v in attrs.items()}
        out = _deepflow.raw_op(op_id, list(inputs), attrs)
        return out[0] if len(out) == 1 else out
    call.__name__ = op_name
    call.__doc__ = f"The custom op '{op_name}' (attributes: {attr_kinds or 'none'})."
    return call


def load_op_library(library_filename):
    path = os.path.abspath(library_filename)
    if path in _loaded:
        return _loaded[path]
    if not os.path.exists(path):
        from .errors import NotFoundError
        raise NotFoundError(None, None, f"[tf.load_op_library] {library_filename}: No such file")
    before = set(_deepflow.op_names())
    try:
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    except OSError as e:
        from .errors import NotFoundError
        raise NotFoundError(None, None, f"[tf.load_op_library] {library_filename}: {e}") from None
    new_ops = [n for n in _deepflow.op_names() if n not in before]
    module = types.ModuleType(os.path.splitext(os.path.basename(path))[0])
    module.OP_LIST = new_ops
    for n in new_ops:
        setattr(module, n, _op_function(n))
    _loaded[path] = module
    return module
