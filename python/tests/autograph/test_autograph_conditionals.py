# SPDX-License-Identifier: Apache-2.0
"""if statements, conditional expressions and and/or/not."""
import pytest

import autograph as ag
from fake_backend import FakeTensor, constant, tf_print


def abs_value(x):
    if x > 0:
        y = x
    else:
        y = -x
    return y


def test_tensor_if_becomes_cond(backend):
    f = ag.to_graph(abs_value)
    assert f(constant(-4)).value == 4
    assert f(constant(5)).value == 5
    assert backend.calls['cond'] == 2


def test_python_if_runs_one_branch(backend):
    f = ag.to_graph(abs_value)
    assert f(-4) == 4
    assert f(5) == 5
    assert backend.calls['cond'] == 0


def test_both_branches_traced_side_effects_only_on_taken_path(backend):
    traced = []

    def f(x):
        if x > 0:
            traced.append('main')
            tf_print('positive')
        else:
            traced.append('else')
            tf_print('negative')
        return x

    ag.to_graph(f)(constant(1))
    assert traced == ['main', 'else']
    assert backend.printed == ['positive']
    traced.clear()
    ag.to_graph(f)(1)
    assert traced == ['main']


def test_if_without_else_and_elif(backend):
    def classify(x):
        label = 0
        if x > 10:
            label = 2
        elif x > 0:
            label = 1
        return label

    f = ag.to_graph(classify)
    assert [f(constant(v)).value for v in (-1, 5, 11)] == [0, 1, 2]
    assert backend.calls['cond'] == 6
    assert [f(v) for v in (-1, 5, 11)] == [0, 1, 2]
    assert backend.calls['cond'] == 6


def test_nested_ifs_mixed_conditions(backend):
    def f(x, flag):
        if flag:
            if x > 0:
                x = x + 100
            else:
                x = x - 100
        return x

    g = ag.to_graph(f)
    assert g(constant(1), True).value == 101
    assert g(constant(-1), True).value == -101
    assert g(constant(1), False).value == 1
    assert backend.calls['cond'] == 2


def test_unmodified_python_values_stay_python(backend):
    def f(x, scale):
        if x > 0:
            y = x * scale
        else:
            y = x
        return y, scale

    y, scale = ag.to_graph(f)(constant(2), 3)
    assert y.value == 6 and scale == 3 and type(scale) is int


def test_local_of_one_branch_not_used_after_is_fine(backend):
    def f(x):
        if x > 0:
            tmp = x * 2
            x = tmp + 1
        return x

    assert ag.to_graph(f)(constant(3)).value == 7


def test_branches_start_from_the_same_state(backend):
    def f(x):
        y = constant(1)
        z = constant(0)
        if x > 0:
            y = constant(2)
        else:
            z = y   # must see y == 1, not the main branch's 2
        return z

    assert ag.to_graph(f)(constant(-1)).value == 1


def test_undefined_in_else_branch_error(backend):
    def f(x):
        if x > 0:
            y = x
        return y

    with pytest.raises(ValueError, match="'y' must also be initialized in the else branch"):
        ag.to_graph(f)(constant(1))


def test_undefined_in_main_branch_error(backend):
    def f(x):
        if x > 0:
            pass
        else:
            y = x
        return y

    with pytest.raises(ValueError, match="'y' must also be initialized in the main branch"):
        ag.to_graph(f)(constant(1))


def test_python_if_leaves_python_unbound_error(backend):
    def f(x):
        if x > 0:
            y = x
        return y

    assert ag.to_graph(f)(1) == 1
    with pytest.raises(UnboundLocalError, match="'y' is used before assignment"):
        ag.to_graph(f)(-1)


def test_dtype_mismatch_error(backend):
    def f(x):
        if x > 0:
            y = constant(1)
        else:
            y = constant(1.5)
        return y

    with pytest.raises(TypeError, match="'y' has dtype int32 in the main branch, but "
                                        "dtype float32 in the else branch"):
        ag.to_graph(f)(constant(1))


def test_none_in_branch_error(backend):
    def f(x):
        y = constant(0)
        if x > 0:
            y = None
        return y

    with pytest.raises(ValueError, match="'y' is None at the end of the main branch."):
        ag.to_graph(f)(constant(1))


def test_structure_mismatch_error(backend):
    def f(x):
        if x > 0:
            y = (constant(1), constant(2))
        else:
            y = constant(1)
        return y

    with pytest.raises(TypeError, match="'y' must have the same nested structure in the "
                                        "main and else branches"):
        ag.to_graph(f)(constant(1))


def test_condition_must_be_boolean(backend):
    def f(x):
        if x:
            x = x + 1
        return x

    with pytest.raises(ValueError, match='condition of if statement expected to be '
                                         '`tf.bool` scalar'):
        ag.to_graph(f)(constant(3))


def test_returns_in_both_branches(backend):
    def f(x):
        if x > 0:
            return x * 2
        return -x

    g = ag.to_graph(f)
    assert g(constant(3)).value == 6
    assert g(constant(-3)).value == 3
    assert g(3) == 6 and g(-3) == 3


def test_return_in_only_one_branch_error(backend):
    def f(x):
        if x > 0:
            if x < 5:
                return x
        else:
            return x * x

    assert ag.to_graph(f)(3) == 3
    assert ag.to_graph(f)(7) is None
    with pytest.raises(ValueError, match='else branch must also have a return statement'):
        ag.to_graph(f)(constant(3))


def test_conditional_expression(backend):
    def f(x):
        return x if x > 0 else -x

    g = ag.to_graph(f)
    assert g(constant(-2)).value == 2
    assert backend.calls['cond'] == 1
    assert g(-2) == 2
    assert backend.calls['cond'] == 1


def test_conditional_expression_python_is_lazy(backend):
    def f(x):
        return 1 if x is None else x.missing_attribute

    assert ag.to_graph(f)(None) == 1


def test_conditional_expression_structure_error(backend):
    def f(x):
        return (x, x) if x > 0 else x

    with pytest.raises(ValueError, match='conditional expression "x > 0" must return the '
                                         'same nested structure in both branches'):
        ag.to_graph(f)(constant(1))


def test_and_or_not_on_tensors(backend):
    def f(a, b):
        return (a > 0 and b > 0), (a > 0 or b > 0), not a > 0

    both, either, neither = ag.to_graph(f)(constant(1), constant(-1))
    assert (both.value, either.value, neither.value) == (False, True, False)
    assert backend.calls['logical_and'] == 1
    assert backend.calls['logical_or'] == 1
    assert backend.calls['logical_not'] == 1


def test_and_or_python_short_circuit(backend):
    calls = []

    def second():
        calls.append(1)
        return True

    def f(a):
        return (a and second()), (a or second())

    assert ag.to_graph(f)(False) == (False, True)
    assert calls == [1]


def test_and_mixed_python_first(backend):
    def f(flag, x):
        return flag and x > 0

    g = ag.to_graph(f)
    assert g(False, constant(1)) is False
    assert g(True, constant(1)).value is True
    assert backend.calls['logical_and'] == 0


def test_multi_operand_and_in_if(backend):
    def f(a, b, c):
        if a > 0 and b > 0 and c > 0:
            r = constant(1)
        else:
            r = constant(0)
        return r

    g = ag.to_graph(f)
    assert g(constant(1), constant(1), constant(1)).value == 1
    assert g(constant(1), constant(-1), constant(1)).value == 0
    assert backend.calls['logical_and'] == 4


def test_symbolic_bool_outside_conversion_raises(backend):
    with pytest.raises(ag.OperatorNotAllowedInGraphError) as info:
        bool(constant(True))
    assert isinstance(info.value, TypeError)
    assert 'Using a symbolic `tf.Tensor` as a Python `bool` is not allowed' in str(info.value)


def test_attribute_state_in_tensor_if(backend):
    class Box:
        pass

    def f(box, x):
        if x > 0:
            box.value = x + 1
        else:
            box.value = x - 1
        return box.value

    box = Box()
    assert ag.to_graph(f)(box, constant(1)).value == 2
    assert isinstance(box.value, FakeTensor) and box.value.value == 2
