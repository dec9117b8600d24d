"""What the checker modules share, one floor below all of them.

* how a check reports: :func:`fail` builds the ``P4Error`` at a node, :class:`Cascade`
  marks an error that only follows from one already reported;
* :func:`describe`: an expression as p4c prints it in messages;
* :func:`base`: a type without its ``type`` (newtype) wrappers;
* :class:`Checker`: the part of :class:`~softswitch.frontend.typecheck.ExprChecker`
  that call typing (:mod:`softswitch.frontend.callcheck`) is written against, so the
  expression checker can use call typing without the two importing each other.
"""

from __future__ import annotations

from typing import Any, Protocol

from softswitch.diagnostics import P4Error
from softswitch.frontend import ast
from softswitch.frontend import types as T
from softswitch.frontend.context import Ctx
from softswitch.frontend.typeresolve import TypeResolver
from softswitch.frontend.unify import Bindings

SIZE_METHODS = ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes")


class Cascade(P4Error):
    """An error that only follows from one already reported (not shown again)."""


def fail(msg: str, node: ast.Node | None) -> P4Error:
    return P4Error(msg, node.loc if node is not None else None)


def base(t: Any) -> Any:
    return T.strip_newtype(t) if isinstance(t, T.Type) else t


def describe(e: ast.Expr) -> str:
    """A short rendering of an expression for messages (like p4c's)."""
    if isinstance(e, ast.PathExpr):
        return ("." if e.top_level else "") + e.name
    if isinstance(e, ast.IntLiteral):
        return e.text or str(e.value)
    if isinstance(e, ast.BoolLiteral):
        return "true" if e.value else "false"
    if isinstance(e, ast.StringLiteral):
        return f'"{e.value}"'
    if isinstance(e, ast.Member):
        return f"{describe(e.expr)}.{e.name}"
    if isinstance(e, ast.Index):
        return f"{describe(e.expr)}[{describe(e.index)}]"
    if isinstance(e, ast.Slice):
        return f"{describe(e.expr)}[{describe(e.hi)}:{describe(e.lo)}]"
    if isinstance(e, ast.Binary):
        return f"{describe(e.left)} {e.op} {describe(e.right)}"
    if isinstance(e, ast.Unary):
        return f"{e.op}{describe(e.expr)}"
    if isinstance(e, ast.Call):
        return f"{describe(e.target)}(...)"
    if isinstance(e, ast.ListExpr):
        return "{ " + ", ".join(describe(i) for i in e.items) + " }"
    if isinstance(e, ast.ThisExpr):
        return "this"
    if isinstance(e, ast.TypeNameExpr):
        ref = e.type_ref
        return getattr(ref, "name", None) or ("error" if isinstance(ref, ast.ErrorTypeRef)
                                              else str(ref.resolved or "type"))
    if isinstance(e, ast.Cast):
        return f"({e.type or 'cast'}){describe(e.expr)}"
    if isinstance(e, ast.InvalidHeaderExpr):
        return "{#}"
    if isinstance(e, ast.DontCareExpr):
        return "_"
    if isinstance(e, ast.DefaultExpr):
        return "default"
    if isinstance(e, ast.Ternary):
        return f"{describe(e.cond)} ? {describe(e.then)} : {describe(e.otherwise)}"
    if isinstance(e, ast.StructExpr):
        return "{ " + ", ".join(f"{n} = {describe(v)}" for n, v in e.fields) + " }"
    return type(e).__name__


class Checker(Protocol):
    """The expression checker as call typing uses it."""

    types: TypeResolver

    def expr(self, e: ast.Expr, ctx: Ctx) -> T.Type: ...

    def coerce(self, e: ast.Expr, target: T.Type, ctx: Ctx, quiet: bool = False,
               keyset: bool = False) -> bool: ...

    def is_lvalue(self, e: ast.Expr) -> bool: ...

    def names_type(self, e: ast.Expr) -> bool: ...

    def resolve_type(self, ref: ast.TypeRef, ctx: Ctx) -> T.Type: ...

    def table_result(self, table: ast.TableDecl) -> T.StructType: ...

    def infer(self, params: tuple[T.ParamInfo, ...], args: list[ast.Expr | None],
              variables: set[T.TypeVar], m: Bindings, where: ast.Node) -> Bindings: ...
