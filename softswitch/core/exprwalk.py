"""The half of expression lowering both back ends share: evaluation order and dispatch.

An expression lowers to Python (:class:`softswitch.core.lower.ExprLowerer`, the
interpreter, the oracle) and to C (:class:`softswitch.fastpath.cexpr.ExprGen`). What
the two must agree on is decided here once: constants fold before anything else runs;
operands are evaluated left to right, an already-lowered left operand saved in a temp
when a later one needs statements (a call with copy-out), so neither Python's nor C's
own order can show; ``?:``, ``&&`` and ``||`` run only the side they pick once an
operand needs statements; a member is an error code, an enum member, a table apply's
``hit``/``miss``/``action_run``, a header stack's member or a field; writing a header
of a union invalidates its siblings. Each back end spells the results through the hooks
at the bottom of :class:`ExprWalk`, and each keeps its own rules for what it spells
differently (arithmetic in its integer representation, l-values, casts).
"""

from __future__ import annotations

from typing import Any

from softswitch.frontend import ast
from softswitch.frontend import types as T
from softswitch.frontend.ast import NOT_CONST


def is_type_ref(e: ast.Expr) -> bool:
    """Whether ``e`` names a type (``error``, an enum) rather than a value."""
    if isinstance(e, ast.TypeNameExpr):
        return True
    if isinstance(e, ast.PathExpr):
        return isinstance(e.decl, ast.EnumDecl | ast.ErrorDecl) or e.name == "error"
    return False


def other_members(member: ast.Member) -> list[str]:
    """The members of a header union other than ``member`` (invalid once it is written);
    none when ``member`` is not a member of a union."""
    ut = T.strip_newtype(member.expr.type)
    if not isinstance(ut, T.HeaderUnionType):
        return []
    return [f.name for f in ut.fields if f.name != member.name]


class ExprWalk:
    """Expression lowering's shared rules over a back end's emitters (the hooks)."""

    #: how an error says that a construct has no lowering in this back end
    unsupported_where = "here"
    #: the back end's spelling of what the shared rules emit (``str.format`` templates):
    #: ``choose`` (an inline ``?:``), ``set`` (a statement storing a value), ``truth_set``
    #: (storing a value's truth), ``not`` (of a condition), ``!`` (of a value),
    #: ``&&``/``||`` (inline), ``hit``/``miss``/``action_run`` (of a table apply's
    #: result), ``false``/``true``, ``discard`` (a statement dropping a value), ``call_stmt`` (a
    #: call made a statement), ``key_bits``/``key_bool`` (a signed or bool match key), ``bool_int``
    spelling: dict[str, str] = {}

    # ------------------------------------------------------------ dispatch
    def expr(self, e: ast.Expr, fn: Any) -> str:
        c = e.const
        if c is not NOT_CONST and c is not None and not isinstance(e, ast.Call):
            out = self.const_literal(c, e.type)
            if out is not None:
                return out
        meth = getattr(self, "x_" + type(e).__name__, None)
        if meth is None:
            raise self.fail(f"expression {type(e).__name__} is not supported "
                            f"{self.unsupported_where}", e)
        return meth(e, fn)

    def values_in_order(self, items: list[ast.Expr], fn: Any) -> list[str]:
        """Owned values of ``items`` evaluated left to right: when a later item needs
        statements (a call with copy-out), earlier items are first saved in temps."""
        out: list[str] = []
        for item in items:
            mark = fn.buf.mark()
            code = self.value(item, fn)
            if fn.buf.mark() != mark:
                for i, prev in enumerate(out):
                    if not self.is_simple(prev):
                        out[i] = self.spill(fn, items[i].type, prev, mark)
                        mark += 1
            out.append(code)
        return out

    # ------------------------------------------------------------ operators
    def x_Binary(self, e: ast.Binary, fn: Any) -> str:
        op = e.op
        if op in ("&&", "||"):
            return self.short_circuit(e, fn)
        left = self.expr(e.left, fn)
        mark = fn.buf.mark()
        right = self.expr(e.right, fn)
        if fn.buf.mark() != mark and not self.is_simple(left):
            left = self.spill(fn, e.left.type, left, mark)
        return self.binop(op, left, right, e)

    def x_Unary(self, e: ast.Unary, fn: Any) -> str:
        v = self.expr(e.expr, fn)
        if e.op == "!":
            return self.spelling["!"].format(v=v)
        if e.op == "+":
            return v
        if e.op == "-":
            return self.negation(v, e.type)
        if e.op == "~":
            b = self.bits(e.type)
            if b is None or b[1]:
                return f"(~({v}))"
            # unsigned: the complement within the width
            return f"(({v}) ^ {self.mask_literal(b[0])})"
        raise self.fail(f"unknown unary operator {e.op}", e)

    def x_Ternary(self, e: ast.Ternary, fn: Any) -> str:
        cond = self.expr(e.cond, fn)
        start = fn.buf.mark()
        a = self.expr(e.then, fn)
        b = self.expr(e.otherwise, fn)
        if fn.buf.mark() == start:
            return self.spelling["choose"].format(cond=cond, a=a, b=b)
        # Operands needed statements: rebuild as an explicit if so only one side runs.
        del fn.buf.lines[start:]
        res = self.result_var(fn, e.type)
        with fn.buf.if_(cond):
            fn.buf.emit(self.set_stmt(res, self.expr(e.then, fn)))
        with fn.buf.else_():
            fn.buf.emit(self.set_stmt(res, self.expr(e.otherwise, fn)))
        return res

    def short_circuit(self, e: ast.Binary, fn: Any) -> str:
        left = self.expr(e.left, fn)
        start = fn.buf.mark()
        right = self.expr(e.right, fn)
        if fn.buf.mark() == start:
            return self.spelling[e.op].format(left=left, right=right)
        del fn.buf.lines[start:]
        res = self.truth_var(fn, left)
        with fn.buf.if_(res if e.op == "&&" else self.spelling["not"].format(cond=res)):
            fn.buf.emit(self.spelling["truth_set"].format(var=res, code=self.expr(e.right, fn)))
        return res

    # ------------------------------------------------------------ members and calls
    def x_Member(self, e: ast.Member, fn: Any) -> str:
        inner = e.expr
        t = T.strip_newtype(e.type) if e.type is not None else None
        if isinstance(t, T.ErrorType) and is_type_ref(inner):
            return str(self.error_code(e.name))
        if isinstance(t, T.EnumType) and is_type_ref(inner):
            return self.enum_member(t, e.name)
        if isinstance(inner, ast.Call) and getattr(inner.resolved, "kind", "") == "table_apply":
            member = e.name if e.name in ("hit", "miss") else "action_run"
            return self.spelling[member].format(result=self.expr(inner, fn))
        it = T.strip_newtype(inner.type)
        base = self.expr(inner, fn)
        if isinstance(it, T.StackType):
            return self.stack_member(base, it, e, fn)
        if isinstance(it, T.StructLikeType):
            return self.field(base, e.name)
        raise self.fail(f"member '{e.name}' of {it} is not supported", e)

    def x_Call(self, e: ast.Call, fn: Any) -> str:
        r = self.call(e, fn, want_value=True)
        if r is None:
            raise self.fail("a call without a value is used as a value", e)
        return r

    # ------------------------------------------------------------ writes
    def assign(self, target: ast.Expr, value: str, fn: Any) -> None:
        """Store ``value`` (already owned) into the P4 l-value ``target``."""
        target = flatten_slice(target)
        if isinstance(target, ast.DontCareExpr):
            fn.buf.emit(self.spelling["discard"].format(value=value))
            return
        base = self.lvalue(target.expr if isinstance(target, ast.Slice) else target, fn)
        self.store(target, base, value, fn)

    def after_header_write(self, target: ast.Expr, fn: Any) -> None:
        """Writing a valid header into a union member invalidates its siblings."""
        if not isinstance(target, ast.Member):
            return
        others = other_members(target)
        if others:
            base = self.place(target.expr, fn)
            with fn.buf.if_(f"{self.field(base, target.name)}._v"):
                for o in others:
                    fn.buf.emit(self.set_stmt(f"{self.field(base, o)}._v", self.spelling["false"]))

    # ------------------------------------------------------------ hooks
    def fail(self, msg: str, node: Any) -> Exception:  # pragma: no cover - per back end
        raise NotImplementedError

    def const_literal(self, c: Any, t: Any) -> str | None:  # pragma: no cover
        raise NotImplementedError

    def value(self, e: ast.Expr, fn: Any) -> str:  # pragma: no cover
        raise NotImplementedError

    def call(self, e: ast.Call, fn: Any, want_value: bool) -> str | None:  # pragma: no cover
        raise NotImplementedError

    def binop(self, op: str, a: str, b: str, e: ast.Binary) -> str:  # pragma: no cover
        raise NotImplementedError

    def stack_member(self, base: str, st: T.StackType, e: ast.Member,
                     fn: Any) -> str:  # pragma: no cover
        raise NotImplementedError

    def lvalue(self, e: ast.Expr, fn: Any) -> str:  # pragma: no cover
        raise NotImplementedError

    def store(self, target: ast.Expr, base: str, value: str, fn: Any) -> None:  # pragma: no cover
        """Store into ``target`` whose l-value (or, for slices, base) is ``base``."""
        raise NotImplementedError

    def bits(self, t: Any) -> tuple[int, bool] | None:  # pragma: no cover
        """(width, signed) of a fixed-width integer type this back end computes with."""
        raise NotImplementedError

    def mask_literal(self, w: int) -> str:  # pragma: no cover
        """The all-ones value of width ``w``."""
        raise NotImplementedError

    def fit_to(self, code: str, t: Any) -> str:  # pragma: no cover
        """``code`` brought into the range of type ``t`` (masked or wrapped)."""
        raise NotImplementedError

    def negation(self, v: str, t: Any) -> str:  # pragma: no cover
        """``-v`` in type ``t``."""
        raise NotImplementedError

    def is_simple(self, code: str) -> bool:  # pragma: no cover
        """Whether ``code`` is a value no later statement can change (a literal)."""
        raise NotImplementedError

    def spill(self, fn: Any, t: Any, code: str, at: int) -> str:  # pragma: no cover
        """Save ``code`` (of type ``t``) in a new temp by a statement inserted at ``at``."""
        raise NotImplementedError


    def set_stmt(self, target: str, value: str) -> str:
        return self.spelling["set"].format(target=target, value=value)

    def result_var(self, fn: Any, t: Any) -> str:  # pragma: no cover
        """A new variable for a value of type ``t`` set on both sides of an if."""
        raise NotImplementedError



    def truth_var(self, fn: Any, code: str) -> str:  # pragma: no cover
        """A new variable holding the truth of ``code``."""
        raise NotImplementedError



    def error_code(self, name: str) -> int:  # pragma: no cover
        raise NotImplementedError

    def enum_member(self, t: T.EnumType, name: str) -> str:  # pragma: no cover
        raise NotImplementedError


    def field(self, base: str, name: str) -> str:  # pragma: no cover
        raise NotImplementedError

    def element(self, base: str, i: int) -> str:  # pragma: no cover
        """Element ``i`` of a tuple or list value."""
        raise NotImplementedError

    def named(self, fn: Any, t: Any, code: str) -> str:  # pragma: no cover
        """``code`` (a value of type ``t``) as a name, saved in a new temp if it is not one."""
        raise NotImplementedError

    def assign_aggregate(self, fn: Any, base: str, t: Any,
                         value: str) -> None:  # pragma: no cover
        """Copy the aggregate ``value`` (of type ``t``) into the place ``base``."""
        raise NotImplementedError

    def place(self, e: ast.Expr, fn: Any) -> str:  # pragma: no cover
        """``e`` as a place its parts can be written through (a stack element picked by a
        run-time index referenced, not copied)."""
        raise NotImplementedError


def flatten_slice(e: ast.Expr) -> ast.Expr:
    """``x[h1:l1][h2:l2]`` as the single slice ``x[l1+h2 : l1+l2]`` (for assignment)."""
    if not (isinstance(e, ast.Slice) and isinstance(e.expr, ast.Slice)):
        return e
    inner = flatten_slice(e.expr)
    assert isinstance(inner, ast.Slice)
    lo1 = int(inner.lo.const)
    hi = ast.IntLiteral(lo1 + int(e.hi.const))
    lo = ast.IntLiteral(lo1 + int(e.lo.const))
    hi.const, lo.const = hi.value, lo.value
    out = ast.Slice(inner.expr, hi, lo, loc=e.loc)
    out.type = e.type
    return out
