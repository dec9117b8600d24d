"""What the checker modules share, one floor below all of them.

* how a check reports: :func:`fail` builds the ``P4Error`` at a node, :class:`Cascade`
  marks an error that only follows from one already reported;
* :func:`describe`: an expression as p4c prints it in messages;
* :func:`base`: a type without its ``type`` (newtype) wrappers;
* :func:`declared`: a name's declaration in scope, or the error p4c gives without one;
* :class:`Checker`: the part of :class:`~softswitch.frontend.typecheck.ExprChecker`
  that call typing (:mod:`softswitch.frontend.callcheck`) is written against, so the
  expression checker can use call typing without the two importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
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


def declared(ctx: Ctx, name: str, top_level: bool, want_type: bool, where: ast.Node,
             shown: str | None = None) -> Any:
    """What ``name`` declares in the context's scope (the top scope for ``.name``);
    an error at ``where`` naming it (as ``shown``, when given) if nothing does."""
    scope = ctx.scope.top() if top_level else ctx.scope
    decl = scope.lookup(name, want_type=want_type)
    if decl is None:
        raise fail(f"{shown or name}: declaration not found", where)
    return decl


def base(t: Any) -> Any:
    return T.strip_newtype(t) if isinstance(t, T.Type) else t


def describe(e: ast.Expr) -> str:
    """A short rendering of an expression for messages (like p4c's)."""
    for cls, render in _DESCRIBE:
        if isinstance(e, cls):
            return render(e)
    return type(e).__name__


def _describe_type_name(e: ast.TypeNameExpr) -> str:
    ref = e.type_ref
    return getattr(ref, "name", None) or ("error" if isinstance(ref, ast.ErrorTypeRef)
                                          else str(ref.resolved or "type"))


# How each kind of expression reads in a message, the first class that matches.
_DESCRIBE: tuple[tuple[type, Callable[[Any], str]], ...] = (
    (ast.PathExpr, lambda e: ("." if e.top_level else "") + e.name),
    (ast.IntLiteral, lambda e: e.text or str(e.value)),
    (ast.BoolLiteral, lambda e: "true" if e.value else "false"),
    (ast.StringLiteral, lambda e: f'"{e.value}"'),
    (ast.Member, lambda e: f"{describe(e.expr)}.{e.name}"),
    (ast.Index, lambda e: f"{describe(e.expr)}[{describe(e.index)}]"),
    (ast.Slice, lambda e: f"{describe(e.expr)}[{describe(e.hi)}:{describe(e.lo)}]"),
    (ast.Binary, lambda e: f"{describe(e.left)} {e.op} {describe(e.right)}"),
    (ast.Unary, lambda e: f"{e.op}{describe(e.expr)}"),
    (ast.Call, lambda e: f"{describe(e.target)}(...)"),
    (ast.ListExpr, lambda e: "{ " + ", ".join(describe(i) for i in e.items) + " }"),
    (ast.ThisExpr, lambda e: "this"),
    (ast.TypeNameExpr, _describe_type_name),
    (ast.Cast, lambda e: f"({e.type or 'cast'}){describe(e.expr)}"),
    (ast.InvalidHeaderExpr, lambda e: "{#}"),
    (ast.DontCareExpr, lambda e: "_"),
    (ast.DefaultExpr, lambda e: "default"),
    (ast.Ternary,
     lambda e: f"{describe(e.cond)} ? {describe(e.then)} : {describe(e.otherwise)}"),
    (ast.StructExpr,
     lambda e: "{ " + ", ".join(f"{n} = {describe(v)}" for n, v in e.fields) + " }"),
)


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
