# SPDX-License-Identifier: Apache-2.0
"""Passes that put a function into the form control-flow lowering expects.

After these passes no `break`, `continue` or (nested) `return` is left:
they become boolean variables (break_, continue_, do_return) and guards, as
in TensorFlow's break_statements / continue_statements / return_statements
converters, so every block can move into a nested function.  `global` and
`nonlocal` declarations are hoisted to the top of their function for the same
reason, loop `else` blocks move after the loop, and set_loop_options
directives are lifted off their loop body.
"""
import ast

from . import _templates as t
from .errors import UnsupportedLanguageElementError

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LOOPS = (ast.For, ast.While, ast.AsyncFor)


def check_supported(fdef):
    for node in ast.walk(fdef):
        if (isinstance(node, ast.Attribute) and node.attr.startswith('__')
                and not node.attr.endswith('__')):
            # The converted code is compiled outside its class, where Python
            # would no longer mangle the name.
            raise UnsupportedLanguageElementError('mangled names are not yet supported')
    if is_generator(fdef):
        raise UnsupportedLanguageElementError('generators are not supported')
    if isinstance(fdef, ast.AsyncFunctionDef) or any(
            isinstance(n, (ast.Await, ast.AsyncFor, ast.AsyncWith)) for n in _own_nodes(fdef)):
        raise UnsupportedLanguageElementError('coroutines are not supported')


def _own_nodes(fdef):
    """The nodes of fdef's own scope (not of nested functions, lambdas, classes)."""
    stack = list(ast.iter_child_nodes(fdef))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def is_generator(fdef):
    return any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(fdef))


def blocks(stmt):
    """(owner, field) for each statement list directly inside `stmt`."""
    out = [(stmt, f) for f in ('body', 'orelse', 'finalbody')
           if isinstance(getattr(stmt, f, None), list)]
    for handler in getattr(stmt, 'handlers', ()):
        out.append((handler, 'body'))
    for case in getattr(stmt, 'cases', ()):
        out.append((case, 'body'))
    return out


def function_scopes(fdef):
    """fdef and the function definitions nested in it (not inside classes).

    Nested generators are left out: they stay as written (a block moved into
    a helper function would take its `yield` along).
    """
    out = [fdef]
    for stmt in _walk_scope(fdef.body):
        if isinstance(stmt, ast.FunctionDef) and not is_generator(stmt):
            out.extend(function_scopes(stmt))
    return out


def _walk_scope(stmts):
    """Statements of one scope, recursively, stopping at nested scopes."""
    for stmt in stmts:
        yield stmt
        if not isinstance(stmt, _SCOPES):
            for owner, field in blocks(stmt):
                yield from _walk_scope(getattr(owner, field))


def hoist_declarations(fdef):
    """Moves global/nonlocal statements of fdef's own scope to its top."""
    found = {ast.Global: [], ast.Nonlocal: []}

    def strip(stmts):
        kept = []
        for stmt in stmts:
            if isinstance(stmt, (ast.Global, ast.Nonlocal)):
                found[type(stmt)].extend(n for n in stmt.names if n not in found[type(stmt)])
                continue
            if not isinstance(stmt, _SCOPES):
                for owner, field in blocks(stmt):
                    block = getattr(owner, field)
                    if block:
                        setattr(owner, field, strip(block) or t.located([ast.Pass()], stmt))
            kept.append(stmt)
        return kept

    fdef.body = strip(fdef.body)
    decls = [kind(names=names) for kind, names in found.items() if names]
    fdef.body = t.located(decls, fdef) + fdef.body
    return set(found[ast.Global]), set(found[ast.Nonlocal])


def rewrite_zero_arg_super(fdef):
    """super() -> super(__class__, <first arg>): the call may move into a helper."""
    params = fdef.args.posonlyargs + fdef.args.args
    if not params:
        return
    for node in _walk_expressions(fdef.body):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id == 'super' and not node.args and not node.keywords):
            node.args = t.located([t.load('__class__'), t.load(params[0].arg)], node)


def _walk_expressions(stmts):
    for stmt in stmts:
        stack = [stmt]
        while stack:
            node = stack.pop()
            yield node
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                stack.extend(ast.iter_child_nodes(node))


def extract_directives(fdef):
    """Lifts set_loop_options(...) statements off the loops they configure."""
    for stmt in _walk_scope(fdef.body):
        if not isinstance(stmt, _LOOPS):
            continue
        kept = []
        for child in stmt.body:
            call = child.value if isinstance(child, ast.Expr) else None
            if isinstance(call, ast.Call) and _callee_name(call.func) == 'set_loop_options':
                opts = getattr(stmt, t.LOOP_OPTS, [])
                opts.extend((kw.arg, kw.value) for kw in call.keywords if kw.arg)
                setattr(stmt, t.LOOP_OPTS, opts)
            else:
                kept.append(child)
        stmt.body = kept or t.located([ast.Pass()], stmt)


def _callee_name(func):
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _contains(stmts, kinds):
    """Whether a jump of `kinds` occurs in stmts, outside nested loops/scopes."""
    for stmt in stmts:
        if isinstance(stmt, kinds):
            return True
        if isinstance(stmt, _SCOPES + _LOOPS):
            continue
        if any(_contains(getattr(o, f), kinds) for o, f in blocks(stmt)):
            return True
    return False


def _replace_jumps(stmts, kind, var):
    """Jumps of `kind` -> `var = True`; statements after them run if not var."""
    out = []
    for i, stmt in enumerate(stmts):
        if isinstance(stmt, kind):
            out.append(t.located(t.assign(var, t.const(True)), stmt))
            return out
        jumps = _contains([stmt], kind)
        if jumps and not isinstance(stmt, _SCOPES + _LOOPS):
            for owner, field in blocks(stmt):
                block = getattr(owner, field)
                if block:
                    setattr(owner, field, _replace_jumps(block, kind, var))
        out.append(stmt)
        if jumps:
            rest = _replace_jumps(stmts[i + 1:], kind, var)
            if rest:
                out.append(t.located(t.if_(t.not_(t.load(var)), rest), rest[0]))
            return out
    return out


def add_extra_test(loop, test):
    """ANDs `test` into a for loop's stop condition or a while loop's test."""
    if isinstance(loop, ast.While):
        loop.test = t.located(t.and_(test, loop.test), loop.test)
    else:
        combined = t.and_(test, getattr(loop, t.EXTRA_TEST, None))
        setattr(loop, t.EXTRA_TEST, t.located(combined, loop))


class LoopCanonicalizer:
    """Lowers break, continue and loop else blocks in one function scope."""

    def __init__(self, namer):
        self.namer = namer

    def visit_block(self, stmts):
        out = []
        for stmt in stmts:
            out.extend(self.visit_stmt(stmt))
        return out

    def visit_stmt(self, stmt):
        if isinstance(stmt, _SCOPES):
            return [stmt]
        for owner, field in blocks(stmt):
            setattr(owner, field, self.visit_block(getattr(owner, field)))
        if isinstance(stmt, (ast.For, ast.While)):
            return self._loop(stmt)
        return [stmt]

    def _loop(self, loop):
        before, after = [], []
        orelse, loop.orelse = loop.orelse, []
        if _contains(loop.body, ast.Break):
            var = self.namer.new('break_')
            loop.body = _replace_jumps(loop.body, ast.Break, var)
            add_extra_test(loop, t.located(t.not_(t.load(var)), loop))
            before.append(t.located(t.assign(var, t.const(False)), loop))
            if orelse:
                after.append(t.located(t.if_(t.not_(t.load(var)), orelse), orelse[0]))
        else:
            after.extend(orelse)
        if _contains(loop.body, ast.Continue):
            var = self.namer.new('continue_')
            loop.body = ([t.located(t.assign(var, t.const(False)), loop.body[0])]
                         + _replace_jumps(loop.body, ast.Continue, var))
        return before + [loop] + after
