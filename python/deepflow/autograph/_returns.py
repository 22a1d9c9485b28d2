# SPDX-License-Identifier: Apache-2.0
"""Lowers return statements into do_return / retval_ variables.

    if x > 0:                    do_return = False
        return x                 retval_ = ag__.UndefinedReturnValue()
    return -x          ==>       if x > 0:
                                     do_return = True; retval_ = x
                                 else:
                                     do_return = True; retval_ = -x
                                 return ag__.retval(retval_)

First the statements after an `if` whose body always returns move into its
else branch (and vice versa), so that both branches of a tensor `if` produce
a return value; then each return becomes two assignments, later statements
run under `if not do_return`, and loops stop on `not do_return`.
"""
import ast

from . import _templates as t
from ._canonicalize import add_extra_test, blocks

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _definitely_returns(stmts):
    for stmt in stmts:
        if isinstance(stmt, ast.Return):
            return True
        if isinstance(stmt, ast.If) and _definitely_returns(stmt.body) \
                and _definitely_returns(stmt.orelse):
            return True
        if isinstance(stmt, ast.With) and _definitely_returns(stmt.body):
            return True
    return False


def _has_nested_return(stmts):
    """Whether a return sits inside a compound statement of this scope."""
    for stmt in stmts:
        if isinstance(stmt, _SCOPES):
            continue
        for owner, field in blocks(stmt):
            for inner in getattr(owner, field):
                if isinstance(inner, ast.Return) or _has_nested_return([inner]):
                    return True
    return False


def _merge_tails(stmts):
    """Moves statements after a returning if-branch into the other branch."""
    out = []
    for i, stmt in enumerate(stmts):
        if not isinstance(stmt, _SCOPES):
            for owner, field in blocks(stmt):
                setattr(owner, field, _merge_tails(getattr(owner, field)))
        out.append(stmt)
        rest = stmts[i + 1:]
        if isinstance(stmt, ast.If) and rest:
            if _definitely_returns(stmt.body):
                stmt.orelse = _merge_tails(stmt.orelse + rest)
                return out
            if _definitely_returns(stmt.orelse):
                stmt.body = _merge_tails(stmt.body + rest)
                return out
    return out


class ReturnCanonicalizer:

    def __init__(self, namer):
        self.namer = namer
        self.do_return = self.retval = None

    def transform(self, fdef):
        if not _has_nested_return(fdef.body):
            return
        self.do_return = self.namer.new('do_return')
        self.retval = self.namer.new('retval_')
        body = _merge_tails(fdef.body)
        head = []
        while body and (isinstance(body[0], (ast.Global, ast.Nonlocal))
                        or _is_docstring(body[0])):
            head.append(body.pop(0))
        body, _ = self._block(body)
        prologue = [t.assign(self.do_return, t.const(False)),
                    t.assign(self.retval, t.ag_call('UndefinedReturnValue'))]
        epilogue = [ast.Return(value=t.ag_call('retval', t.load(self.retval)))]
        fdef.body = (head + t.located(prologue, fdef) + body
                     + t.located(epilogue, fdef.body[-1]))

    def _block(self, stmts):
        """(new statements, whether they may return)."""
        out = []
        for i, stmt in enumerate(stmts):
            definite = _definitely_returns([stmt])
            new, may_return = self._stmt(stmt)
            out.extend(new)
            if may_return:
                if not definite:
                    rest, _ = self._block(stmts[i + 1:])
                    if rest:
                        guard = t.if_(t.not_(t.load(self.do_return)), rest)
                        out.append(t.located(guard, rest[0]))
                return out, True
        return out, False

    def _stmt(self, stmt):
        if isinstance(stmt, ast.Return):
            value = stmt.value if stmt.value is not None else t.const(None)
            new = [t.assign(self.do_return, t.const(True)), t.assign(self.retval, value)]
            return t.located(new, stmt), True
        if isinstance(stmt, _SCOPES):
            return [stmt], False
        may_return = False
        for owner, field in blocks(stmt):
            if not getattr(owner, field):
                continue
            block, returns = self._block(getattr(owner, field))
            setattr(owner, field, block or t.located([ast.Pass()], stmt))
            if returns and owner is stmt and field == 'body' \
                    and isinstance(stmt, (ast.For, ast.While)):
                add_extra_test(stmt, t.located(t.not_(t.load(self.do_return)), stmt))
            may_return = may_return or returns
        return [stmt], may_return


def _is_docstring(stmt):
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))
