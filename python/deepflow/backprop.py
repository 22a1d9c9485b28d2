# SPDX-License-Identifier: Apache-2.0
"""tf.GradientTape, tf.custom_gradient and friends over the C++ tape."""
import contextlib
import enum
import functools

from . import _deepflow
from . import nest
from ._op_util import convert_to_tensor

Tensor = _deepflow.Tensor


class UnconnectedGradients(enum.Enum):
    NONE = "none"
    ZERO = "zero"


class GradientTape:
    """Records the ops run inside its `with` block and differentiates them.

    persistent: allow several gradient()/jacobian() calls. watch_accessed_variables:
    watch every trainable variable read while recording (on by default).
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = persistent
        self._watch_accessed = watch_accessed_variables
        self._tape = _deepflow._Tape(persistent, watch_accessed_variables)
        self._used = False
        self._recording = False
        self._watched = []

    def __enter__(self):
        self._tape._enter()
        self._recording = True
        return self

    def __exit__(self, typ, value, traceback):
        if self._recording:
            self._tape._exit()
            self._recording = False

    def watch(self, tensor):
        for t in nest.flatten(tensor):
            if not isinstance(t, (Tensor, _deepflow.Variable)):
                raise ValueError(f"Passed in object {t!r} of type {type(t).__name__!r}, not tf.Tensor or "
                                 "tf.Variable or ExtensionType.")
            self._tape._watch(t)
            if isinstance(t, _deepflow.Variable):
                self._watched.append(t)

    def watched_variables(self):
        """The variables watched, first seen first: those given to watch() and the trainable
        variables read while the tape recorded (also inside tf.functions and loaded
        SavedModels)."""
        from ._variables import Variable
        mine = {v._id: v for v in self._watched}
        return tuple(mine.get(v._id) or Variable._share(v) for v in self._tape._watched_variables())

    @contextlib.contextmanager
    def stop_recording(self):
        if not self._recording:
            raise ValueError("Tape must be recording.")
        self._tape._pause()
        try:
            yield
        finally:
            self._tape._resume()

    def reset(self):
        self._tape._reset()

    def _check_use(self, what):
        if self._used and not self._persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute one set of "
                               "gradients (or jacobians)")
        self._used = True

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """d target / d sources, in the structure of sources (None where unconnected)."""
        self._check_use("gradient")
        zero = UnconnectedGradients(unconnected_gradients) == UnconnectedGradients.ZERO
        flat_sources = nest.flatten(sources)
        for s in flat_sources:
            if not isinstance(s, (Tensor, _deepflow.Variable)):
                raise ValueError(f"Arguments `sources` must be tensors or variables, got {s!r}")
        flat_targets = [convert_to_tensor(t) if not isinstance(t, (Tensor, _deepflow.Variable)) else t
                        for t in nest.flatten(target)]
        og = None
        if output_gradients is not None:
            og = [None if g is None else convert_to_tensor(g) for g in nest.flatten(output_gradients)]
        with self._paused():
            grads = self._tape._gradient(flat_targets, flat_sources, zero, og)
        return nest.pack_sequence_as(sources, grads)

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """d target[i...] / d source[j...] for each source: shape target.shape + source.shape."""
        self._check_use("jacobian")
        zero = UnconnectedGradients(unconnected_gradients) == UnconnectedGradients.ZERO
        target = convert_to_tensor(target) if not isinstance(target, (Tensor, _deepflow.Variable)) else target
        with self._paused():
            out = [self._tape._jacobian(target, s, zero) for s in nest.flatten(sources)]
        return nest.pack_sequence_as(sources, out)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """target [b, ...] and source [b, ...] independent per example: [b, target..., source...]."""
        from . import _ops
        self._check_use("batch_jacobian")
        zero = UnconnectedGradients(unconnected_gradients) == UnconnectedGradients.ZERO
        with self._paused():
            j = self._tape._jacobian(target, source, zero)
        if j is None:
            return None
        b = target._shape[0]
        t_rest, s_rest = target.ndim - 1, source.ndim - 1
        # j: [b, T..., b, S...]; keep the diagonal over the two batch dims.
        perm = [0, t_rest + 1] + list(range(1, t_rest + 1)) + list(range(t_rest + 2, t_rest + 2 + s_rest))
        jt = _ops.transpose(j, perm)  # [b, b, T..., S...]
        flat = _ops.reshape(jt, [b * b, -1])
        idx = _ops.constant([i * b + i for i in range(b)], dtype="int64")
        diag = _ops.gather(flat, idx)
        return _ops.reshape(diag, [b] + list(target._shape[1:]) + list(source._shape[1:]))

    @contextlib.contextmanager
    def _paused(self):
        # The gradient ops are not recorded on this tape itself (an outer tape records them).
        if self._recording:
            self._tape._pause()
            try:
                yield
            finally:
                self._tape._resume()
        else:
            yield


def gradients(ys, xs, grad_ys=None, name="gradients", gate_gradients=False, aggregation_method=None,
              stop_gradients=None, unconnected_gradients=UnconnectedGradients.NONE):
    """tf.gradients (graph mode): symbolic gradients of sum(ys) with respect to xs."""
    from . import _graph
    return _graph.symbolic_gradients(ys, xs, grad_ys, unconnected_gradients)


def custom_gradient(f=None):
    """tf.custom_gradient: f returns (y, grad_fn); the gradient of y is grad_fn(dy).

    Runs f with the tape paused, then records y = identity-of-inputs with the user's
    gradient through a stop_gradient trick: y' = y_stopped + (x - stop_gradient(x)) * 0 is
    not enough for arbitrary grad_fn, so the gradient is attached with tf.py-style replay:
    the result is identity(y) recorded as a function of the inputs whose vjp is grad_fn.
    """
    if f is None:
        return custom_gradient
    from ._custom_gradient import make_custom_gradient
    return functools.wraps(f)(make_custom_gradient(f))
