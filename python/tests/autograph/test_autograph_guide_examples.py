# SPDX-License-Identifier: Apache-2.0
"""The AutoGraph examples of TensorFlow's tf.function and AutoGraph guides.

Written against the fake backend: `constant`, `tf_range`, `tf_print` stand
for tf.constant, tf.range and tf.print.
"""
import autograph as ag
from fake_backend import FakeDataset, constant, tf_print, tf_range

traced = []


def fizzbuzz(n):
    for i in tf_range(1, n + 1):
        traced.append('for loop')
        if i % 15 == 0:
            traced.append('fizzbuzz branch')
            tf_print('fizzbuzz')
        elif i % 3 == 0:
            traced.append('fizz branch')
            tf_print('fizz')
        elif i % 5 == 0:
            traced.append('buzz branch')
            tf_print('buzz')
        else:
            traced.append('default branch')
            tf_print(i)


def test_fizzbuzz_with_tf_range(backend):
    traced.clear()
    ag.to_graph(fizzbuzz)(constant(15))
    assert backend.printed == ['1', '2', 'fizz', '4', 'buzz', 'fizz', '7', '8', 'fizz',
                               'buzz', '11', 'fizz', '13', '14', 'fizzbuzz']
    # Every branch is traced, whatever the value of i (as the guide shows).
    assert {'fizzbuzz branch', 'fizz branch', 'buzz branch', 'default branch'} <= set(traced)
    assert backend.calls['while_loop'] == 1


def test_fizzbuzz_python_range_unrolls(backend):
    def fizzbuzz_py(n):
        out = []
        for i in range(1, n + 1):
            if i % 15 == 0:
                out.append('fizzbuzz')
            elif i % 3 == 0:
                out.append('fizz')
            elif i % 5 == 0:
                out.append('buzz')
            else:
                out.append(str(i))
        return out

    assert ag.to_graph(fizzbuzz_py)(5) == ['1', '2', 'fizz', '4', 'buzz']
    assert backend.calls['while_loop'] == backend.calls['cond'] == 0


def square_if_positive(x):
    if x > 0:
        x = x * x
    else:
        x = 0
    return x


def test_square_if_positive(backend):
    f = ag.to_graph(square_if_positive)
    assert f(constant(9)).value == 81
    assert f(constant(-9)).value == 0
    assert f(9) == 81


def sum_even(items):
    s = 0
    for c in items:
        if c % 2 > 0:
            continue
        s += c
    return s


def test_sum_even_over_tensor(backend):
    assert ag.to_graph(sum_even)(constant([10, 12, 15, 20])).value == 42
    assert backend.calls['while_loop'] == 1


def sum_to(n):
    total = 0
    i = 1
    while i <= n:
        total += i
        i += 1
    return total


def test_while_loop_summing(backend):
    assert ag.to_graph(sum_to)(constant(100)).value == 5050
    assert backend.calls['while_loop'] == 1
    assert ag.to_graph(sum_to)(100) == 5050


def reduce_until_small(x):
    while x > 1:
        tf_print(x)
        x = x / 2
    return x


def test_while_with_tensor_condition_and_print(backend):
    result = ag.to_graph(reduce_until_small)(constant(8.0))
    assert result.value == 1.0
    assert backend.printed == ['8.0', '4.0', '2.0']


def train(dataset):
    loss = constant(0)
    for x, y in dataset:
        loss += abs(y - x)   # some dummy computation
    return loss


def test_training_loop_python_list_vs_dataset(backend):
    small_data = [(constant(1), constant(3))] * 3
    assert ag.to_graph(train)(small_data).value == 6
    assert backend.calls['dataset_reduce'] == 0   # a list: unrolled in Python
    assert ag.to_graph(train)(FakeDataset(small_data)).value == 6
    assert backend.calls['dataset_reduce'] == 1


def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def test_collatz_ternary_in_tensor_loop(backend):
    assert ag.to_graph(collatz_steps)(constant(27)).value == collatz_steps(27) == 111


def first_negative_index(t):
    index = -1
    i = 0
    for x in t:
        if x < 0:
            index = i
            break
        i += 1
    return index


def test_search_with_break(backend):
    assert ag.to_graph(first_negative_index)(constant([3, 1, -4, 1, -5])).value == 2
    assert ag.to_graph(first_negative_index)(constant([3, 1])).value == -1
