# SPDX-License-Identifier: Apache-2.0
"""tf.custom_gradient: f(*x) returns (y, grad_fn) and the gradient of y is grad_fn(dy).

The result is the py_custom_gradient op (python/src/py_ops.cpp): y passed through, with the
inputs x as its other inputs and a vjp that calls grad_fn, so tapes and traced gradients
both use the user's rule and never look inside f. Functions whose grad_fn takes
`variables=` (gradients for variables f reads) are not supported here."""
import inspect

from . import _deepflow
from . import nest

Tensor = _deepflow.Tensor


def make_custom_gradient(f):
    def wrapped(*args, **kwargs):
        result, grad_fn = f(*args, **kwargs)
        if "variables" in inspect.signature(grad_fn).parameters:
            raise NotImplementedError("[tf.custom_gradient] grad_fn(..., variables=...) is not supported")
        inputs = [a for a in nest.flatten(list(args)) if isinstance(a, (Tensor, _deepflow.Variable))]
        flat_out = nest.flatten(result)
        outs = _deepflow.custom_gradient_call(flat_out, inputs, _grad_caller(grad_fn, len(flat_out), len(inputs)))
        return nest.pack_sequence_as(result, list(outs))
    return wrapped


def _grad_caller(grad_fn, n_out, n_in):
    def call(dys):
        g = grad_fn(*dys)
        flat = list(g) if isinstance(g, (list, tuple)) else [g]
        if len(flat) != n_in:
            raise ValueError(f"[tf.custom_gradient] grad_fn returned {len(flat)} gradients for {n_in} inputs")
        return flat
    return call
