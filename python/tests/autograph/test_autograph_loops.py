# SPDX-License-Identifier: Apache-2.0
"""while and for loops: dispatch, break/continue/return, datasets, errors."""
import pytest

import autograph as ag
from fake_backend import FakeBackend, FakeDataset, FakeInvalidArgumentError, cast, constant
from fake_backend import tf_range


def count_down(n):
    s = 0
    while n > 0:
        s = s + n
        n = n - 1
    return s


def test_tensor_while_becomes_while_loop(backend):
    assert ag.to_graph(count_down)(constant(4)).value == 10
    assert backend.calls['while_loop'] == 1


def test_python_while_stays_python(backend):
    assert ag.to_graph(count_down)(4) == 10
    assert backend.calls['while_loop'] == 0


def test_python_while_with_tensor_body_values(backend):
    def f(x):
        i = 0
        while i < 3:
            x = x * 2
            i += 1
        return x

    assert ag.to_graph(f)(constant(1)).value == 8
    assert backend.calls['while_loop'] == 0


def test_loop_temporaries_are_not_loop_vars(backend):
    def f(n):
        total = 0
        i = 0
        while i < n:
            step = i * 2   # assigned before any read: local to the body
            total += step
            i += 1
        return total

    assert ag.to_graph(f)(constant(3)).value == 6
    assert ag.to_code(f).count("('i', 'total')") == 1


def test_for_over_tensor(backend):
    def f(t):
        s = 0
        for x in t:
            s += x
        return s

    assert ag.to_graph(f)(constant([1, 2, 3, 4])).value == 10
    assert backend.calls['while_loop'] == 1
    assert backend.last_while_options['maximum_iterations'].value == 4


def test_for_over_tensor_rows(backend):
    def f(m):
        s = constant([0, 0])
        for row in m:
            s = s + row
        return s

    assert ag.to_graph(f)(constant([[1, 2], [3, 4]])).value == [4, 6]


def test_for_over_tf_range(backend):
    def f(n):
        s = 0
        for i in tf_range(n):
            s += i
        return s

    assert ag.to_graph(f)(constant(5)).value == 10
    assert backend.calls['while_loop'] == 1


def test_for_over_builtin_range_of_tensor(backend):
    def f(n):
        s = 0
        for i in range(n):
            s += i
        return s

    g = ag.to_graph(f)
    assert g(constant(4)).value == 6
    assert backend.calls['while_loop'] == 1
    assert g(4) == 6
    assert backend.calls['while_loop'] == 1


def test_for_over_python_list_is_unrolled(backend):
    def f(xs):
        s = constant(0)
        for x in xs:
            if x > 1:
                s = s + x
        return s

    assert ag.to_graph(f)([constant(1), constant(2), constant(3)]).value == 5
    assert backend.calls['while_loop'] == 0
    assert backend.calls['cond'] == 3


def test_for_target_and_else_python(backend):
    def f(xs):
        found = -1
        for x in xs:
            if x == 3:
                found = x
                break
        else:
            found = 0
        return found, x

    g = ag.to_graph(f)
    assert g([1, 3, 5]) == (3, 3)
    assert g([1, 2]) == (0, 2)


def test_for_over_dataset(backend):
    def f(ds):
        total = 0
        count = 0
        for x in ds:
            total += x
            count += 1
        return total, count

    ds = FakeDataset([constant(v) for v in (2, 4, 6)])
    total, count = ag.to_graph(f)(ds)
    assert (total.value, count.value) == (12, 3)
    assert backend.calls['dataset_reduce'] == 1
    assert backend.calls['while_loop'] == 0


def test_dataset_with_tuple_elements_and_break(backend):
    def f(ds):
        total = 0
        for x, y in ds:
            if x > 2:
                break
            total += x * y
        return total

    ds = FakeDataset([(constant(v), constant(10)) for v in (1, 2, 3, 1)])
    assert ag.to_graph(f)(ds).value == 30


@pytest.mark.parametrize('n, expected', [(0, 0), (3, 3), (10, 3)])
def test_break_in_tensor_while(backend, n, expected):
    def f(n):
        i = 0
        while i < n:
            if i * i > 5:
                break
            i += 1
        return i

    assert ag.to_graph(f)(constant(n)).value == expected
    assert ag.to_graph(f)(n) == expected == f(n)


def test_continue_in_tensor_for(backend):
    def f(t):
        s = 0
        for x in t:
            if x % 2 == 1:
                continue
            s += x
        return s

    assert ag.to_graph(f)(constant([1, 2, 3, 4, 6])).value == 12
    assert ag.to_graph(f)([1, 2, 3, 4, 6]) == 12


def test_break_and_continue_in_nested_tensor_loops(backend):
    def f(m):
        s = 0
        for row in m:
            for x in row:
                if x < 0:
                    break
                if x % 2 == 0:
                    continue
                s += x
        return s

    m = [[1, 2, 3, -1, 5], [7, -1, 9], [2, 3, 4, 5, 1]]
    expected = ag.to_graph(f)(m)
    assert expected == (1 + 3) + 7 + (3 + 5 + 1)
    # Rows of a tensor must share a length: pad with values after a -1.
    t = constant([[1, 2, 3, -1, 5], [7, -1, 9, 9, 9], [2, 3, 4, 5, 1]])
    assert ag.to_graph(f)(t).value == expected
    assert backend.calls['while_loop'] == 4


def test_nested_tensor_while_and_if(backend):
    def f(n):
        total = 0
        i = 0
        while i < n:
            j = 0
            while j < i:
                if (i + j) % 2 == 0:
                    total += i * j
                j += 1
            i += 1
        return total

    assert ag.to_graph(f)(constant(5)).value == f(5)


def test_unconditional_return_in_tensor_loop(backend):
    def f(t):
        s = 0
        for x in t:
            s += x
            return s
        return s

    assert ag.to_graph(f)(constant([3, 4])).value == 3


def test_return_in_both_branches_in_tensor_loop(backend):
    def f(n):
        s = 0
        while n > 0:
            n -= 1
            s += n
            if n % 2 > 0:
                return s
            else:
                return -s
        return s

    assert ag.to_graph(f)(constant(4)).value == 3
    assert ag.to_graph(f)(constant(3)).value == -2


def test_return_in_tensor_loop_needs_one_iteration(backend):
    def f(t):
        s = 0
        for x in t:
            s += x
            return s
        return s

    with pytest.raises(FakeInvalidArgumentError, match='loop must iterate at least once '
                                                       'to initialize the function return'):
        ag.to_graph(f)(constant([]))


def test_return_in_tensor_loop_without_zeros_like(backend):
    ag.set_backend(FakeBackend(with_optional=False))

    def f(t):
        for x in t:
            return x
        return t

    with pytest.raises(NotImplementedError, match='a return statement cannot be placed '
                                                  'inside this TensorFlow loop'):
        ag.to_graph(f)(constant([1]))


def test_conditional_return_in_tensor_loop_is_rejected(backend):
    def f(t):
        for x in t:
            if x > 2:
                return x
        return 0

    assert ag.to_graph(f)([1, 3]) == 3
    with pytest.raises(NotImplementedError, match='a return statement cannot be placed'):
        ag.to_graph(f)(constant([1, 3]))


def test_variable_first_defined_in_tensor_loop(backend):
    def f(n):
        i = 0
        while i < n:
            last = i * 10
            i += 1
        return last

    assert ag.to_graph(f)(constant(3)).value == 20


def test_loop_var_not_defined_before_loop_error(backend):
    def f(n):
        i = 0
        while i < n:
            acc = acc + i   # read before it is ever assigned
            i += 1
        return acc

    with pytest.raises(ValueError, match="'acc' must be defined before the loop"):
        ag.to_graph(f)(constant(3))


def test_loop_var_not_defined_without_zeros_like(backend):
    ag.set_backend(FakeBackend(with_optional=False))

    def f(n):
        i = 0
        while i < n:
            last = i
            i += 1
        return last

    with pytest.raises(ValueError, match="'last' must be defined before the loop"):
        ag.to_graph(f)(constant(3))


def test_loop_var_none_becomes_placeholder_in_while(backend):
    def f(n):
        x = None
        i = 0
        while i < n:
            x = i
            i += 1
        return x

    assert ag.to_graph(f)(2) == 1
    assert ag.to_graph(f)(constant(2)).value == 1


def test_loop_var_none_error(backend):
    def f(ds):
        x = None
        for e in ds:
            x = e
        return x

    with pytest.raises(ValueError, match="'x' is not allowed to be None before the loop"):
        ag.to_graph(f)(FakeDataset([constant(1)]))


def test_loop_var_dtype_change_error(backend):
    def f(n):
        x = constant(0)
        i = 0
        while i < n:
            x = cast(x, 'float32') + 1.5
            i += 1
        return x

    with pytest.raises(TypeError, match="'x' has dtype int32 before the loop, but dtype "
                                        "float32 after one iteration"):
        ag.to_graph(f)(constant(2))


def test_loop_var_shape_change_error(backend):
    def grow(v):
        return constant(v.value + [0])

    def f(n):
        v = constant([1])
        for i in tf_range(n):
            v = grow(v)
        return v

    with pytest.raises(ValueError, match=r"'v' has shape \(1,\) before the loop, but shape "
                                         r"\(2,\) after one iteration. Use "
                                         r"tf.autograph.experimental.set_loop_options"):
        ag.to_graph(f)(constant(3))


def test_set_loop_options_shape_invariants(backend):
    def grow(v):
        return constant(v.value + [0])

    def f(n):
        v = constant([1])
        for i in tf_range(n):
            ag.experimental.set_loop_options(shape_invariants=[(v, (None,))])
            v = grow(v)
        return v

    assert ag.to_graph(f)(constant(3)).value == [1, 0, 0, 0]
    # The hidden iteration index comes first; `i` is not carried (unused after).
    assert backend.last_while_options['shape_invariants'] == (None, (None,))


def test_set_loop_options_maximum_iterations(backend):
    def f(n):
        count = 0
        for i in tf_range(n):
            ag.set_loop_options(maximum_iterations=3)
            count += 1
        return count

    assert ag.to_graph(f)(constant(10)).value == 3
    assert 'set_loop_options' not in ag.to_code(f)
    ag.set_loop_options(maximum_iterations=3)   # a no-op outside converted loops


def test_python_condition_becoming_tensor_error(backend):
    def f(x):
        s = 0
        while x > 0:
            x -= 1
            if x % 2 == constant(1):
                break
            s += x
        return s

    with pytest.raises(NotImplementedError, match='condition of while loop started as '
                                                  'non-Tensor, then changed to Tensor'):
        ag.to_graph(f)(3)


def test_tensor_break_in_python_for_error(backend):
    def f(xs):
        s = 0
        for c in xs:
            if c % 2 > constant(0):
                break
            s += c
        return s

    with pytest.raises(NotImplementedError, match='not supported in Python for loops'):
        ag.to_graph(f)([1, 2])


def test_while_condition_must_be_boolean(backend):
    def f(n):
        while n:
            n = n - 1
        return n

    with pytest.raises(ValueError, match='condition of while loop expected to be `tf.bool`'):
        ag.to_graph(f)(constant(3))


def test_side_effect_only_loop(backend):
    def f(t):
        for x in t:
            backend.print_(x)

    ag.to_graph(f)(constant([1, 2]))
    assert backend.printed == ['1', '2']


def test_loop_var_structure_change_error(backend):
    def f(n):
        x = constant(0)
        i = 0
        while i < n:
            x = (x, x)
            i += 1
        return x

    with pytest.raises(TypeError, match="'x' does not have the same nested structure after "
                                        "one iteration"):
        ag.to_graph(f)(constant(2))


def test_shape_invariant_violation_error(backend):
    def f(n):
        v = constant([1, 2])
        for i in tf_range(n):
            ag.set_loop_options(shape_invariants=[(v, (2,))])
            v = constant(v.value + [0])
        return v

    with pytest.raises(ValueError, match=r"'v' has shape \(3,\) after one iteration, which "
                                         r"does not conform with the shape invariant \(2,\)"):
        ag.to_graph(f)(constant(2))


def test_tensor_for_else_runs_when_no_break(backend):
    def f(t):
        found = constant(-1)
        for x in t:
            if x < 0:
                found = x
                break
        else:
            found = constant(0)
        return found

    g = ag.to_graph(f)
    assert g(constant([1, -2, 3])).value == -2
    assert g(constant([1, 2])).value == 0


def test_len_of_tensor(backend):
    def f(t):
        n = len(t)
        s = 0
        for i in range(n):
            s += t[i]
        return n, s

    n, s = ag.to_graph(f)(constant([4, 5, 6]))
    assert n == 3 and s.value == 15   # static dim 0: a Python int, so range unrolls
    assert backend.calls['while_loop'] == 0


def test_loop_var_none_after_iteration_error(backend):
    def f(n):
        x = constant(1)
        i = 0
        while i < n:
            x = None
            i += 1
        return x

    with pytest.raises(ValueError, match="'x' is None at the end of the iteration."):
        ag.to_graph(f)(constant(2))
