# SPDX-License-Identifier: Apache-2.0
"""Finds and parses the source of a function, keeping its file positions.

The AST comes back with the line and column numbers the code has in its
file, so code compiled from it reports the user's lines.  The source is found
from the code object, not the function: inspect.getsource(fn) follows
__wrapped__ and would return the source of a different function.
"""
import ast
import copy
import inspect
import linecache

from .errors import ConversionError, InaccessibleSourceCodeError


def _inaccessible(fn, error):
    return InaccessibleSourceCodeError(
        f'Unable to locate the source code of {fn}. Note that functions defined'
        ' in certain environments, like the interactive Python shell, do not'
        ' expose their source code. If that is the case, you should define them'
        ' in a .py source file. If you are certain the code is graph-compatible,'
        ' wrap the call using @tf.autograph.experimental.do_not_convert.'
        f' Original error: {error}')


def parse_function(fn):
    """The ast.FunctionDef (or ast.Lambda) of fn, positioned as in its file."""
    code = fn.__code__
    if code.co_name == '<lambda>':
        return _parse_lambda(fn, code)
    try:
        lines, first = inspect.getsourcelines(code)
    except (OSError, TypeError) as e:
        raise _inaccessible(fn, e) from e
    source = ''.join(lines)
    # Parse an indented block (a method, a nested function) under `if 1:`
    # instead of dedenting it, so columns and string contents stay as written.
    indented = source[:1].isspace()
    text = 'if 1:\n' + source if indented else source
    try:
        module = ast.parse(text, filename=code.co_filename)
    except SyntaxError as e:
        raise ConversionError(f'failed to parse the source of {fn}: {e}') from e
    ast.increment_lineno(module, first - (2 if indented else 1))
    body = module.body[0].body if indented else module.body
    node = body[0] if body else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
            or node.name != code.co_name:
        raise ConversionError(f'could not find the definition of {fn} in its source')
    if sorted(_param_names(node.args)) != sorted(_code_params(code)):
        raise ConversionError(
            f'the source of {fn} does not match its code (was the file edited?)')
    return node


def _code_params(code):
    count = (code.co_argcount + code.co_kwonlyargcount
             + bool(code.co_flags & inspect.CO_VARARGS)
             + bool(code.co_flags & inspect.CO_VARKEYWORDS))
    return list(code.co_varnames[:count])


_MODULE_CACHE = {}


def _module_ast(filename):
    lines = linecache.getlines(filename)
    if not lines:
        return None
    key = (filename, len(lines), hash(lines[0]), hash(lines[-1]))
    tree = _MODULE_CACHE.get(key)
    if tree is None:
        tree = ast.parse(''.join(lines), filename=filename)
        _MODULE_CACHE[key] = tree
    return tree


def _param_names(args):
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    return names + [a.arg for a in (args.vararg, args.kwarg) if a is not None]


def _parse_lambda(fn, code):
    """A lambda's node: the one on its line whose parameters and body match."""
    linecache.checkcache(code.co_filename)
    try:
        tree = _module_ast(code.co_filename)
    except SyntaxError as e:
        raise ConversionError(f'failed to parse the source of {fn}: {e}') from e
    if tree is None:
        raise _inaccessible(fn, 'could not get source code')
    params = sorted(_code_params(code))
    found = [n for n in ast.walk(tree)
             if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno
             and sorted(_param_names(n.args)) == params]
    if len(found) > 1:
        found = _narrow_by_column(found, code)
    if len(found) != 1:
        raise ConversionError(
            f'could not identify the source of {fn}: {len(found)} lambda'
            f' definitions match on line {code.co_firstlineno}')
    return _clone(found[0])


def _narrow_by_column(candidates, code):
    """Keeps the lambdas whose body spans the columns of fn's instructions."""
    # (0, 0) columns mark bookkeeping instructions such as RESUME.
    spots = {(line, col) for line, _, col, end_col in code.co_positions()
             if line is not None and col is not None and (col, end_col) != (0, 0)}
    def covers(node):
        body = node.body
        return all((body.lineno, body.col_offset) <= spot
                   <= (body.end_lineno, body.end_col_offset) for spot in spots)
    narrowed = [n for n in candidates if covers(n)]
    return narrowed or candidates


def _clone(node):
    """A deep copy, so transforming it leaves the cached module AST intact."""
    return copy.deepcopy(node)
