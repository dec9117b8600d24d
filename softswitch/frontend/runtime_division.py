"""``/`` and ``%`` that p4c leaves for run time, and the folding that decides them.

BMv2 has no run-time ``/`` or ``%`` on arbitrary values, so p4c refuses a division that
is still in the program after its folding ("could not evaluate expression at
compilation time"). Before that check p4c:

* reduces a division by a power-of-two constant to a shift and a remainder to a mask,
  also on ``int`` operands (:func:`strength_reduce`, applied while typing), and folds
  ``0 / x`` to ``0`` (a call in ``x`` is first moved to a statement of its own);
* propagates the values assigned in straight-line code (of a control, action, function
  or parser state) and folds constants, so a division in a dead operand of ``&&``,
  ``||`` or ``?:``, in a dead ``if`` branch, or by a divisor known there, is gone.

:func:`check` does the second part on the divisions the type checker left over
(``ExprChecker.runtime_divisions``) and refuses the rest with p4c's reason. Its copy
propagation follows p4c's ``LocalCopyPropagation`` without reaching further: after an
``if`` a value stays known only when neither branch assigned it (also a branch that
folding removes later: p4c propagates first), a ``?:`` result is known only under a
constant condition, and a call forgets what it may write (its ``out``/``inout``
arguments, what an action, function or table's actions assign outside themselves, the
header of ``setValid``; everything for anything else). Nothing is rewritten: the back
ends evaluate ``&&``, ``||`` and ``?:`` lazily, so a dead operand never runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from softswitch.diagnostics import DiagnosticSink, P4Error
from softswitch.frontend import ast, consteval
from softswitch.frontend import types as T
from softswitch.frontend.checkbase import describe

NOT_CONST = ast.NOT_CONST
UNEVALUATED = "could not evaluate expression at compilation time"
#: a value a name holds: (the value, the statement or declaration that assigned it)
Known = tuple[Any, int]
State = dict[tuple[Any, ...], Known]


def zero_divisor(op: str) -> str:
    """p4c's words for a division or remainder by zero."""
    return "Modulo by zero" if op == "%" else "Division by zero"


def number(v: Any) -> Any:
    """An integer constant's value (a serializable enum member's too), else ``v``."""
    return v.value if isinstance(v, consteval.MemberConst) else v


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def power_of_two(v: Any) -> int | None:
    """k when ``v`` is the constant 2**k, else None."""
    v = number(v)
    if _is_int(v) and v > 0 and v & (v - 1) == 0:
        return v.bit_length() - 1
    return None


def has_side_effects(e: ast.Expr) -> bool:
    """Whether ``e`` calls anything other than ``isValid()``."""
    for n in ast.walk(e):
        if isinstance(n, ast.Call):
            info = n.resolved
            if getattr(info, "kind", None) != "builtin" or info.builtin != "isValid":
                return True
    return False


def division_computable(left: Any, right: Any) -> bool:
    """Whether p4c folds or reduces ``left / right`` (or ``%``) without knowing more:
    both constant, a power-of-two divisor, or a zero dividend."""
    if left is not NOT_CONST and right is not NOT_CONST:
        return True
    return power_of_two(right) is not None or _is_int(number(left)) and number(left) == 0


def strength_reduce(e: ast.Binary) -> None:
    """Rewrite a run-time ``x / 2**k`` as ``x >> k`` and ``x % 2**k`` as
    ``x & (2**k - 1)``, as p4c does (exact: both are floor division and modulo); fold
    ``0 / x`` and ``0 % x`` to 0 when ``x`` has no side effects (else ``x`` still runs)."""
    if e.op not in ("/", "%"):
        return
    left = number(e.left.const)
    if _is_int(left) and left == 0 and e.right.const is NOT_CONST \
            and not has_side_effects(e.right):
        e.const = 0
        return
    k = power_of_two(e.right.const)
    if k is None or e.left.const is not NOT_CONST:
        return
    if e.op == "%":
        e.op = "&"
        e.right = _literal((1 << k) - 1, e.right.type, e.right)
    else:
        e.op = ">>"
        e.right = _literal(k, T.IntType(), e.right)


def _literal(value: int, typ: T.Type, at: ast.Expr) -> ast.IntLiteral:
    enum = T.strip_newtype(typ)
    if isinstance(enum, T.EnumType) and enum.underlying is not None:
        typ = enum.underlying
    lit = ast.IntLiteral(value, loc=at.loc, text=str(value))
    lit.type = typ
    lit.const = consteval.wrap(value, typ)
    return lit


def check(program: ast.Program, divisions: Iterable[ast.Binary], sink: DiagnosticSink) -> None:
    """Refuse each of ``divisions`` that p4c's folding leaves in the program."""
    pending = {id(d): d for d in divisions}
    if not pending:
        return
    flow = _Flow(pending)
    flow.program(program)
    for key, d in pending.items():
        reason = flow.verdicts.get(key, UNEVALUATED)
        if reason:
            sink.error(f"{describe(d)}: {reason}", d.loc)


class _Flow:
    """Values known along straight-line code, and what they make of each division."""

    def __init__(self, pending: dict[int, ast.Binary]) -> None:
        self.pending = pending
        #: id(division) -> "" (folded, reduced or dead) or why it stays refused
        self.verdicts: dict[int, str] = {}
        self.callees = _CalleeWrites()

    # ------------------------------------------------------------ declarations
    def program(self, program: ast.Program) -> None:
        for d in program.decls:
            if isinstance(d, ast.ControlDecl):
                self.control(d)
            elif isinstance(d, ast.ParserDecl):
                for s in d.states:
                    self.stmts(s.stmts, {})
            elif isinstance(d, (ast.ActionDecl, ast.FunctionDecl)):
                self.stmts(d.body.stmts, {})

    def control(self, d: ast.ControlDecl) -> None:
        start: State = {}
        for loc in d.locals:
            if isinstance(loc, ast.ActionDecl):
                self.stmts(loc.body.stmts, {})
            elif isinstance(loc, ast.VarDecl):
                start = self.stmt(loc, start) or {}
        self.stmts(d.apply.stmts, start)

    # ------------------------------------------------------------ statements
    def stmts(self, stmts: list[ast.Stmt], st: State | None) -> State | None:
        for s in stmts:
            st = self.stmt(s, st)
        return st

    def stmt(self, s: ast.Stmt, st: State | None) -> State | None:
        """The state after ``s`` (None: control does not get past it)."""
        st = {} if st is None else st   # code after exit/return: nothing known
        if isinstance(s, ast.AssignStmt):
            return self.assign(s, st)
        if isinstance(s, ast.VarDecl):
            return self.declare(s, st)
        if isinstance(s, ast.CallStmt):
            st = self.effects(st, s.call)
            self.value(s.call, st)
            return st
        if isinstance(s, ast.IfStmt):
            return self.branch(s, st)
        if isinstance(s, ast.BlockStmt):
            return self.stmts(s.stmts, st)
        if isinstance(s, ast.SwitchStmt):
            return self.switch(s, st)
        if isinstance(s, ast.ReturnStmt):
            if s.value is not None:
                self.value(s.value, st)
            return None
        if isinstance(s, ast.ExitStmt):
            return None
        if isinstance(s, (ast.EmptyStmt, ast.BreakStmt, ast.ContinueStmt, ast.ConstDecl)):
            return st
        for part in ast.children(s):  # loops: nothing known in them or after them
            if isinstance(part, ast.Stmt):
                self.stmt(part, {})
            elif isinstance(part, ast.Expr):
                self.value(part, {})
        return {}

    def effects(self, st: State, *exprs: ast.Expr | None) -> State:
        """``st`` without what the calls in ``exprs`` may write (p4c first moves a call
        out of an expression, so all of the expression reads after it)."""
        for e in exprs:
            for n in ast.walk(e) if e is not None else ():
                if isinstance(n, ast.Call):
                    written = self.callees.of(n.resolved)
                    if written is None:
                        return {}
                    for key in written:
                        st = _kill(st, key)
        return st

    def assign(self, s: ast.AssignStmt, st: State) -> State:
        st = self.effects(st, s.value, s.target)
        v = self.value(s.value, st)
        self.value(s.target, st)
        return self.store(st, s.target, v, id(s))

    def declare(self, s: ast.VarDecl, st: State) -> State:
        st = self.effects(st, s.init)
        v = self.value(s.init, st) if s.init is not None else NOT_CONST
        st = _kill(st, (id(s),))
        if v is not NOT_CONST:
            st[(id(s),)] = (v, id(s))
        return st

    def store(self, st: State, target: ast.Expr, v: Any, at: int) -> State:
        key = _key(target)
        st = _kill(st, _place(target))
        if key is not None and v is not NOT_CONST:
            st[key] = (v, at)
        return st

    def branch(self, s: ast.IfStmt, st: State) -> State | None:
        """Both branches flow into what follows, as in p4c's copy propagation, which
        runs before constant folding removes the branch a known condition rules out."""
        st = self.effects(st, s.cond)
        c = self.value(s.cond, st)
        a = self.stmt(s.then, dict(st))
        b = self.stmt(s.otherwise, dict(st)) if s.otherwise is not None else st
        if isinstance(c, bool):
            dead = s.otherwise if c else s.then
            if dead is not None:
                self.dead(dead)
        return _merge(a, b)

    def switch(self, s: ast.SwitchStmt, st: State) -> State | None:
        st = self.effects(st, s.expr)
        self.value(s.expr, st)
        out: State | None = st
        for case in s.cases:
            if case.body is not None:
                out = _merge(out, self.stmt(case.body, dict(st)))
        return out

    # ------------------------------------------------------------ expressions
    def value(self, e: ast.Expr, st: State) -> Any:
        """``e``'s value where ``st`` holds (or NOT_CONST), deciding the divisions in
        its live operands and clearing those in its dead ones."""
        if isinstance(e, ast.Ternary):
            return self.choice(e, st)
        if isinstance(e, ast.Binary):
            if e.op in ("&&", "||"):
                return self.logical(e, st)
            lv, rv = self.value(e.left, st), self.value(e.right, st)
            if id(e) in self.pending:
                self.verdicts[id(e)] = self.divide(e, lv, rv)
            if e.const is not NOT_CONST:
                return e.const
            return _fold(lambda: _fold_binary(e, lv, rv), lv, rv)
        if e.const is not NOT_CONST and not isinstance(e, ast.Call):
            return e.const
        if isinstance(e, (ast.PathExpr, ast.Member, ast.Index)):
            for part in ast.children(e):
                if isinstance(part, ast.Expr):
                    self.value(part, st)
            key = _key(e)
            known = st.get(key) if key is not None else None
            return known[0] if known is not None else NOT_CONST
        if isinstance(e, ast.Slice):
            v, hi, lo = (self.value(x, st) for x in (e.expr, e.hi, e.lo))
            return _fold(lambda: consteval.fold_slice(number(v), hi, lo), v, hi, lo)
        if isinstance(e, (ast.Unary, ast.Cast)):
            v = self.value(e.expr, st)
            if isinstance(e, ast.Unary):
                return _fold(lambda: consteval.fold_unary(e.op, v, e.type, e.loc), v)
            return _fold(lambda: consteval.fold_cast(v, e.type, e.loc), v)
        for child in ast.children(e):
            if isinstance(child, ast.Expr):
                self.value(child, st)
            elif isinstance(child, ast.Argument):
                self.value(child.value, st)
        return NOT_CONST

    def logical(self, e: ast.Binary, st: State) -> Any:
        """``&&``/``||``: p4c drops the right operand after a deciding left one, and the
        left one (when it has no side effects) before a deciding right one."""
        decides = e.op == "||"
        lv = self.value(e.left, st)
        if lv is decides:
            self.dead(e.right)
            return decides
        rv = self.value(e.right, st)
        if rv is decides and not has_side_effects(e.left):
            self.dead(e.left)
            return decides
        if isinstance(lv, bool) and isinstance(rv, bool):
            return (lv or rv) if decides else (lv and rv)
        return NOT_CONST

    def choice(self, e: ast.Ternary, st: State) -> Any:
        """``?:``: a known condition makes one operand dead; p4c makes a temporary of
        the result (assigned in an ``if``), so its value is only known when the
        condition is a constant by itself."""
        c = self.value(e.cond, st)
        if isinstance(c, bool):
            taken, dead = (e.then, e.otherwise) if c else (e.otherwise, e.then)
            self.dead(dead)
            v = self.value(taken, st)
            return v if isinstance(consteval.evaluate(e.cond), bool) else NOT_CONST
        self.value(e.then, st)
        self.value(e.otherwise, st)
        return NOT_CONST

    def divide(self, e: ast.Binary, lv: Any, rv: Any) -> str:
        """What folding makes of a run-time division with these operand values."""
        left, right = number(lv), number(rv)
        if _is_int(right) and right == 0:
            return zero_divisor(e.op)
        if division_computable(left if _is_int(left) else NOT_CONST,
                               right if _is_int(right) else NOT_CONST):
            return ""
        return UNEVALUATED

    def dead(self, code: ast.Node) -> None:
        """``code`` is folded away: its divisions never reach the check."""
        for n in ast.walk(code):
            if id(n) in self.pending:
                self.verdicts[id(n)] = ""


class _CalleeWrites:
    """What a call may write, as names (None: anything)."""

    def __init__(self) -> None:
        self.bodies: dict[int, list[tuple[Any, ...]] | None] = {}

    def of(self, info: Any) -> list[tuple[Any, ...]] | None:
        kind = getattr(info, "kind", None)
        if kind == "builtin":
            if info.builtin == "isValid" or info.builtin.startswith(("min", "max")):
                return []
            return [_place(info.receiver)]
        args = [_place(a) for p, a in zip(info.params, info.args, strict=False)
                if p.direction in ("out", "inout") and a is not None] if info else []
        if kind in ("extern_function", "parser_apply", "control_apply"):
            return args
        if kind == "extern_method":
            ext = getattr(info.extern, "decl", None)
            abstract = ext is None or any(m.abstract for m in ext.methods)
            return None if abstract else args   # (an abstract method may write anything)
        if kind in ("action", "function"):
            body = self.body(info.decl)
            return None if body is None else args + body
        if kind == "table_apply":
            out: list[tuple[Any, ...]] = []
            actions = info.decl.prop("actions")
            for ref in actions.value if actions is not None else ():
                written = self.of(getattr(ref, "call", None))
                if written is None:
                    return None
                out += written
            return out
        return None

    def body(self, decl: Any) -> list[tuple[Any, ...]] | None:
        """Names outside an action or function that its body may write."""
        key = id(decl)
        if key in self.bodies:
            return self.bodies[key]
        self.bodies[key] = None              # (recursion: anything)
        own = {id(p) for p in decl.params} | {
            id(n) for n in ast.walk(decl.body) if isinstance(n, ast.VarDecl)}
        written: list[tuple[Any, ...]] = []
        for n in ast.walk(decl.body):
            if isinstance(n, ast.AssignStmt):
                found: list[tuple[Any, ...]] | None = [_place(n.target)]
            elif isinstance(n, ast.Call):
                found = self.of(n.resolved)
            else:
                continue
            if found is None:
                return None
            written += [k for k in found if k[0] not in own]
        self.bodies[key] = written
        return written


# ------------------------------------------------------------ names and values
def _place(e: ast.Expr) -> tuple[Any, ...]:
    """The name an l-value writes: itself when tracked, else all of its variable."""
    key = _key(e)
    return key if key is not None else _root(e)


def _key(e: ast.Expr) -> tuple[Any, ...] | None:
    """What a name denotes, for a variable, parameter, field or constant-index element
    (``hs.next``/``hs.last`` and run-time indexes are not tracked)."""
    if isinstance(e, ast.PathExpr):
        return (id(e.decl),) if isinstance(e.decl, (ast.VarDecl, ast.Param)) else None
    if isinstance(e, ast.Member):
        if isinstance(T.strip_newtype(e.expr.type), T.StackType):
            return None
        base = _key(e.expr)
        return base + (e.name,) if base is not None else None
    if isinstance(e, ast.Index):
        base = _key(e.expr)
        i = number(e.index.const)
        return base + (i,) if base is not None and _is_int(i) else None
    return None


def _root(e: ast.Expr) -> tuple[Any, ...]:
    """The variable or parameter under an l-value (all of it is written)."""
    while isinstance(e, (ast.Member, ast.Index, ast.Slice)):
        e = e.expr
    return (id(getattr(e, "decl", e)),)


def _kill(st: State, key: tuple[Any, ...]) -> State:
    """``st`` without what overlaps ``key`` (the name, its parts and what contains it)."""
    n = len(key)
    return {k: v for k, v in st.items() if k[:n] != key and key[:len(k)] != k}


def _merge(a: State | None, b: State | None) -> State | None:
    """After two paths: a value both kept from the same assignment (p4c compares the
    assigned expressions by identity); a path that never gets here does not count."""
    if a is None:
        return b
    if b is None:
        return a
    return {k: v for k, v in a.items() if b.get(k) == v}


def _fold(compute: Any, *values: Any) -> Any:
    if any(v is NOT_CONST for v in values):
        return NOT_CONST
    try:
        return compute()
    except (P4Error, TypeError, ValueError):
        return NOT_CONST


def _fold_binary(e: ast.Binary, lv: Any, rv: Any) -> Any:
    if e.op not in ("==", "!="):
        lv, rv = number(lv), number(rv)
    return consteval.fold_binary(e.op, lv, rv, e.type, e.loc, e.right.type)

