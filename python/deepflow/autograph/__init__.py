# SPDX-License-Identifier: Apache-2.0
"""AutoGraph: converts Python control flow on tensors into staged control flow.

As TensorFlow's tf.function does before tracing, `to_graph(fn)` rewrites fn's
source (stdlib `ast`, no third-party packages) so that `if`, `while`, `for`,
`and`/`or`/`not` and `a if c else b` call runtime operators.  The operators
look at the value they get: a tensor condition or iterable goes to the
backend's cond / while_loop / dataset_reduce (every branch traced), anything
else runs as ordinary Python (one branch, unrolled loops).  `break`,
`continue` and `return` inside loops and ifs are first rewritten into boolean
variables.  Calls inside converted code go through `converted_call`, which
converts user functions on the fly and leaves allowlisted modules alone.

Public API
    to_graph(fn, recursive=True)   converted function (warns and returns fn
                                   unchanged when it cannot convert)
    convert(fn=None, recursive=True)  the same, usable as a decorator
    to_code(fn)                    the converted source, as a string
    do_not_convert(fn)             never convert fn (nor what it calls)
    experimental.do_not_convert / experimental.set_loop_options / Feature
    converted_call(f, args, kwargs)
    register_allowlisted_module_prefix(prefix)
    set_backend(backend) / get_backend()
    ControlStatusCtx, Status, control_status_ctx, operator_not_allowed
    OperatorNotAllowedInGraphError (a TypeError), AutoGraphError,
    ConversionError, AutoGraphWarning

Allowlist: functions whose module is in the standard library
(sys.stdlib_module_names), `builtins`, `numpy`, this package, or a prefix
given to register_allowlisted_module_prefix (a prefix matches the module and
its submodules) are called unconverted.  So are classes (constructors),
generators, coroutines, the methods __init__/__new__/__iter__/__next__/
__enter__/__exit__ and other implicitly-invoked dunders, functions from
exec'd strings, and anything decorated with do_not_convert.

The backend protocol
    set_backend(obj) installs the object the operators use for tensors.  It
    must have these callables (set_backend raises TypeError when one is
    missing):

    is_tensor(x) -> bool
        True for values whose control flow must be staged.
    is_dataset(x) -> bool
        True for datasets: `for x in ds` becomes dataset_reduce.
    cond(pred, true_fn, false_fn) -> tuple
        pred is a tensor; true_fn/false_fn take no arguments and return a
        tuple (possibly empty; items may be nested lists/tuples/dicts, Python
        scalars or tensors).  Both are called (traced), then the result of
        the branch pred selects is returned, with the same structure.
    while_loop(cond_fn, body_fn, loop_vars, maximum_iterations=None,
               [shape_invariants=...]) -> tuple
        As tf.while_loop: cond_fn(*vars) -> boolean scalar tensor,
        body_fn(*vars) -> tuple of new vars.  loop_vars may hold Python
        scalars (e.g. a False break flag) that become tensors.
        maximum_iterations may be None, an int or a scalar tensor.
        shape_invariants is passed (a tuple with one shape or None per loop
        var) only when the user gave set_loop_options(shape_invariants=...).
    logical_and(a, b), logical_or(a, b), logical_not(a)
        Elementwise boolean ops; `a` is a tensor, `b` may be a Python bool.
    tensor_len(t)
        Dim 0 of t as a scalar tensor (may be symbolic).
    getitem(t, i)
        t[i] for a scalar index i (a Python int or scalar int tensor).
    dataset_reduce(ds, initial_state, reduce_fn) -> tuple
        As Dataset.reduce: reduce_fn(state_tuple, element) -> state_tuple.
    dtype_of(x), shape_of(x)
        For the consistency checks: x's dtype (compared with ==; its `.name`
        or str() is printed, and 'bool' marks a boolean) and shape (a tuple
        of ints, None for an unknown dim), or None when unknown / not a
        tensor.

    Optional members, used when present:
    zeros_like(x)
        Lets a tensor loop carry a variable first assigned inside it (and a
        `return` inside a tensor loop): one iteration is staged to learn its
        type, and zeros_like(value) is the initial value.  Without it such a
        variable raises "'x' must be defined before the loop".
    assert_true(pred, message)
        Staged check that such a loop ran at least once ("loop must iterate
        at least once to initialize x"); skipped when absent.
    staging_scope()
        Context manager for throw-away tracing (the first evaluation of a
        while condition, the extra iteration above); TensorFlow uses a
        temporary FuncGraph.  Defaults to a no-op context.
    range(start, limit=None, delta=None)
        Used for `range(...)` calls whose arguments include a tensor.

    Python operators on tensors are used directly: `index < n` and
    `index + 1` for tensor for-loops.  Until a backend is set, nothing is a
    tensor and converted code runs as plain Python.

Limits (what is not converted, or differs from TensorFlow)
    - Python lists do not become TensorArrays (no Feature.LISTS): a list
      grown inside a tensor loop is appended to once per trace.  Subscript
      stores (`a[i] = v`) are not loop/branch state; attribute stores
      (`self.x = v`) are, and count as live everywhere.
    - `assert`, `print`, and builtins other than range and len run as
      Python (use tf.print / tf.debugging); `for x in iter(ds)` is a Python
      loop.
    - A `return` that depends on a tensor condition inside a tensor loop is
      rejected (as in TensorFlow); unconditional returns there need
      zeros_like.  After a break in a dataset loop the remaining elements
      are still visited, with the body skipped (no scan/take_while).
    - A loop variable first assigned inside a tensor loop needs zeros_like
      (see above); with it, as in TensorFlow, the loop must run once.
    - to_graph does not convert classes.  Generators, coroutines and
      functions using private (mangled) attribute names fall back with the
      warning; nested generator functions are left unconverted.
    - Errors raised in converted code are not rewritten (TensorFlow adds a
      source-mapped frame summary); tracebacks show the user's lines, plus
      frames of the generated helpers (if_body, loop_body, ...) and of the
      operators.
    - The warning text is TensorFlow's, including its "Please report this
      to the TensorFlow team" line for unexpected conversion errors.

Control status
    Code converted by to_graph does not change the status by itself; the
    caller that traces it (tf.function) should run it inside
    `ControlStatusCtx(Status.ENABLED)`.  do_not_convert runs its function
    with Status.DISABLED.  A symbolic tensor's __bool__/__iter__ can raise
    `operator_not_allowed("Using a symbolic `tf.Tensor` as a Python `bool`")`
    to get TensorFlow's message for the current status.
"""
from . import experimental
from .api import (convert, converted_call, do_not_convert, is_allowlisted,
                  is_autograph_artifact, register_allowlisted_module_prefix, to_code,
                  to_graph)
from .backend import get_backend, set_backend
from .conversion import ConversionOptions
from .errors import (AutoGraphError, AutoGraphWarning, ControlStatusCtx, ConversionError,
                     InaccessibleSourceCodeError, OperatorNotAllowedInGraphError, Status,
                     UnsupportedLanguageElementError, control_status_ctx,
                     operator_not_allowed)
from .operators import set_loop_options
from .variables import Undefined, UndefinedReturnValue

__all__ = [
    'to_graph', 'convert', 'to_code', 'do_not_convert', 'converted_call',
    'experimental', 'set_loop_options', 'register_allowlisted_module_prefix',
    'is_allowlisted', 'is_autograph_artifact', 'set_backend', 'get_backend',
    'ControlStatusCtx', 'Status', 'control_status_ctx', 'operator_not_allowed',
    'ConversionOptions', 'AutoGraphError', 'AutoGraphWarning', 'ConversionError',
    'InaccessibleSourceCodeError', 'OperatorNotAllowedInGraphError',
    'UnsupportedLanguageElementError', 'Undefined', 'UndefinedReturnValue',
]
