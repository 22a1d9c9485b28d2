# SPDX-License-Identifier: Apache-2.0
"""Source to converted function: the pass pipeline, compilation and caches.

The converted definition is compiled inside a factory function that binds
`ag__` and each of the original function's free variables:

    def ag__factory():
        ag__ = None
        counter = None          # a free variable of the original
        def f(x):               # the converted definition
            ...
        return f

The factory never runs; its inner code object is taken out and made into a
function with the original globals, defaults and closure cells (plus a cell
holding the operator namespace for ag__), so reads and `nonlocal` writes of
closure variables reach the same cells as the original function.  The module
is compiled with the original file name and positions, so tracebacks and
linecache show the user's source.
"""
import ast
import dataclasses
import functools
import types
import weakref

from . import _analysis, _canonicalize, _expressions, _lowering, _returns, _source
from . import _templates as t
from .errors import ConversionError

_FACTORY = 'ag__factory'


@dataclasses.dataclass(frozen=True)
class ConversionOptions:
    """recursive: whether functions called by converted code are converted too."""
    recursive: bool = True


STANDARD_OPTIONS = ConversionOptions()


@dataclasses.dataclass
class _Converted:
    code: types.CodeType
    source: str


# Keyed by code, not by function: a cached function would keep its original
# alive through __wrapped__.  Making the function object is cheap.
_code_cache = weakref.WeakKeyDictionary()   # original code -> _Converted
converted_codes = weakref.WeakSet()         # every code object conversion made


def _transform_function(fdef, freevars):
    _canonicalize.check_supported(fdef)
    fdef.decorator_list = []
    namer = t.Namer(fdef)
    if '__class__' in freevars:
        _canonicalize.rewrite_zero_arg_super(fdef)
    scopes = _canonicalize.function_scopes(fdef)
    declarations = {}
    for scope in scopes:
        declarations[scope] = _canonicalize.hoist_declarations(scope)
        _canonicalize.extract_directives(scope)
        scope.body = _canonicalize.LoopCanonicalizer(namer).visit_block(scope.body)
        _returns.ReturnCanonicalizer(namer).transform(scope)
    infos = {scope: _analysis.analyze(scope, *declarations[scope]) for scope in scopes}
    fdef = _expressions.ExpressionLowering(infos).visit(fdef)
    return _lowering.ControlFlowLowering(namer, infos).visit(fdef)


def _transform_lambda(node):
    _canonicalize.check_supported(node)
    return _expressions.ExpressionLowering({}).visit(node)


def _transform(fn):
    node = _source.parse_function(fn)
    freevars = fn.__code__.co_freevars
    if isinstance(node, ast.Lambda):
        node = _transform_lambda(node)
        definition = t.located(ast.Expr(value=node), node)
    else:
        definition = node = _transform_function(node, freevars)
    binds = [t.assign(name, t.const(None)) for name in (t.AG,) + freevars]
    own_name = getattr(definition, 'name', None)
    # A def inside the factory would make the function's own name (say, for a
    # recursive call) a factory local; it must stay a global unless the
    # original reached itself through a closure cell.
    globals_ = [own_name] if own_name and own_name not in freevars else []
    factory = t.function_def(_FACTORY, [], binds + [definition], globals_=globals_)
    module = ast.Module(body=[t.located(factory, node)], type_ignores=[])
    ast.fix_missing_locations(module)
    source = ast.unparse(node)
    filename = fn.__code__.co_filename
    try:
        module_code = compile(module, filename, 'exec', dont_inherit=True)
    except (SyntaxError, ValueError, TypeError) as e:
        raise ConversionError(f'converted code of {fn} does not compile: {e}') from e
    factory_code = _find_code(module_code, _FACTORY)
    code = _find_code(factory_code, fn.__code__.co_name, node.lineno)
    _register(code)
    return _Converted(code, source)


def _find_code(parent, name, lineno=None):
    for const in parent.co_consts:
        if isinstance(const, types.CodeType) and const.co_name == name \
                and (lineno is None or const.co_firstlineno == lineno):
            return const
    raise ConversionError(f'no code object named {name} in the converted module')


def _register(code):
    converted_codes.add(code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _register(const)


def converted_code(fn):
    """The cached conversion of fn's code (converting it on first use)."""
    entry = _code_cache.get(fn.__code__)
    if entry is None:
        entry = _code_cache[fn.__code__] = _transform(fn)
    return entry


def convert(fn, namespace):
    """fn converted: a new function with fn's globals, closure and defaults.

    `namespace` is what the converted code sees as ag__ (it carries the
    conversion options into converted_call).
    """
    return _make_function(fn, converted_code(fn).code, namespace)


def _make_function(fn, code, namespace):
    original = fn.__code__.co_freevars
    closure = fn.__closure__ or ()
    cells = []
    for name in code.co_freevars:
        if name == t.AG:
            cells.append(types.CellType(namespace))
        elif name in original:
            cells.append(closure[original.index(name)])
        else:
            cells.append(types.CellType())
    new_fn = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                                tuple(cells) or None)
    if fn.__kwdefaults__:
        new_fn.__kwdefaults__ = dict(fn.__kwdefaults__)
    functools.update_wrapper(new_fn, fn)
    new_fn.autograph_info__ = {'converted_from': fn}
    return new_fn


def is_converted_code(code):
    return code in converted_codes
