# SPDX-License-Identifier: Apache-2.0
"""Rewrites if / while / for statements into calls of the runtime operators.

    if x > 0:                def if_body():
        x = x * x                nonlocal x
    else:          ==>           x = x * x
        x = -x               def else_body():
                                 nonlocal x
                                 x = -x
                             def get_state():
                                 return (x,)
                             def set_state(vars_):
                                 nonlocal x
                                 (x,) = vars_
                             ag__.if_stmt(x > 0, if_body, else_body, get_state,
                                          set_state, ('x',), 1)

Blocks become nested functions that declare every name they bind nonlocal
(global where the function declared it so), which keeps Python semantics when
the operator just runs them.  get_state/set_state carry only the symbols the
analysis found modified and live (outputs of an if, loop variables of a
loop); an `if` also carries its other modified names, after the outputs, so
that both traced branches start from the same values.  A name with no binding
before the statement is first set to ag__.Undefined('name'), which both gives
`nonlocal` a binding and lets the operators name the variable in errors.
Inner statements are lowered first.
"""
import ast

from . import _templates as t


class ControlFlowLowering(ast.NodeTransformer):

    def __init__(self, namer, scopes):
        self.namer = namer
        self.scopes = scopes
        self.scope = None

    def visit_FunctionDef(self, node):
        info = self.scopes.get(node)
        if info is None:
            return node
        outer, self.scope = self.scope, info
        self.generic_visit(node)
        self.scope = outer
        return node

    def visit_AsyncFunctionDef(self, node):
        return node

    def visit_ClassDef(self, node):
        return node

    def visit_Lambda(self, node):
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        modified = node._ag_modified
        live = node._ag_live_out | self.scope.globals
        outputs = sorted(n for n in modified if n in live) + sorted(node._ag_composites)
        symbols = outputs + sorted(n for n in modified if n not in live)
        body = self._block_def('if_body', [], node.body, modified)
        orelse = self._block_def('else_body', [], node.orelse, modified)
        get_state, set_state = self._state_defs(node, symbols)
        call = t.ag_call('if_stmt', node.test, t.load(body.name), t.load(orelse.name),
                         t.load(get_state.name), t.load(set_state.name),
                         t.str_tuple(symbols), t.const(len(outputs)))
        return self._emit(node, [body, orelse, get_state, set_state], call)

    def visit_While(self, node):
        self.generic_visit(node)
        symbols = self._loop_vars(node)
        test_binds = _named_expr_targets(node.test)
        test = self._block_def('loop_test', [], [ast.Return(value=node.test)], test_binds)
        body = self._block_def('loop_body', [], node.body, node._ag_modified)
        get_state, set_state = self._state_defs(node, symbols)
        call = t.ag_call('while_stmt', t.load(test.name), t.load(body.name),
                         t.load(get_state.name), t.load(set_state.name),
                         t.str_tuple(symbols), self._opts(node))
        return self._emit(node, [test, body, get_state, set_state], call)

    def visit_For(self, node):
        self.generic_visit(node)
        symbols = self._loop_vars(node)
        helpers = []
        extra = getattr(node, t.EXTRA_TEST, None)
        if extra is not None:
            helpers.append(self._block_def('extra_test', [], [ast.Return(value=extra)], ()))
        itr = self.namer.new('itr')
        bind_target = t.located(ast.Assign(targets=[node.target], value=t.load(itr)),
                                node.target)
        body = self._block_def('loop_body', [itr], [bind_target] + node.body,
                               node._ag_modified)
        get_state, set_state = self._state_defs(node, symbols)
        helpers += [body, get_state, set_state]
        call = t.ag_call('for_stmt', node.iter,
                         t.load(helpers[0].name) if extra is not None else t.const(None),
                         t.load(body.name), t.load(get_state.name),
                         t.load(set_state.name), t.str_tuple(symbols), self._opts(node))
        return self._emit(node, helpers, call)

    def _loop_vars(self, node):
        live = node._ag_live_head | self.scope.globals
        return (sorted(n for n in node._ag_modified if n in live)
                + sorted(node._ag_composites))

    def _declarations(self, names):
        names = set(names)
        globals_ = names & self.scope.globals
        return names - globals_, globals_

    def _block_def(self, base, params, body, binds):
        nonlocals, globals_ = self._declarations(binds)
        return t.function_def(self.namer.new(base), params, body, nonlocals, globals_)

    def _initialized(self, node):
        scope = self.scope
        return sorted(node._ag_modified - node._ag_may_in - scope.globals
                      - scope.nonlocals - scope.params)

    def _state_defs(self, node, symbols):
        initialized = set(self._initialized(node))
        reads = []
        for symbol in symbols:
            if '.' not in symbol and (symbol in node._ag_must_in or symbol in initialized):
                reads.append(t.load(symbol))
            else:
                thunk = t.lambda_(t.chain_expr(symbol, ast.Load()))
                reads.append(t.ag_call('ldu', thunk, t.const(symbol)))
        get_state = t.function_def(self.namer.new('get_state'), [],
                                   [ast.Return(value=t.tuple_(reads))])
        param = self.namer.new('vars_')
        if symbols:
            targets = t.tuple_([t.chain_expr(s, ast.Store()) for s in symbols], ast.Store())
            body = [ast.Assign(targets=[targets], value=t.load(param))]
        else:
            body = []
        nonlocals, globals_ = self._declarations(s for s in symbols if '.' not in s)
        set_state = t.function_def(self.namer.new('set_state'), [param], body,
                                   nonlocals, globals_)
        return get_state, set_state

    def _opts(self, node):
        items = getattr(node, t.LOOP_OPTS, [])
        return ast.Dict(keys=[t.const(k) for k, _ in items], values=[v for _, v in items])

    def _emit(self, node, helpers, call):
        inits = [t.assign(n, t.ag_call('Undefined', t.const(n)))
                 for n in self._initialized(node)]
        return t.located(inits + helpers + [ast.Expr(value=call)], node)


def _named_expr_targets(expr):
    return {n.target.id for n in ast.walk(expr) if isinstance(n, ast.NamedExpr)}
