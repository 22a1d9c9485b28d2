# SPDX-License-Identifier: Apache-2.0
"""Small AST builders shared by the converter passes.

Generated nodes are built without positions and then given the position of
the user statement they replace (`located`), so tracebacks through converted
code name the user's file and line.
"""
import ast

AG = 'ag__'

# Per-node annotations the passes leave for later passes (set as attributes).
EXTRA_TEST = '_ag_extra_test'       # For: break/return condition, an expr
LOOP_OPTS = '_ag_loop_opts'         # While/For: [(name, expr)] from set_loop_options


def load(name):
    return ast.Name(id=name, ctx=ast.Load())


def store(name):
    return ast.Name(id=name, ctx=ast.Store())


def const(value):
    return ast.Constant(value=value)


def ag_attr(attr):
    return ast.Attribute(value=load(AG), attr=attr, ctx=ast.Load())


def ag_call(attr, *args):
    return ast.Call(func=ag_attr(attr), args=list(args), keywords=[])


def assign(name, value):
    return ast.Assign(targets=[store(name)], value=value)


def not_(expr):
    return ast.UnaryOp(op=ast.Not(), operand=expr)


def and_(*exprs):
    exprs = [e for e in exprs if e is not None]
    if len(exprs) == 1:
        return exprs[0]
    return ast.BoolOp(op=ast.And(), values=exprs)


def if_(test, body, orelse=()):
    return ast.If(test=test, body=list(body), orelse=list(orelse))


def lambda_(body, params=()):
    return ast.Lambda(args=arguments(params), body=body)


def arguments(params=()):
    return ast.arguments(posonlyargs=[], args=[ast.arg(arg=p) for p in params],
                         vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                         defaults=[])


def function_def(name, params, body, nonlocals=(), globals_=()):
    """def name(params): with the scope declarations the body needs."""
    decls = []
    if nonlocals:
        decls.append(ast.Nonlocal(names=sorted(nonlocals)))
    if globals_:
        decls.append(ast.Global(names=sorted(globals_)))
    return ast.FunctionDef(name=name, args=arguments(params),
                           body=decls + (list(body) or [ast.Pass()]),
                           decorator_list=[], returns=None, type_comment=None)


def tuple_(elts, ctx=None):
    return ast.Tuple(elts=list(elts), ctx=ctx or ast.Load())


def str_tuple(names):
    return tuple_([const(n) for n in names])


def located(nodes, origin):
    """Gives every generated node in `nodes` the position of `origin`.

    User nodes moved under generated ones keep their own positions: only
    nodes without a lineno are filled in.
    """
    single = not isinstance(nodes, list)
    for node in [nodes] if single else nodes:
        for child in ast.walk(node):
            if 'lineno' in child._attributes and getattr(child, 'lineno', None) is None:
                ast.copy_location(child, origin)
    return nodes


def attr_chain(node):
    """'a.b.c' for an Attribute chain rooted at a Name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or not parts:
        return None
    parts.append(node.id)
    return '.'.join(reversed(parts))


def chain_expr(symbol, ctx):
    """The expression for a symbol 'a' or 'a.b.c' in the given context."""
    root, *attrs = symbol.split('.')
    if not attrs:
        return ast.Name(id=root, ctx=ctx)
    node = load(root)
    for i, attr in enumerate(attrs):
        last = i == len(attrs) - 1
        node = ast.Attribute(value=node, attr=attr, ctx=ctx if last else ast.Load())
    return node


class Namer:
    """Fresh names that do not collide with any identifier of the function."""

    def __init__(self, tree):
        self.used = {AG}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                self.used.add(node.id)
            elif isinstance(node, ast.arg):
                self.used.add(node.arg)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.used.add(node.name)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.used.update(node.names)
            elif isinstance(node, ast.alias):
                self.used.add((node.asname or node.name).split('.')[0])
            elif isinstance(node, ast.ExceptHandler) and node.name:
                self.used.add(node.name)
        self._counts = {}

    def new(self, base):
        """base, or base_<n> (base<n> when base ends in _) for the first free n."""
        name = base
        count = self._counts.get(base, 0)
        joiner = '' if base.endswith('_') else '_'
        while name in self.used:
            count += 1
            name = f'{base}{joiner}{count}'
        self._counts[base] = count
        self.used.add(name)
        return name
