# SPDX-License-Identifier: Apache-2.0
"""Per-function static analysis for control-flow lowering.

For every if / while / for of a function scope this records, as attributes
on the node:
  _ag_modified    simple names bound anywhere in the statement
  _ag_composites  attribute symbols ('self.x') assigned in it
  _ag_live_out    names read after the statement (liveness, backward)
  _ag_live_head   loops: names live at the top of an iteration
  _ag_may_in      names possibly bound on entry (forward)
  _ag_must_in     names certainly bound on entry (forward)
Only names both modified and live become branch outputs or loop variables,
so Python values a statement merely reads stay Python.  Names read inside a
nested function or class count as live everywhere, because that code may run
at any later time.  The analysis works on the structured code left by the
canonicalization passes (no break/continue/nested return).
"""
import ast
import dataclasses

from . import _templates as t
from ._canonicalize import blocks

_COMPS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class Activity(ast.NodeVisitor):
    """Reads and writes of a node in the current scope."""

    def __init__(self):
        self.reads, self.writes, self.deletes = set(), set(), set()
        self.composites, self.closure_reads = set(), set()

    @classmethod
    def of(cls, *nodes):
        activity = cls()
        for node in nodes:
            if node is not None:
                activity.visit(node)
        return activity

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self.reads.add(node.id)
        else:
            self.writes.add(node.id)
            if isinstance(node.ctx, ast.Del):
                self.deletes.add(node.id)

    def visit_Attribute(self, node):
        if isinstance(node.ctx, ast.Store):
            symbol = t.attr_chain(node)
            if symbol is not None:
                self.composites.add(symbol)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name):
            self.reads.add(node.target.id)
        self.generic_visit(node)

    def visit_NamedExpr(self, node):
        self.writes.add(node.target.id)
        self.visit(node.value)

    def visit_alias(self, node):
        self.writes.add((node.asname or node.name).split('.')[0])

    def visit_ExceptHandler(self, node):
        if node.name:
            self.writes.add(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node):
        if node.name:
            self.writes.add(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node):
        if node.name:
            self.writes.add(node.name)

    def visit_MatchMapping(self, node):
        if node.rest:
            self.writes.add(node.rest)
        self.generic_visit(node)

    def _visit_header(self, node, args):
        for decorator in node.decorator_list:
            self.visit(decorator)
        if args is not None:
            for default in args.defaults + [d for d in args.kw_defaults if d]:
                self.visit(default)

    def visit_FunctionDef(self, node):
        self.writes.add(node.name)
        self._visit_header(node, node.args)
        self.closure_reads |= _free_reads(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        self.writes.add(node.name)
        self._visit_header(node, None)
        for base in node.bases + [k.value for k in node.keywords]:
            self.visit(base)
        self.closure_reads |= _all_loads(node.body)

    def visit_Lambda(self, node):
        # A lambda counts as used where it is written (TensorFlow's rule).
        for default in node.args.defaults + [d for d in node.args.kw_defaults if d]:
            self.visit(default)
        inner = Activity.of(node.body)
        params = {a.arg for a in _all_args(node.args)}
        self.reads |= inner.reads - params
        self.closure_reads |= inner.closure_reads

    def _visit_comprehension(self, node):
        inner = Activity()
        for gen in node.generators:
            inner.visit(gen.iter)
            inner.visit(gen.target)
            for cond in gen.ifs:
                inner.visit(cond)
        for field in ('elt', 'key', 'value'):
            inner.visit(getattr(node, field, None) or ast.Pass())
        targets = set()
        for gen in node.generators:
            targets |= Activity.of(gen.target).writes
        self.reads |= inner.reads - targets
        # Only := escapes a comprehension; it binds in the enclosing scope.
        self.writes |= inner.writes - targets
        self.closure_reads |= inner.closure_reads

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comprehension


def _all_args(args):
    extra = [a for a in (args.vararg, args.kwarg) if a is not None]
    return args.posonlyargs + args.args + args.kwonlyargs + extra


def _all_loads(stmts):
    return {n.id for s in stmts for n in ast.walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _free_reads(fdef):
    """Names a nested function reads from enclosing scopes (when it runs)."""
    inner = Activity.of(*fdef.body)
    declared = {name for stmt in ast.walk(fdef) if isinstance(stmt, (ast.Global, ast.Nonlocal))
                for name in stmt.names}
    local = ({a.arg for a in _all_args(fdef.args)} | inner.writes) - declared
    return (inner.reads | inner.closure_reads) - local


def _reads(*nodes):
    return Activity.of(*nodes).reads


@dataclasses.dataclass
class ScopeInfo:
    globals: set
    nonlocals: set
    params: set
    always_live: set
    needs_ld: set = dataclasses.field(default_factory=set)


class _Liveness:

    def __init__(self, always_live):
        self.always = always_live

    def block(self, stmts, out):
        live = set(out)
        for stmt in reversed(stmts):
            live = self.stmt(stmt, live)
        return live

    def _loop(self, stmt, out, header_reads, kill=(), target_reads=()):
        head = out | header_reads
        while True:
            body_in = self.block(stmt.body, head)
            new = out | header_reads | (body_in - set(kill)) | set(target_reads)
            if new == head:
                break
            head = new
        stmt._ag_live_out = out | self.always
        stmt._ag_live_head = head | self.always
        return head

    def stmt(self, stmt, out):
        if isinstance(stmt, ast.If):
            stmt._ag_live_out = out | self.always
            return _reads(stmt.test) | self.block(stmt.body, out) | self.block(stmt.orelse, out)
        if isinstance(stmt, ast.While):
            return self._loop(stmt, out, _reads(stmt.test))
        if isinstance(stmt, ast.For):
            target = Activity.of(stmt.target)
            head = self._loop(stmt, out, _reads(getattr(stmt, t.EXTRA_TEST, None)),
                              target.writes, target.reads)
            return head | _reads(stmt.iter)
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            live = self.block(stmt.body, out)
            for item in reversed(stmt.items):
                bound = Activity.of(item.optional_vars)
                live = (live - bound.writes) | bound.reads | _reads(item.context_expr)
            return live
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == 'TryStar':
            final = self.block(stmt.finalbody, out)
            handlers = set()
            for handler in stmt.handlers:
                handlers |= (self.block(handler.body, final) - {handler.name}) \
                    | _reads(handler.type)
            return self.block(stmt.body, self.block(stmt.orelse, final) | handlers) | handlers
        if isinstance(stmt, ast.Match):
            live = set(out) | _reads(stmt.subject)
            for case in stmt.cases:
                live |= self.block(case.body, out) | _reads(case.guard, case.pattern)
            return live
        activity = Activity.of(stmt)
        return (out - activity.writes) | activity.reads


class _Definedness:

    def block(self, stmts, may, must):
        for stmt in stmts:
            may, must = self.stmt(stmt, may, must)
        return may, must

    def _annotate(self, stmt, may, must):
        stmt._ag_may_in, stmt._ag_must_in = set(may), set(must)

    def stmt(self, stmt, may, must):
        if isinstance(stmt, ast.If):
            bound = Activity.of(stmt.test).writes
            may, must = may | bound, must | bound
            self._annotate(stmt, may, must)
            may1, must1 = self.block(stmt.body, may, must)
            may2, must2 = self.block(stmt.orelse, may, must)
            return may1 | may2, must1 & must2
        if isinstance(stmt, (ast.While, ast.For)):
            if isinstance(stmt, ast.While):
                # The test runs inside a helper: its := targets need a binding
                # outside, so they do not count as bound on entry.
                self._annotate(stmt, may, must)
                header, entry = Activity.of(stmt.test).writes, set()
            else:
                header, entry = Activity.of(stmt.iter).writes, Activity.of(stmt.target).writes
                self._annotate(stmt, may | header, must | header)
            may, must = may | header, must | header
            first, _ = self.block(stmt.body, may | entry, must | entry)
            # Again, so statements inside see names bound by earlier iterations.
            again, _ = self.block(stmt.body, may | entry | first, must | entry)
            return may | entry | again, must
        if isinstance(stmt, (ast.With, ast.AsyncWith)):
            bound = Activity.of(*stmt.items).writes
            return self.block(stmt.body, may | bound, must | bound)
        if isinstance(stmt, ast.Try) or type(stmt).__name__ == 'TryStar':
            may_body, must_body = self.block(stmt.body, may, must)
            may_all = set(may_body)
            for handler in stmt.handlers:
                named = {handler.name} if handler.name else set()
                may_all |= self.block(handler.body, may_body | named, must)[0]
            may_else, _ = self.block(stmt.orelse, may_body, must_body)
            return self.block(stmt.finalbody, may_all | may_else, must)
        if isinstance(stmt, ast.Match):
            may_all = set(may)
            for case in stmt.cases:
                captured = Activity.of(case.pattern).writes
                may_all |= self.block(case.body, may | captured, must | captured)[0]
            return may_all, must
        activity = Activity.of(stmt)
        bound = activity.writes - activity.deletes
        return may | bound, (must | bound) - activity.deletes


def analyze(fdef, globals_, nonlocals):
    """Annotates fdef's control-flow statements and returns its ScopeInfo."""
    params = {a.arg for a in _all_args(fdef.args)}
    always = set()
    for stmt in fdef.body:
        always |= Activity.of(stmt).closure_reads
    info = ScopeInfo(set(globals_), set(nonlocals), params, always | set(globals_))
    _Liveness(info.always_live).block(fdef.body, set())
    outer = params | info.globals | info.nonlocals
    _Definedness().block(fdef.body, set(outer), set(outer))
    for stmt in _control_flow(fdef.body):
        activity = Activity.of(stmt)
        stmt._ag_modified = activity.writes
        stmt._ag_composites = {c for c in activity.composites
                               if c.split('.')[0] not in activity.writes}
        info.needs_ld |= activity.writes - stmt._ag_may_in - outer
    return info


def _control_flow(stmts):
    for stmt in stmts:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(stmt, (ast.If, ast.While, ast.For)):
            yield stmt
        for owner, field in blocks(stmt):
            yield from _control_flow(getattr(owner, field))
