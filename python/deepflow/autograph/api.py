# SPDX-License-Identifier: Apache-2.0
"""User- and codegen-facing entry points: to_graph, converted_call, do_not_convert."""
import functools
import inspect
import sys
import types
import warnings
import weakref

from . import control_flow, conversion, errors, operators, variables
from .conversion import STANDARD_OPTIONS, ConversionOptions
from .errors import (AutoGraphWarning, ConversionError, InaccessibleSourceCodeError,
                     UnsupportedLanguageElementError)

_PACKAGE = __name__.rpartition('.')[0]

# Module-name prefixes whose functions are called as they are.  A prefix
# matches the module itself and its submodules.
_allowlist = ['builtins', 'numpy', _PACKAGE]

# Called as they are even in user classes: Python invokes them implicitly,
# and constructors are never converted (TensorFlow's rule).
_UNCONVERTED_METHODS = frozenset({
    '__init__', '__new__', '__del__', '__init_subclass__', '__iter__', '__next__',
    '__aiter__', '__anext__', '__enter__', '__exit__', '__aenter__', '__aexit__',
    '__getattr__', '__getattribute__', '__setattr__', '__delattr__', '__repr__',
    '__str__', '__hash__', '__len__', '__bool__', '__class_getitem__',
})


def register_allowlisted_module_prefix(prefix):
    """Functions of module `prefix` (and its submodules) are never converted."""
    if prefix not in _allowlist:
        _allowlist.append(prefix)


def _module_allowlisted(module_name):
    if not module_name:
        return False
    top = module_name.partition('.')[0]
    if top in sys.stdlib_module_names or top.lstrip('_') in sys.stdlib_module_names:
        return True
    return any(module_name == p or module_name.startswith(p + '.') for p in _allowlist)


def is_allowlisted(f):
    """Whether f belongs to a module AutoGraph does not convert."""
    target = getattr(f, '__func__', f)
    return _module_allowlisted(getattr(target, '__module__', None))


def is_autograph_artifact(f):
    return hasattr(getattr(f, '__func__', f), 'autograph_info__')


_namespaces = {}


def _namespace(options):
    """The object converted code calls ag__: the operators, options bound in."""
    ns = _namespaces.get(options)
    if ns is None:
        ns = _namespaces[options] = types.SimpleNamespace(
            converted_call=functools.partial(converted_call, options=options),
            if_stmt=control_flow.if_stmt, while_stmt=control_flow.while_stmt,
            for_stmt=control_flow.for_stmt, if_exp=operators.if_exp,
            and_=operators.and_, or_=operators.or_, not_=operators.not_,
            ld=variables.ld, ldu=variables.ldu, retval=variables.retval,
            Undefined=variables.Undefined,
            UndefinedReturnValue=variables.UndefinedReturnValue)
    return ns


_warned_codes = weakref.WeakSet()
_warned_ids = set()                  # callables without code (builtins, C functions)
_unconvertible = weakref.WeakSet()   # code objects whose conversion failed


def _warn_unconverted(f, error):
    """TensorFlow's "could not transform" warning, once per function."""
    code = getattr(f, '__code__', None)
    if isinstance(code, types.CodeType):
        if code in _warned_codes:
            return
        _warned_codes.add(code)
    else:
        if id(f) in _warned_ids:
            return
        _warned_ids.add(id(f))
    if isinstance(error, (InaccessibleSourceCodeError, UnsupportedLanguageElementError)):
        report = ''
    else:
        report = ('Please report this to the TensorFlow team. When filing the bug, set'
                  ' the verbosity to 10 (on Linux, `export AUTOGRAPH_VERBOSITY=10`) and'
                  ' attach the full output.\n')
    warnings.warn(
        f'AutoGraph could not transform {f} and will run it as-is.\n{report}'
        f'Cause: {error}\nTo silence this warning, decorate the function with'
        ' @tf.autograph.experimental.do_not_convert', AutoGraphWarning, stacklevel=3)


def _conversion_target(f, args):
    """(Python function to convert, its arguments) or (None, None)."""
    if inspect.isclass(f):
        return None, None
    if inspect.ismethod(f):
        if inspect.isfunction(f.__func__):
            return f.__func__, (f.__self__,) + tuple(args)
        return None, None
    if inspect.isfunction(f):
        return f, tuple(args)
    call = getattr(type(f), '__call__', None)
    if inspect.isfunction(call):
        return call, (f,) + tuple(args)
    return None, None


def _converts(f, target):
    code = target.__code__
    if conversion.is_converted_code(code) or code.co_filename == '<string>':
        return False  # Already converted, or exec'd code (TensorFlow skips it quietly).
    if target.__name__ in _UNCONVERTED_METHODS:
        return False
    if inspect.isgeneratorfunction(target) or inspect.iscoroutinefunction(target) \
            or inspect.isasyncgenfunction(target):
        return False
    return not (is_allowlisted(target) or is_allowlisted(f))


def converted_call(f, args, kwargs, caller_fn_scope=None, options=None):
    """Calls f(*args, **kwargs), converting f first when it is user code.

    Converted code routes every call through here.  Builtins (with overloads
    for range and len), allowlisted modules, classes, generators, AutoGraph
    artifacts and calls inside do_not_convert run unconverted; a function
    that fails to convert runs as it is after a warning.
    """
    del caller_fn_scope  # TensorFlow's signature; the options travel with ag__.
    options = options or STANDARD_OPTIONS
    kwargs = kwargs or {}
    if is_autograph_artifact(f) \
            or errors.control_status_ctx().status is errors.Status.DISABLED:
        return f(*args, **kwargs)
    if isinstance(f, functools.partial):
        return converted_call(f.func, f.args + tuple(args), {**f.keywords, **kwargs},
                              options=options)
    overload = operators.OVERLOADS.get(id(f))
    if overload is not None:
        return overload(*args, **kwargs)
    if not options.recursive:
        return f(*args, **kwargs)
    target, effective_args = _conversion_target(f, args)
    if target is None or target.__code__ in _unconvertible or not _converts(f, target):
        return f(*args, **kwargs)
    try:
        converted = conversion.convert(target, _namespace(options))
    except Exception as e:  # pylint: disable=broad-except
        _unconvertible.add(target.__code__)  # warn once, and do not parse it again
        _warn_unconverted(f, e)
        return f(*args, **kwargs)
    return converted(*effective_args, **kwargs)


def _source_error(entity):
    try:
        inspect.getsourcelines(entity)
        error = 'not a Python function'
    except (OSError, TypeError) as e:
        error = e
    return InaccessibleSourceCodeError(
        f'Unable to locate the source code of {entity}. If you are certain the code'
        ' is graph-compatible, wrap the call using'
        f' @tf.autograph.experimental.do_not_convert. Original error: {error}')


def to_graph(entity, recursive=True, experimental_optional_features=None):
    """The converted version of a function, method or functools.partial.

    Like tf.autograph.to_graph.  When conversion is impossible (no source,
    builtins, C functions, exec'd code, unsupported constructs) this warns
    once and returns `entity` unchanged.
    """
    del experimental_optional_features
    if is_autograph_artifact(entity):
        return entity
    if inspect.ismethod(entity):
        func = to_graph(entity.__func__, recursive)
        return entity if func is entity.__func__ else types.MethodType(func, entity.__self__)
    if isinstance(entity, functools.partial):
        func = to_graph(entity.func, recursive)
        return entity if func is entity.func else functools.partial(
            func, *entity.args, **entity.keywords)
    if not inspect.isfunction(entity):
        if inspect.isclass(entity):
            error = UnsupportedLanguageElementError('classes are not supported')
        else:
            error = _source_error(entity)
        _warn_unconverted(entity, error)
        return entity
    try:
        return conversion.convert(entity, _namespace(ConversionOptions(recursive)))
    except Exception as e:  # pylint: disable=broad-except
        _warn_unconverted(entity, e)
        return entity


def convert(fn=None, recursive=True):
    """to_graph as a decorator: @convert or @convert(recursive=False)."""
    if fn is None:
        return functools.partial(convert, recursive=recursive)
    return to_graph(fn, recursive=recursive)


def to_code(entity, recursive=True, experimental_optional_features=None):
    """The source of the converted function (tf.autograph.to_code).

    Raises ConversionError (or the underlying error) when it cannot convert.
    """
    del recursive, experimental_optional_features
    target = getattr(entity, '__func__', entity)
    if isinstance(target, functools.partial):
        target = target.func
    if not inspect.isfunction(target):
        raise ConversionError(f'cannot convert {entity}: {_source_error(entity)}')
    return conversion.converted_code(target).source + '\n'


def do_not_convert(func=None):
    """Marks func so AutoGraph never converts it (nor what it calls).

    tf.autograph.experimental.do_not_convert; usable with or without a call.
    """
    if func is None:
        return do_not_convert

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with errors.ControlStatusCtx(status=errors.Status.DISABLED):
            return func(*args, **kwargs)

    wrapper.autograph_info__ = {'do_not_convert': True}
    return wrapper


__all__ = ['to_graph', 'convert', 'to_code', 'do_not_convert', 'converted_call',
           'register_allowlisted_module_prefix', 'is_allowlisted',
           'is_autograph_artifact', 'ConversionOptions']
