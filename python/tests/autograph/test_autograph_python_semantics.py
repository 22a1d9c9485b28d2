# SPDX-License-Identifier: Apache-2.0
"""Converted code keeps Python's semantics when no tensor is involved.

Each function runs unconverted and converted on the same Python arguments;
results (or the exception type) must match.  The functions exercise the
constructs the canonicalization and lowering passes rewrite or move into
helper functions: try/finally, with, :=, del, star targets, nonlocal/global,
loop else, match, nested scopes, returns in loops and more.
"""
import functools

import pytest

import autograph as ag

G = 0


def c_try(xs):
    out = []
    for x in xs:
        try:
            if x == 0:
                raise ZeroDivisionError
            out.append(10 // x)
        except ZeroDivisionError as e:
            out.append(type(e).__name__)
            continue
        finally:
            out.append('f')
        if x > 5:
            break
    return out


def c_with(n):
    import contextlib
    log = []
    @contextlib.contextmanager
    def cm(tag):
        log.append('enter' + tag)
        yield tag
        log.append('exit' + tag)
    for i in range(n):
        with cm(str(i)) as t:
            if i == 2:
                return log, t
            log.append(t)
    return log, None


def c_walrus(xs):
    total = 0
    i = 0
    while (n := len(xs) - i) > 0:
        total += n
        i += 1
    return total, n, [y for x in xs if (y := x * 2) > 2]


def c_del(x):
    y = x
    if x > 0:
        del y
        y = 'reassigned'
    return y


def c_star(xs):
    first, *rest = xs
    if rest:
        a, *b = rest
    else:
        a, b = None, []
    return first, a, b


def c_nonlocal():
    count = 0
    def inc(k):
        nonlocal count
        if k > 0:
            count += k
        return count
    for i in range(4):
        inc(i)
    return count


def c_global(n):
    global G
    for i in range(n):
        if i % 2:
            G += i
    return G


def c_while_else(n):
    i = 0
    while i < n:
        if i == 7:
            break
        i += 1
    else:
        i = -i
    return i


def c_for_else_nested(m):
    res = []
    for row in m:
        for x in row:
            if x < 0:
                res.append('neg')
                break
        else:
            res.append('clean')
            continue
        res.append('after-break')
    return res


def c_return_in_nested_loops(m):
    for i, row in enumerate(m):
        for j, x in enumerate(row):
            if x == 'target':
                return i, j
    return None


def c_match(v):
    match v:
        case [x, y]:
            r = x + y
        case {'k': k}:
            r = k
        case _:
            r = 0
    return r


def c_class_inside(n):
    class P:
        def __init__(self, v):
            self.v = v
        def double(self):
            return self.v * 2 if self.v > 0 else 0
    return [P(i).double() for i in range(-1, n)]


def c_kwargs(*args, sep='-', **kw):
    parts = [str(a) for a in args]
    if kw:
        parts += [f'{k}={v}' for k, v in sorted(kw.items())]
    return sep.join(parts)


def c_call_kw(n):
    return c_kwargs(*range(n), sep='+', **{'z': 1}) if n else c_kwargs()


def c_decorated_inner(n):
    def deco(f):
        @functools.wraps(f)
        def w(*a):
            return f(*a) + 1
        return w
    @deco
    def g(x):
        if x > 2:
            return x * 10
        return x
    return [g(i) for i in range(n)]


def c_closure_late_binding(n):
    fs = []
    for i in range(n):
        fs.append(lambda: i)
    i = 100
    return [f() for f in fs]


def c_aug_attr(n):
    class B: pass
    b = B(); b.total = 0
    for i in range(n):
        if i % 2 == 0:
            b.total += i
    return b.total


def c_bool_chain(a, b, c):
    return (a and b or c), (not a or not b), (a or b and c)


def c_recursion(n):
    if n <= 1:
        return 1
    return n * c_recursion(n - 1)


def c_else_return(x):
    if x > 0:
        return 'pos'
    elif x < 0:
        return 'neg'
    label = 'zero'
    return label


def c_return_in_try_finally(x):
    try:
        if x > 0:
            return 1
        return 0
    finally:
        x = x + 1


def c_loop_var_after(xs):
    for i in xs:
        pass
    return i


def c_break_continue_while(n):
    s = []
    i = 0
    while True:
        i += 1
        if i % 2:
            continue
        if i > n:
            break
        s.append(i)
    return s


def c_nested_def_reads_later(n):
    def get():
        return val
    val = n
    if n > 2:
        val = n * 2
    return get()


def c_conditional_import(flag):
    if flag:
        import math as m
    else:
        import cmath as m
    return m.__name__


def c_docstring(x):
    """Doc."""
    if x:
        return 1
    return 2


def c_generator_expr(n):
    return sum(i for i in range(n) if i % 3 == 0 or i % 5 == 0)


def c_ifexp_nested(x):
    return 'a' if x > 10 else 'b' if x > 5 else 'c'


def c_unbound_after_python_if(flag):
    if flag:
        y = 1
    return y


def c_name_clash(n):
    if_body = 1
    get_state = 2
    do_return = 3
    break_ = 0
    itr = []
    for i in range(n):
        if i == 2:
            break
        itr.append(i + if_body + get_state + do_return + break_)
    return itr


def c_except_var(xs):
    msgs = []
    for x in xs:
        try:
            1 / x
        except ZeroDivisionError as err:
            msgs.append(str(err))
            if len(msgs) > 5:
                return msgs
    return msgs


def c_posonly(a, /, b, *, c=5):
    if a > b:
        return a + c
    return b - c


def c_nested_loops_return_tuple(n):
    best = None
    for i in range(n):
        for j in range(n):
            if i * j == 6:
                best = (i, j)
                break
        if best:
            break
    return best


def c_while_true_return(n):
    i = 0
    while True:
        i += 1
        if i >= n:
            return i


def c_continue_in_try(xs):
    out = 0
    for x in xs:
        try:
            if x < 0:
                continue
            out += x
        finally:
            out += 100
    return out


def c_list_mutation(n):
    acc = []
    for i in range(n):
        if i % 2:
            acc.append(i)
        else:
            acc += [i * 10]
    return acc


def c_dict_comp_closure(keys):
    base = 10
    if keys:
        base = 20
    return {k: (lambda: base + k)() for k in keys}


def c_chained_compare(x):
    if 0 < x < 10:
        return 'in'
    return 'out'


def c_assert(x):
    assert x > 0, 'must be positive'
    return x


def c_lambda_default(n):
    fs = [lambda i=i: i * 2 for i in range(n)]
    return [f() for f in fs]


CASES = [
    (c_try, [([1, 0, 2, 6, 3],), ([],)]),
    (c_with, [(4,), (1,)]),
    (c_walrus, [([1, 2, 3],)]),
    (c_del, [(1,), (-1,)]),
    (c_star, [([1, 2, 3],), ([1],)]),
    (c_nonlocal, [()]),
    (c_while_else, [(3,), (10,)]),
    (c_for_else_nested, [([[1, 2], [3, -1], []],)]),
    (c_return_in_nested_loops, [([['a', 'b'], ['c', 'target']],), ([['a']],)]),
    (c_match, [([1, 2],), ({'k': 5},), (7,)]),
    (c_class_inside, [(3,)]),
    (c_call_kw, [(3,), (0,)]),
    (c_decorated_inner, [(5,)]),
    (c_closure_late_binding, [(3,)]),
    (c_aug_attr, [(5,)]),
    (c_bool_chain, [(True, False, 3), (0, 1, 0), ([], 'x', None)]),
    (c_recursion, [(5,)]),
    (c_else_return, [(1,), (-1,), (0,)]),
    (c_return_in_try_finally, [(1,), (-1,)]),
    (c_loop_var_after, [([1, 2, 3],)]),
    (c_break_continue_while, [(7,)]),
    (c_nested_def_reads_later, [(1,), (5,)]),
    (c_conditional_import, [(True,), (False,)]),
    (c_docstring, [(1,), (0,)]),
    (c_generator_expr, [(20,)]),
    (c_ifexp_nested, [(11,), (6,), (1,)]),
    (c_unbound_after_python_if, [(True,), (False,)]),
    (c_name_clash, [(4,)]),
    (c_except_var, [([1, 0, 2, 0],)]),
    (c_posonly, [(3, 1), (1, 3)]),
    (c_nested_loops_return_tuple, [(5,), (2,)]),
    (c_while_true_return, [(3,)]),
    (c_continue_in_try, [([1, -1, 2],)]),
    (c_list_mutation, [(4,)]),
    (c_dict_comp_closure, [([1, 2],), ([],)]),
    (c_chained_compare, [(5,), (11,)]),
    (c_assert, [(1,), (-1,)]),
    (c_lambda_default, [(3,)]),
]


def _outcome(fn, args):
    try:
        return 'ok', fn(*args)
    except Exception as e:  # pylint: disable=broad-except
        return 'raised', type(e).__name__


@pytest.mark.parametrize('fn, args', [(fn, args) for fn, arglists in CASES for args in arglists],
                         ids=lambda v: getattr(v, '__name__', repr(v)))


def test_same_result_as_python(fn, args):
    global G
    G = 0
    expected = _outcome(fn, args)
    G = 0
    assert _outcome(ag.to_graph(fn), args) == expected
    assert ag.to_graph(fn) is not fn


def test_global_written_in_branch():
    global G
    G = 0
    assert ag.to_graph(c_global)(5) == 4 and G == 4
