"""Whole-program checks that run after typing: call graphs and parser state graphs.

These need every name resolved first: recursion (P4 forbids recursive functions,
actions and self-applying controls — p4c rejects them), and parsers whose start state
can never reach ``accept`` or ``reject``.
"""

from __future__ import annotations

from softswitch.diagnostics import DiagnosticSink
from softswitch.frontend import ast
from softswitch.frontend.annotations import check_global_names
from softswitch.frontend.calls import CallInfo


def run_checks(program: ast.Program, sink: DiagnosticSink) -> None:
    callables = [d for d in program.decls if isinstance(d, (ast.FunctionDecl, ast.ActionDecl,
                                                             ast.ControlDecl))]
    for d in program.decls:
        if isinstance(d, ast.ControlDecl):
            callables.extend(x for x in d.locals if isinstance(x, ast.ActionDecl))
    check_recursion(callables, sink)
    nested = [x for d in program.decls if isinstance(d, (ast.ControlDecl, ast.ParserDecl))
              for x in d.locals]
    check_global_names(list(program.decls) + nested, sink)
    for d in program.decls:
        if isinstance(d, ast.ParserDecl):
            check_parser_graph(d, sink)


def callees(decl: ast.Node) -> set[ast.Node]:
    out: set[ast.Node] = set()
    for n in ast.walk(decl):
        if isinstance(n, ast.Call) and isinstance(n.resolved, CallInfo):
            if n.resolved.kind in ("function", "action", "control_apply") and \
                    n.resolved.decl is not None:
                out.add(n.resolved.decl)
        if isinstance(n, ast.ActionRef) and isinstance(getattr(n, "call", None), CallInfo):
            out.add(n.call.decl)
    return out


def check_recursion(decls: list[ast.Node], sink: DiagnosticSink) -> None:
    graph = {d: callees(d) for d in decls}
    state: dict[ast.Node, int] = {}

    def visit(d: ast.Node, path: list[ast.Node]) -> bool:
        state[d] = 1
        for c in graph.get(d, ()):
            if state.get(c) == 1:
                sink.error(f"{getattr(c, 'name', '?')}: recursive invocation is not allowed "
                           f"({' -> '.join(getattr(x, 'name', '?') for x in path + [c])})",
                           c.loc)
                return True
            if state.get(c) is None and c in graph and visit(c, path + [c]):
                return True
        state[d] = 2
        return False

    for d in decls:
        if state.get(d) is None and visit(d, [d]):
            return


def _successors(state: ast.ParserState) -> list[str]:
    tr = state.transition
    if tr is None:
        return ["reject"]
    if isinstance(tr, ast.PathExpr):
        return [tr.name]
    if isinstance(tr, ast.SelectExpr):
        return [c.state for c in tr.cases]
    return []


def check_parser_graph(p: ast.ParserDecl, sink: DiagnosticSink) -> None:
    states = {s.name: s for s in p.states}
    if "start" not in states:
        return
    seen = {"start"}
    todo = ["start"]
    while todo:
        s = states.get(todo.pop())
        if s is None:
            continue
        for nxt in _successors(s):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    if "accept" not in seen and "reject" not in seen:
        sink.error(f"parser {p.name}: Parser never reaches accept or reject state", p.loc)
    for s in p.states:
        if s.name not in seen:
            sink.warning(f"{s.name}: unreachable state", s.loc)
