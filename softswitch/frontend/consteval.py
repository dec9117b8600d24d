"""Compile-time evaluation of P4_16 constant expressions.

P4 constants are evaluated with the run-time semantics of their types, so that a value
folded here is bit-for-bit what the switch would compute: ``bit<W>`` arithmetic wraps
modulo 2^W, ``int<W>`` wraps in two's complement, ``int`` is arbitrary precision, ``|+|``
and ``|-|`` saturate, ``/`` and ``%`` are only defined on non-negative operands.

Constant values are plain Python values: ``int`` (already wrapped to the type's width and
signedness), ``bool``, ``str``; enum and ``error`` members are :class:`MemberConst`;
list/tuple values are Python tuples; struct/header values are :class:`StructConst`.

:func:`evaluate` works on an expression the type checker has annotated (it reads
``Expr.type`` and ``PathExpr.decl``); the ``fold_*`` helpers are what the type checker
calls while annotating.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from softswitch.diagnostics import P4Error, SourceLoc
from softswitch.frontend import ast
from softswitch.frontend import types as T


@dataclass(frozen=True)
class MemberConst:
    """A constant enum or ``error`` member.

    ``type_name`` is the enum's name (``"error"`` for errors), ``name`` the member and
    ``value`` its numeric value: the declared value of a serializable enum, else the
    member's ordinal (for ``error``, the ordinal in program order of all error members).
    """

    type_name: str
    name: str
    value: int

    def __str__(self) -> str:
        return f"{self.type_name}.{self.name}"


@dataclass(frozen=True)
class StructConst:
    """A constant struct/header value: ``fields`` as ``(name, value)`` pairs in order."""

    fields: tuple[tuple[str, Any], ...]
    valid: bool = True


def wrap(value: int, typ: T.Type) -> int:
    """Reduce an integer to the range of ``typ`` (two's complement for ``int<W>``)."""
    typ = T.strip_newtype(typ)
    if isinstance(typ, T.EnumType) and typ.underlying is not None:
        typ = typ.underlying
    if not isinstance(typ, T.BitsType):
        return value
    w = typ.width
    if w == 0:
        return 0
    value &= (1 << w) - 1
    if typ.signed and value >> (w - 1):
        value -= 1 << w
    return value


def _bounds(typ: T.BitsType) -> tuple[int, int]:
    if typ.signed:
        return -(1 << (typ.width - 1)), (1 << (typ.width - 1)) - 1
    return 0, (1 << typ.width) - 1


def _saturate(value: int, typ: T.Type) -> int:
    typ = T.strip_newtype(typ)
    if not isinstance(typ, T.BitsType) or typ.width == 0:
        return value
    lo, hi = _bounds(typ)
    return max(lo, min(hi, value))


def fold_unary(op: str, v: Any, typ: T.Type, loc: SourceLoc | None) -> Any:
    """Value of ``op v`` where the result has type ``typ``."""
    if op == "!":
        return not v
    if op == "~":
        return wrap(~v, typ)
    if op == "-":
        return wrap(-v, typ)
    return v


def _check_nonneg_division(op: str, left: int, right: int, loc: SourceLoc | None) -> None:
    if right == 0:
        raise P4Error(f"{left} {op} {right}: "
                      f"{'Modulo by zero' if op == '%' else 'Division by zero'}", loc)
    if left < 0 or right < 0:
        raise P4Error(f"{left} {op} {right}: Division is not defined for negative numbers", loc)


def fold_binary(op: str, left: Any, right: Any, typ: T.Type,
                loc: SourceLoc | None, right_type: T.Type | None = None) -> Any:
    """Value of ``left op right``; ``typ`` is the result type (bool for comparisons).

    ``right_type`` is needed by ``++`` (the width of the right operand).
    """
    if op in ("==", "!="):
        return (left == right) == (op == "==")
    if op == "&&":
        return bool(left) and bool(right)
    if op == "||":
        return bool(left) or bool(right)
    cmp = {"<": left < right, "<=": left <= right, ">": left > right,
           ">=": left >= right} if op in ("<", "<=", ">", ">=") else None
    if cmp is not None:
        return cmp[op]
    if op in ("/", "%"):
        _check_nonneg_division(op, left, right, loc)
        return wrap(left // right if op == "/" else left % right, typ)
    if op == "<<":
        if right < 0:
            raise P4Error(f"{left} << {right}: shift amount must be non-negative", loc)
        if right > 1 << 16 and isinstance(T.strip_newtype(typ), T.IntType):
            raise P4Error(f"{left} << {right}: shift amount too large", loc)
        if isinstance(T.strip_newtype(typ), T.BitsType) and right >= T.strip_newtype(typ).width:
            return 0
        return wrap(left << right, typ)
    if op == ">>":
        if right < 0:
            raise P4Error(f"{left} >> {right}: shift amount must be non-negative", loc)
        return wrap(left >> right, typ)
    if op == "++":
        rw = T.bit_width(right_type) if right_type is not None else None
        if rw is None:
            raise P4Error("concatenation needs operands of known width", loc)
        return wrap((left << rw) | (right & ((1 << rw) - 1)), typ)
    simple = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
              "&": lambda a, b: a & b, "|": lambda a, b: a | b, "^": lambda a, b: a ^ b}
    if op in simple:
        return wrap(simple[op](left, right), typ)
    if op == "|+|":
        return _saturate(left + right, typ)
    if op == "|-|":
        return _saturate(left - right, typ)
    raise P4Error(f"operator {op} cannot be evaluated at compile time", loc)


def fold_slice(value: int, hi: int, lo: int) -> int:
    """Bits ``hi..lo`` of ``value`` as an unsigned number."""
    return (value >> lo) & ((1 << (hi - lo + 1)) - 1)


def fold_cast(value: Any, to: T.Type, loc: SourceLoc | None) -> Any:
    """Convert a constant to type ``to`` (the type checker has validated the cast)."""
    base = T.strip_newtype(to)
    if isinstance(value, MemberConst):
        value = value.value
    if isinstance(base, T.BoolType):
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            if value not in (0, 1):
                raise P4Error(f"{value}: only 0 and 1 can be cast to bool", loc)
            return value == 1
        return value
    if isinstance(base, (T.BitsType, T.IntType)):
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int):
            return wrap(value, base)
        return value
    if isinstance(base, T.EnumType) and isinstance(value, int):
        for name, v in base.members.items():
            if v == wrap(value, base):
                return MemberConst(base.name, name, v)
        return wrap(value, base)
    return value


def member_const(typ: T.EnumType, name: str) -> MemberConst:
    return MemberConst(typ.name, name, typ.members[name])


def evaluate(expr: ast.Expr) -> Any:
    """The compile-time value of an annotated expression, or ``ast.NOT_CONST``.

    Passes may call this on any expression the type checker has seen; it recomputes the
    value from the (typed) sub-expressions, so it also works on nodes whose ``const``
    annotation was not filled in.
    """
    if expr.const is not ast.NOT_CONST:
        return expr.const
    value = _evaluate(expr)
    if value is not ast.NOT_CONST:
        expr.const = value
    return value


def _member_value(v: Any) -> Any:
    return v.value if isinstance(v, MemberConst) else v


def _evaluate(expr: ast.Expr) -> Any:
    typ = expr.type
    if isinstance(expr, ast.IntLiteral):
        return wrap(expr.value, typ) if typ is not None else expr.value
    if isinstance(expr, (ast.BoolLiteral, ast.StringLiteral)):
        return expr.value
    if isinstance(expr, ast.PathExpr):
        decl = expr.decl
        if isinstance(decl, ast.ConstDecl):
            v = evaluate(decl.value)
            return fold_cast(v, typ, expr.loc) if typ is not None else v
        return ast.NOT_CONST
    if isinstance(expr, ast.Unary):
        v = evaluate(expr.expr)
        return ast.NOT_CONST if v is ast.NOT_CONST else fold_unary(expr.op, v, typ, expr.loc)
    if isinstance(expr, ast.Binary):
        lv, rv = evaluate(expr.left), evaluate(expr.right)
        if lv is ast.NOT_CONST or rv is ast.NOT_CONST:
            return ast.NOT_CONST
        members = isinstance(lv, MemberConst) + isinstance(rv, MemberConst)
        if expr.op in ("==", "!=", "<", "<=", ">", ">="):
            # p4c folds no enum member against a number, and does not order members
            if members == 1 or (members and expr.op not in ("==", "!=")):
                return ast.NOT_CONST
        else:   # a serializable enum's member takes part in arithmetic as its value
            lv, rv = _member_value(lv), _member_value(rv)
        return fold_binary(expr.op, lv, rv, typ, expr.loc, expr.right.type)
    if isinstance(expr, ast.Ternary):
        c = evaluate(expr.cond)
        if c is ast.NOT_CONST:
            return ast.NOT_CONST
        return evaluate(expr.then if c else expr.otherwise)
    if isinstance(expr, ast.Cast):
        v = evaluate(expr.expr)
        return ast.NOT_CONST if v is ast.NOT_CONST else fold_cast(v, typ, expr.loc)
    if isinstance(expr, ast.Slice):
        v, hi, lo = evaluate(expr.expr), evaluate(expr.hi), evaluate(expr.lo)
        if ast.NOT_CONST in (v, hi, lo) or not isinstance(v, int):
            return ast.NOT_CONST
        return fold_slice(v, hi, lo)
    if isinstance(expr, ast.ListExpr):
        items = [evaluate(i) for i in expr.items]
        return ast.NOT_CONST if ast.NOT_CONST in items else tuple(items)
    if isinstance(expr, ast.StructExpr):
        vals = [(n, evaluate(e)) for n, e in expr.fields]
        if any(v is ast.NOT_CONST for _, v in vals):
            return ast.NOT_CONST
        return StructConst(tuple(vals))
    return ast.NOT_CONST


def compile_time_known(expr: ast.Expr) -> bool:
    """Whether ``expr`` is a compile-time known value (P4_16 spec, "Compile-time known
    and local compile-time known values"): besides what folds to a constant, names of
    directionless parameters (constructor and action parameters), constants, instances
    and enum/``error``/``match_kind`` members, and the operators, casts, member and
    index accesses, lists and structure expressions over such values. Table entries
    need them for their action arguments."""
    if expr.const is not ast.NOT_CONST:
        return True
    if isinstance(expr, ast.PathExpr):
        d = expr.decl
        return (isinstance(d, (ast.ConstDecl, ast.InstanceDecl, ast.EnumMember))
                or isinstance(d, ast.Param) and not d.direction)
    if isinstance(expr, (ast.Unary, ast.Cast)):
        return compile_time_known(expr.expr)
    if isinstance(expr, ast.Binary):
        return compile_time_known(expr.left) and compile_time_known(expr.right)
    if isinstance(expr, ast.Ternary):
        return all(compile_time_known(e) for e in (expr.cond, expr.then, expr.otherwise))
    if isinstance(expr, ast.Slice):
        return compile_time_known(expr.expr)
    if isinstance(expr, ast.Member):
        return compile_time_known(expr.expr) or isinstance(expr.expr, ast.TypeNameExpr)
    if isinstance(expr, ast.Index):
        return compile_time_known(expr.expr) and compile_time_known(expr.index)
    if isinstance(expr, ast.ListExpr):
        return all(compile_time_known(i) for i in expr.items)
    if isinstance(expr, ast.StructExpr):
        return all(compile_time_known(v) for _, v in expr.fields)
    return isinstance(expr, (ast.TypeNameExpr, ast.DefaultExpr, ast.DontCareExpr,
                             ast.InvalidHeaderExpr))
