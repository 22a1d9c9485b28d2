# SPDX-License-Identifier: Apache-2.0
"""to_graph / to_code / do_not_convert / converted_call and the conversion rules."""
import functools
import inspect
import json
import traceback
import warnings

import pytest

import ag_allowlisted_helpers
import ag_user_helpers
import autograph as ag
from autograph import conversion
from fake_backend import FakeBackend, constant

ag.register_allowlisted_module_prefix('ag_allowlisted_helpers')

COUNTER = 0


def _abs(x):
    """Absolute value."""
    if x > 0:
        return x
    return -x


@pytest.fixture
def converted_targets(monkeypatch):
    """Names of the functions converted during the test, but the tests' own `f`."""
    seen = []
    original = conversion.convert

    def spy(fn, namespace):
        if fn.__name__ != 'f':
            seen.append(fn.__name__)
        return original(fn, namespace)

    monkeypatch.setattr(conversion, 'convert', spy)
    return seen


def test_to_graph_keeps_identity_and_signature():
    def f(a, b=2, *args, c=3, **kwargs):
        """Docs."""
        return a + b + c

    g = ag.to_graph(f)
    assert g is not f
    assert (g.__name__, g.__qualname__, g.__doc__) == (f.__name__, f.__qualname__, 'Docs.')
    assert g.__wrapped__ is f
    assert inspect.signature(g) == inspect.signature(f)
    assert g(1) == 6 and g(1, c=10) == 13
    assert ag.is_autograph_artifact(g)
    assert ag.to_graph(g) is g


def test_convert_alias_and_decorator(backend):
    @ag.convert
    def f(x):
        return x if x > 0 else -x

    @ag.convert(recursive=False)
    def h(x):
        return _abs(x)

    assert f(constant(-1)).value == 1
    with pytest.raises(ag.OperatorNotAllowedInGraphError):
        h(constant(-1))


def test_closures_and_nonlocal_share_cells():
    def make():
        count = 0
        step = 2

        def bump(n):
            nonlocal count
            for _ in range(n):
                if count < 100:
                    count += step
            return count

        return bump, lambda: count

    bump, read = make()
    converted = ag.to_graph(bump)
    assert converted(3) == 6
    assert read() == 6
    assert bump(1) == 8   # the original sees the converted function's writes


def test_globals_read_and_written():
    def f(n):
        global COUNTER
        i = 0
        while i < n:
            if i % 2 == 0:
                COUNTER += 1
            i += 1
        return COUNTER

    global COUNTER
    COUNTER = 0
    assert ag.to_graph(f)(4) == 2
    assert COUNTER == 2


def test_conversion_is_cached_per_code_object():
    first = ag.to_graph(_abs)
    second = ag.to_graph(_abs)
    assert first.__code__ is second.__code__
    assert conversion.is_converted_code(first.__code__)


def test_to_code_output_compiles():
    def f(x, n):
        s = 0
        for i in range(n):
            if i % 2:
                continue
            s += x if x > i else i
        while s > 100 and not n < 0:
            s -= 1
        return s

    code = ag.to_code(f)
    assert code.startswith('def f(x, n):')
    assert 'ag__.for_stmt' in code and 'ag__.while_stmt' in code and 'ag__.if_exp' in code
    compile(code, '<to_code>', 'exec')


def test_methods_and_super(backend):
    class Base:
        def scale(self, x):
            return x * 10

    class Derived(Base):
        def scale(self, x):
            if x > 0:
                y = super().scale(x)
            else:
                y = x
            return y

    obj = Derived()
    assert ag.to_graph(obj.scale)(constant(2)).value == 20
    assert ag.to_graph(Derived.scale)(obj, constant(-2)).value == -2
    assert backend.calls['cond'] == 2


def test_nested_functions_are_converted_in_place(backend):
    def outer(x):
        def inner(y):
            if y > 0:
                y = y * 3
            return y
        return inner(x) + 1

    assert ag.to_graph(outer)(constant(2)).value == 7
    assert backend.calls['cond'] == 1


def test_lambdas(backend):
    square_abs = lambda x: x * x if x > 0 else -x  # noqa: E731
    assert ag.to_graph(square_abs)(constant(-3)).value == 3
    neg, pos = (lambda x: -x if x > 0 else x), (lambda x: x if x > 0 else -x)  # noqa: E731
    assert ag.to_graph(pos)(constant(-3)).value == 3
    assert ag.to_graph(neg)(constant(3)).value == -3
    assert backend.calls['cond'] == 3


def test_converted_call_recurses_into_user_functions(backend, converted_targets):
    def f(x):
        return ag_user_helpers.calls_tensor_abs(x) + _abs(x)

    assert ag.to_graph(f)(constant(-2)).value == 5
    assert backend.calls['cond'] == 2
    assert converted_targets == ['calls_tensor_abs', 'tensor_abs', '_abs']


def test_converted_call_partial_method_and_callable(backend):
    class Scaler:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return x * self.k if x > 0 else x

        def apply(self, x):
            return self(x)

    def f(x):
        s = Scaler(3)
        return s(x), s.apply(x), functools.partial(_abs)(x)

    a, b, c = ag.to_graph(f)(constant(2))
    assert (a.value, b.value, c.value) == (6, 6, 2)
    assert backend.calls['cond'] == 3


def test_allowlisted_modules_are_not_converted(backend, converted_targets):
    def f(x):
        return ag_allowlisted_helpers.tensor_abs(x)

    assert ag.is_allowlisted(ag_allowlisted_helpers.tensor_abs)
    assert ag.to_graph(f)(3) == 3
    with pytest.raises(ag.OperatorNotAllowedInGraphError):
        ag.to_graph(f)(constant(-3))
    assert converted_targets == []


def test_stdlib_numpy_builtins_and_package_are_allowlisted(converted_targets):
    assert ag.is_allowlisted(json.dumps)
    assert ag.is_allowlisted(functools.reduce)
    assert ag.is_allowlisted(len)
    assert ag.is_allowlisted(ag.to_graph)
    assert not ag.is_allowlisted(_abs)

    def f(items):
        return json.dumps(sorted(items)), functools.reduce(lambda a, b: a + b, items)

    assert ag.to_graph(f)([3, 1, 2]) == ('[1, 2, 3]', 6)
    assert converted_targets == []


def test_classes_generators_and_special_methods_not_converted(converted_targets):
    class Counter:
        def __init__(self, n):
            self.n = n if n > 0 else 0

        def __iter__(self):
            return iter(range(self.n))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    def gen(n):
        for i in range(n):
            yield i * 2

    def f(n):
        total = 0
        with Counter(n) as c:
            for i in c:
                total += i
        return total, list(gen(n)), c.__iter__().__next__()

    assert ag.to_graph(f)(3) == (3, [0, 2, 4], 0)
    assert converted_targets == []


def test_recursive_false_does_not_convert_callees(backend):
    def f(x):
        return _abs(x)

    assert ag.to_graph(f, recursive=False)(-2) == 2
    with pytest.raises(ag.OperatorNotAllowedInGraphError):
        ag.to_graph(f, recursive=False)(constant(-2))


def test_do_not_convert(backend, converted_targets):
    @ag.experimental.do_not_convert
    def plain(x):
        assert ag.control_status_ctx().status is ag.Status.DISABLED
        return _abs(x)

    def f(x):
        return plain(x)

    assert ag.to_graph(plain) is plain
    assert plain.__name__ == 'plain'
    assert ag.to_graph(f)(-1) == 1
    with pytest.raises(ag.OperatorNotAllowedInGraphError) as info:
        ag.to_graph(f)(constant(-1))
    assert 'AutoGraph is disabled in this function' in str(info.value)
    assert converted_targets == []
    assert ag.do_not_convert() is ag.do_not_convert


def _warning_texts(record):
    return [str(w.message) for w in record if issubclass(w.category, ag.AutoGraphWarning)]


def test_missing_source_falls_back_with_warning():
    namespace = {}
    exec('def made_by_exec(x):\n    return x + 1\n', namespace)
    f = namespace['made_by_exec']
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter('always')
        assert ag.to_graph(f) is f
        assert ag.to_graph(f) is f   # warns once
    texts = _warning_texts(record)
    assert len(texts) == 1
    assert texts[0].startswith(f'AutoGraph could not transform {f} and will run it as-is.\n'
                               'Cause: Unable to locate the source code of')
    assert texts[0].endswith('To silence this warning, decorate the function with'
                             ' @tf.autograph.experimental.do_not_convert')
    assert f(1) == 2


def test_builtins_and_repl_lambdas_fall_back():
    repl_lambda = eval(compile('lambda x: x * 2', '<stdin>', 'eval'))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter('always')
        assert ag.to_graph(len) is len
        assert ag.to_graph(repl_lambda) is repl_lambda
    texts = _warning_texts(record)
    assert len(texts) == 2
    assert all('will run it as-is' in t and 'Unable to locate the source code' in t
               for t in texts)


def test_unsupported_code_falls_back_without_report_line():
    def gen():
        yield 1

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter('always')
        assert ag.to_graph(gen) is gen
    text, = _warning_texts(record)
    assert 'Cause: generators are not supported\n' in text
    assert 'Please report this' not in text


def test_converted_call_falls_back_for_inaccessible_source(backend):
    namespace = {}
    exec(compile('def hidden(x):\n    return x * 2\n', '<stdin>', 'exec'), namespace)
    hidden = namespace['hidden']

    def f(x):
        return hidden(x)

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter('always')
        assert ag.to_graph(f)(3) == 6
    assert len(_warning_texts(record)) == 1


def test_to_code_raises_for_builtins():
    with pytest.raises(ag.ConversionError):
        ag.to_code(len)


def raises_in_branch(x):
    if x > 0:
        y = x + 1
        raise ValueError(f'boom {y}')  # the line the traceback must show
    return x


def raises_in_loop(t):
    total = 0
    for v in t:
        total += v
        if total.value > 3:
            raise KeyError('too big')  # the loop's line
    return total


def _line_of(fn, marker):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if marker in line)


@pytest.mark.parametrize('fn, arg, error, marker', [
    (raises_in_branch, lambda: constant(1), ValueError, 'the line the traceback'),
    (raises_in_branch, lambda: 1, ValueError, 'the line the traceback'),
    (raises_in_loop, lambda: constant([1, 2, 3]), KeyError, "the loop's line"),
])
def test_traceback_points_at_user_file_and_line(fn, arg, error, marker):
    with pytest.raises(error) as info:
        ag.to_graph(fn)(arg())
    frames = traceback.extract_tb(info.value.__traceback__)
    expected = _line_of(fn, marker)
    user = [fr for fr in frames if fr.filename == __file__ and fr.lineno == expected]
    assert user, [(fr.filename, fr.lineno) for fr in frames]
    assert marker in user[0].line


def test_mangled_names_fall_back():
    class Secret:
        def __init__(self):
            self.__value = 1

        def get(self):
            return self.__value

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter('always')
        method = Secret().get
        assert ag.to_graph(method) == method
    assert 'mangled names are not yet supported' in _warning_texts(record)[0]


def test_set_backend_validates_protocol():
    class Incomplete:
        def is_tensor(self, x):
            return False

    with pytest.raises(TypeError, match='lacks: is_dataset, cond, while_loop'):
        ag.set_backend(Incomplete())
    fake = FakeBackend()
    previous = ag.set_backend(fake)
    assert ag.get_backend() is fake
    ag.set_backend(previous)


def test_python_only_without_backend():
    previous = ag.set_backend(None)
    try:
        assert ag.to_graph(_abs)(-5) == 5
    finally:
        ag.set_backend(previous)


def test_control_status_messages():
    task = 'Using a symbolic `tf.Tensor` as a Python `bool`'
    assert 'is not allowed in Graph execution' in str(ag.operator_not_allowed(task))
    with ag.ControlStatusCtx(ag.Status.ENABLED):
        assert ag.control_status_ctx().status is ag.Status.ENABLED
        assert 'AutoGraph did convert this function' in str(ag.operator_not_allowed(task))
    assert ag.control_status_ctx().status is ag.Status.UNSPECIFIED


def test_to_graph_converts_allowlisted_module_when_asked(backend):
    f = ag.to_graph(ag_allowlisted_helpers.tensor_abs)
    assert f(constant(-3)).value == 3


def test_experimental_namespace():
    assert ag.experimental.do_not_convert is ag.do_not_convert
    assert ag.experimental.set_loop_options is ag.set_loop_options
    assert ag.experimental.Feature.ALL.name == 'ALL'
    assert ag.to_graph(_abs, experimental_optional_features=ag.experimental.Feature.ALL)(-1) == 1
