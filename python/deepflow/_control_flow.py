# SPDX-License-Identifier: Apache-2.0
"""tf.cond, tf.while_loop, tf.case, tf.switch_case over the core's cond and while ops
(deepflow/function/control_flow.h): eagerly they run one branch or a plain loop; while a
graph is built each branch and the loop body are traced into the op."""
from . import _deepflow
from . import nest
from ._op_util import convert_to_tensor

Tensor = _deepflow.Tensor


def _flat_tensors(values, who):
    out = []
    for v in nest.flatten(values):
        if v is None:
            raise ValueError(f"[{who}] a branch or loop body returned None where a tensor is needed")
        out.append(v.value() if isinstance(v, _deepflow.Variable) else convert_to_tensor(v))
    return out


def cond(pred, true_fn=None, false_fn=None, name=None):
    """true_fn() if pred else false_fn(); both must return the same structure of tensors."""
    if true_fn is None or false_fn is None:
        raise TypeError("cond(): 'true_fn' and 'false_fn' arguments are required")
    if not callable(true_fn):
        raise TypeError("'true_fn' must be callable.")
    if not callable(false_fn):
        raise TypeError("'false_fn' must be callable.")
    if isinstance(pred, bool):
        return true_fn() if pred else false_fn()
    pred = convert_to_tensor(pred)
    if not pred._is_symbolic and not _deepflow._building_graph():
        return true_fn() if bool(pred) else false_fn()
    structure = {}

    def branch(fn, which):
        def run(_):
            r = fn()
            if "s" in structure:
                try:
                    nest.assert_same_structure(structure["s"], r, check_types=False)
                except (TypeError, ValueError) as e:
                    raise ValueError("true_fn and false_fn arguments to tf.cond must have the same number, "
                                     f"type, and overall structure of return values.\n\n{e}") from None
            else:
                structure["s"] = r
            return _flat_tensors(r, "tf.cond")
        return run

    out = _deepflow.cond(pred, branch(true_fn, "true"), branch(false_fn, "false"))
    return nest.pack_sequence_as(structure["s"], list(out))


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,
               swap_memory=False, maximum_iterations=None, name=None):
    """Repeats body while cond is true; loop_vars is any nested structure of tensors."""
    if not callable(cond):
        raise TypeError("'cond' must be callable.")
    if not callable(body):
        raise TypeError("'body' must be callable.")
    if isinstance(maximum_iterations, Tensor) and maximum_iterations._is_symbolic:
        return _counted_while(cond, body, loop_vars, maximum_iterations)
    if isinstance(maximum_iterations, Tensor):
        maximum_iterations = int(maximum_iterations)
    single = not isinstance(loop_vars, (list, tuple)) or isinstance(loop_vars, Tensor)
    structure = [loop_vars] if single else loop_vars
    flat = _flat_tensors(structure, "tf.while_loop")

    def unflat(ts):
        return nest.pack_sequence_as(structure, list(ts))

    def c(ts):
        return [convert_to_tensor(cond(*unflat(ts)))]

    def b(ts):
        r = body(*unflat(ts))
        r = [r] if single else r
        if single and isinstance(r, list) and len(r) == 1 and isinstance(r[0], (list, tuple)):
            r = r[0]
        return _flat_tensors(r, "tf.while_loop")

    out = unflat(_deepflow.while_loop(c, b, flat, None if maximum_iterations is None else int(maximum_iterations)))
    return out[0] if single else out


def _counted_while(cond, body, loop_vars, limit):
    """A loop whose maximum_iterations is known only when it runs: a counter joins the
    loop variables and the condition (the core's while takes a static maximum)."""
    from ._ops import less, logical_and
    single = not isinstance(loop_vars, (list, tuple))
    vars_ = [loop_vars] if single else list(loop_vars)
    zero = convert_to_tensor(0, dtype=limit.dtype)

    def c(i, *v):
        return logical_and(less(i, limit), cond(*v))

    def b(i, *v):
        r = body(*v)
        r = [r] if single else list(r)
        return (i + 1, *r)

    out = while_loop(c, b, (zero, *vars_))[1:]
    return out[0] if single else type(loop_vars)(out) if isinstance(loop_vars, tuple) else list(out)


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The fn of the first true pred (all checked when exclusive), else default."""
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else list(pred_fn_pairs)
    if default is None:
        if not pairs:
            raise ValueError("tf.case needs at least one predicate or a default")
        *pairs, (_, default) = pairs
    fn = default
    for pred, f in reversed(pairs):
        fn = (lambda p, t, e: lambda: cond(p, t, e))(pred, f, fn)
    return fn()


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """branch_fns[branch_index](), or default (the last branch when None) out of range."""
    from ._ops import equal
    fns = sorted(branch_fns.items()) if isinstance(branch_fns, dict) else list(enumerate(branch_fns))
    if default is None:
        default = fns[-1][1]
    index = convert_to_tensor(branch_index)
    fn = default
    for i, f in reversed(fns):
        fn = (lambda k, t, e: lambda: cond(equal(index, k), t, e))(i, f, fn)
    return fn()
