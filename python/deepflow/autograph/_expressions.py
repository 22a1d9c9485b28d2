# SPDX-License-Identifier: Apache-2.0
"""Expression rewrites: calls, and/or/not, conditional expressions, loads.

    f(a, *b, k=c)     ->  ag__.converted_call(f, (a, *b), {'k': c})
    a and b           ->  ag__.and_(lambda: a, lambda: b)
    not a             ->  ag__.not_(a)
    a if c else b     ->  ag__.if_exp(c, lambda: a, lambda: b, 'c')
    y  (maybe unset)  ->  ag__.ld(y)

Operands become lambdas so evaluation stays lazy.  ag__.ld applies to the
names the lowering may bind to Undefined, so that reading one still raises
UnboundLocalError as in Python.
"""
import ast

from . import _templates as t

# Builtins that look at their caller's frame: calling them from
# converted_call would give them the wrong frame.
_FRAME_BUILTINS = frozenset(
    {'super', 'locals', 'globals', 'vars', 'dir', 'eval', 'exec', 'breakpoint'})


class ExpressionLowering(ast.NodeTransformer):

    def __init__(self, scopes):
        self.scopes = scopes
        self.needs_ld = [frozenset()]

    def visit_FunctionDef(self, node):
        info = self.scopes.get(node)
        if info is None:
            return node
        self.needs_ld.append(frozenset(info.needs_ld))
        self.generic_visit(node)
        self.needs_ld.pop()
        return node

    def visit_AsyncFunctionDef(self, node):
        return node

    def visit_ClassDef(self, node):
        return node

    def visit_Lambda(self, node):
        params = {a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs}
        params |= {a.arg for a in (node.args.vararg, node.args.kwarg) if a is not None}
        self.needs_ld.append(self.needs_ld[-1] - params)
        self.generic_visit(node)
        self.needs_ld.pop()
        return node

    def _visit_loop(self, node):
        self.generic_visit(node)
        extra = getattr(node, t.EXTRA_TEST, None)
        if extra is not None:
            setattr(node, t.EXTRA_TEST, self.visit(extra))
        opts = getattr(node, t.LOOP_OPTS, None)
        if opts:
            setattr(node, t.LOOP_OPTS, [(k, self.visit(v)) for k, v in opts])
        return node

    visit_For = visit_While = _visit_loop

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.needs_ld[-1]:
            return ast.copy_location(t.ag_call('ld', node), node)
        return node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        target = node.target
        if isinstance(target, ast.Name) and target.id in self.needs_ld[-1]:
            # `y += 1` reads y without a Load node; check it first.
            check = t.assign(target.id, t.ag_call('ld', t.load(target.id)))
            return [t.located(check, node), node]
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id in _FRAME_BUILTINS:
            return node
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id == t.AG:
            return node
        args = t.tuple_(node.args)
        if node.keywords:
            kwargs = ast.Dict(keys=[t.const(k.arg) if k.arg else None for k in node.keywords],
                              values=[k.value for k in node.keywords])
        else:
            kwargs = t.const(None)
        return t.located(t.ag_call('converted_call', func, args, kwargs), node)

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        op = 'and_' if isinstance(node.op, ast.And) else 'or_'
        result = node.values[-1]
        for value in reversed(node.values[:-1]):
            result = t.ag_call(op, t.lambda_(value), t.lambda_(result))
        return t.located(result, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return t.located(t.ag_call('not_', node.operand), node)
        return node

    def visit_IfExp(self, node):
        expr_repr = ast.unparse(node.test).strip()
        self.generic_visit(node)
        call = t.ag_call('if_exp', node.test, t.lambda_(node.body), t.lambda_(node.orelse),
                         t.const(expr_repr))
        return t.located(call, node)
