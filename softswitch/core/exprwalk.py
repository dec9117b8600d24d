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

from collections.abc import Callable
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


def scalar_bits(t: Any) -> tuple[int, bool] | None:
    """(width, signed) for a fixed-width integer-like type (serializable enums included)."""
    t = T.strip_newtype(t)
    if isinstance(t, T.EnumType) and t.underlying is not None:
        t = t.underlying
    if isinstance(t, T.BitsType):
        return t.width, t.signed
    return None


def fit_with(code: str, b: tuple[int, bool] | None, wrap: Callable[[str, int], str],
             mask: Callable[[str, int], str]) -> str:
    """``code`` brought into the range of a type of (width, signed) ``b``: as it is
    without a width, 0 for width 0, else wrapped to two's complement (signed) or masked
    (unsigned) by the back end's ``wrap``/``mask`` spelling."""
    if b is None:
        return code
    w, signed = b
    if w == 0:
        return "0"
    return wrap(code, w) if signed else mask(code, w)


def slice_masks(target: ast.Slice) -> tuple[int, int, int]:
    """(low bit, the slice's bits, the other bits of the sliced value) for a write into
    ``target``: the value becomes ``(old & keep) | ((new << lo) & mask)``."""
    hi, lo = int(target.hi.const), int(target.lo.const)
    b = scalar_bits(target.expr.type)
    w = b[0] if b else hi + 1
    mask = ((1 << (hi - lo + 1)) - 1) << lo
    return lo, mask, ((1 << w) - 1) ^ mask


def cast_kind(src: Any, to: Any) -> str:
    """What a cast from type ``src`` to type ``to`` does: ``"none"`` (same width and
    signedness, or bool to bool), ``"to_bool"`` (non-zero), ``"from_bool"`` (0 or 1),
    ``"fit"`` (to bit<W>/int<W>: masked or wrapped), ``"other"`` (the back end's
    representation decides)."""
    src, to = T.strip_newtype(src), T.strip_newtype(to)
    if isinstance(to, T.BoolType):
        return "none" if isinstance(src, T.BoolType) else "to_bool"
    tb = scalar_bits(to)
    if isinstance(src, T.BoolType) and tb:
        return "from_bool"
    if tb is not None:
        return "none" if scalar_bits(src) == tb else "fit"
    return "other"


def saturation_bounds(w: int, signed: bool) -> tuple[int, int]:
    """The range ``|+|`` and ``|-|`` on bit<w>/int<w> saturate to."""
    return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)


class ExprWalk:
    """Expression lowering's shared rules over a back end's emitters (the hooks)."""

    #: how an error says that a construct has no lowering in this back end
    unsupported_where = "here"
    #: the back end's spelling of what the shared rules emit (``str.format`` templates):
    #: ``choose`` (an inline ``?:``), ``set`` (a statement storing a value),
    #: ``truth_set`` (storing a value's truth), ``not`` (of a condition), ``!`` (of a
    #: value), ``&&``/``||`` (inline), ``hit``/``miss``/``action_run`` (of a table
    #: apply's result), ``false``/``true``, ``discard`` (a statement dropping a value),
    #: ``call_stmt`` (a call made a statement), ``key_bits``/``key_bool`` (a signed or
    #: bool match key), ``bool_int``, ``incr``, ``exit``/``break``/``continue``, ``element``,
    #: ``stack_size``/``next_index``/``last_index``
    spelling: dict[str, str] = {}
    #: error member -> code (p4c's numbering)
    error_codes: dict[str, int]
    #: id(declaration) -> its generated name
    names: dict[Any, str]

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

    def x_Cast(self, e: ast.Cast, fn: Any) -> str:
        v = self.expr(e.expr, fn)
        kind = cast_kind(e.expr.type, e.type)
        if kind == "none":
            return v
        if kind == "fit":
            return self.fit_to(v, e.type)
        return self.cast(kind, v, e)

    def concat_bits(self, e: ast.Binary) -> tuple[tuple[int, bool], tuple[int, bool]]:
        """(width, signed) of both operands of ``++`` (a signed operand is concatenated
        as its bits)."""
        lb, rb = scalar_bits(e.left.type), scalar_bits(e.right.type)
        if lb is None or rb is None:
            raise self.fail("'++' needs fixed-width operands", e)
        return lb, rb

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

    def stack_member(self, base: str, st: T.StackType, e: ast.Member, fn: Any) -> str:
        """A header stack's ``size``, ``nextIndex``, ``lastIndex`` (bit<32>: 0 - 1 wraps)
        or its ``next``/``last`` element (StackOutOfBounds past either end)."""
        if e.name == "size":
            return self.spelling["stack_size"].format(size=st.size)
        if e.name == "nextIndex":
            return self.spelling["next_index"].format(base=base)
        if e.name == "lastIndex":
            return self.spelling["last_index"].format(base=base)
        if e.name in ("next", "last"):
            return self.stack_end(base, st, e.name, fn)
        raise self.fail(f"header stacks have no member '{e.name}'", e)

    def x_InvalidHeaderExpr(self, e: ast.InvalidHeaderExpr, fn: Any) -> str:
        t = T.strip_newtype(e.type)
        if isinstance(t, T.StructLikeType):
            return self.invalid_value(t)
        raise self.fail("'{#}' needs a header or header union type", e)

    def x_Call(self, e: ast.Call, fn: Any) -> str:
        r = self.call(e, fn, want_value=True)
        if r is None:
            raise self.fail("a call without a value is used as a value", e)
        return r

    # ------------------------------------------------------------ writes
    def lvalue(self, e: ast.Expr, fn: Any) -> str:
        """The place an assignment to ``e`` writes, fixed before the value is evaluated
        (P4's order): a variable, a field, a stack's ``next``/``last`` or an element."""
        if isinstance(e, ast.PathExpr):
            name = self.names.get(id(e.decl))
            if name is None or name.startswith("@"):
                raise self.fail(f"cannot assign to '{e.name}'", e)
            return name
        if isinstance(e, ast.Member):
            it = T.strip_newtype(e.expr.type)
            base = self.ref(e.expr, fn)
            if isinstance(it, T.StackType):
                if e.name in ("next", "last"):
                    return self.stack_end_place(base, it, e, fn)
                raise self.fail(f"cannot assign to stack member '{e.name}'", e)
            return self.field(base, e.name)
        if isinstance(e, ast.Index):
            return self.index_place(e, fn)
        raise self.fail("expression cannot be assigned to", e)

    def assign(self, target: ast.Expr, value: str, fn: Any) -> None:
        """Store ``value`` (already owned) into the P4 l-value ``target``."""
        target = flatten_slice(target)
        if isinstance(target, ast.DontCareExpr):
            fn.buf.emit(self.spelling["discard"].format(value=value))
            return
        base = self.lvalue(target.expr if isinstance(target, ast.Slice) else target, fn)
        self.store(target, base, value, fn)

    def store(self, target: ast.Expr, base: str, value: str, fn: Any) -> None:
        """Store into ``target`` whose l-value (or, for slices, base) is ``base``."""
        if isinstance(target, ast.Slice):
            fn.buf.emit(self.set_stmt(base, self.slice_update(target, base, value)))
            return
        tt = T.strip_newtype(target.type) if target.type is not None else None
        if isinstance(tt, T.StructLikeType | T.StackType):
            # Aggregates are assigned in place (BMv2's assign_header/_stack semantics).
            self.assign_aggregate(fn, base, tt, value)
        else:
            fn.buf.emit(self.set_stmt(base, value))
        self.after_header_write(target, fn)

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

    def stack_end(self, base: str, st: T.StackType, which: str,
                  fn: Any) -> str:  # pragma: no cover
        """The stack's ``next`` or ``last`` element (``which``) as a value."""
        raise NotImplementedError

    def ref(self, e: ast.Expr, fn: Any) -> str:  # pragma: no cover
        """An aggregate to write through (a stack element by run-time index fixed now)."""
        raise NotImplementedError

    def stack_end_place(self, base: str, st: T.StackType, e: ast.Member,
                        fn: Any) -> str:  # pragma: no cover
        """``stack.next`` or ``stack.last`` as a place (StackOutOfBounds past the end)."""
        raise NotImplementedError

    def index_place(self, e: ast.Index, fn: Any) -> str:  # pragma: no cover
        """``a[i]`` as a place."""
        raise NotImplementedError

    def slice_update(self, target: ast.Slice, base: str,
                     value: str) -> str:  # pragma: no cover
        """The value of ``base`` with ``value`` written into the slice ``target``."""
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

    def invalid_value(self, t: T.StructLikeType) -> str:  # pragma: no cover
        """A new header (or union, all members) of type ``t``, invalid."""
        raise NotImplementedError

    def cast(self, kind: str, v: str, e: ast.Cast) -> str:  # pragma: no cover
        """A cast of ``v`` of :func:`cast_kind` ``to_bool``, ``from_bool`` or ``other``."""
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



    def error_code(self, name: str) -> int:
        """The code of error member ``name`` (p4c's numbering: core.p4's first)."""
        return self.error_codes.get(name, 0)

    def enum_member(self, t: T.EnumType, name: str) -> str:  # pragma: no cover
        raise NotImplementedError


    def field(self, base: str, name: str) -> str:  # pragma: no cover
        raise NotImplementedError

    def element(self, base: str, i: int) -> str:
        """Element ``i`` of a tuple or list value."""
        return self.spelling["element"].format(base=base, i=i)

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
