"""Checks on annotations that p4c enforces.

Most annotations are free-form, but a few have rules: ``@name`` and ``@deprecated``
take one string; structured annotations (``@x[...]``) must not repeat a name on one
declaration and their values must be compile-time ``int``/``string``/``bool``
constants; and global control-plane names (``@name(".x")``) must not name two objects
of the same kind (the P4Info generator could not tell them apart).
"""

from __future__ import annotations

from collections.abc import Callable

from softswitch.diagnostics import DiagnosticSink, P4Error
from softswitch.frontend import ast
from softswitch.frontend import types as T

STRING_ANNOTATIONS = ("name", "deprecated")


def check_annotations(annos: list[ast.Annotation],
                      type_expr: Callable[[ast.Expr], T.Type]) -> None:
    """Raise on the first ill-formed annotation; ``type_expr`` types an expression."""
    for i, a in enumerate(annos):
        earlier = [b for b in annos[:i] if b.name == a.name]
        if earlier and (a.structured or any(b.structured for b in earlier)):
            raise P4Error(f"@{a.name}: duplicate name for structured annotation", a.loc)
        if a.name in STRING_ANNOTATIONS and not a.structured:
            _single_string(a, type_expr)
        if a.structured:
            _structured_values(a, type_expr)


def _single_string(a: ast.Annotation, type_expr: Callable[[ast.Expr], T.Type]) -> None:
    exprs = a.exprs or []
    if a.name == "deprecated" and not exprs:
        return
    if len(exprs) != 1 or not isinstance(exprs[0], ast.StringLiteral):
        what = "should contain a string" if a.name == "name" else \
            "annotation's value must be a string"
        raise P4Error(f"@{a.name}: {what}", a.loc)


def _structured_values(a: ast.Annotation, type_expr: Callable[[ast.Expr], T.Type]) -> None:
    values = list(a.exprs or []) + list((a.kv or {}).values())
    for v in values:
        t = T.strip_newtype(type_expr(v))
        if isinstance(t, (T.ListType, T.TupleType)) or not isinstance(
                t, (T.IntType, T.BitsType, T.StringType, T.BoolType)) \
                or v.const is ast.NOT_CONST:
            raise P4Error("illegal type for structured annotation; must be int, string or "
                          f"bool constant (@{a.name})", v.loc or a.loc)


def check_global_names(decls: list[ast.Node], sink: DiagnosticSink) -> None:
    """Two actions (or two tables, or two instances) with one ``@name(".x")`` conflict."""
    seen: dict[tuple[type, str], ast.Decl] = {}
    for d in decls:
        if not isinstance(d, (ast.ActionDecl, ast.TableDecl, ast.InstanceDecl)):
            continue
        a = ast.annotation(d, "name")
        if a is None or not a.exprs or not isinstance(a.exprs[0], ast.StringLiteral):
            continue
        name = a.exprs[0].value
        if not name.startswith("."):
            continue
        key = (type(d), name)
        old = seen.get(key)
        if old is not None and old is not d:
            sink.error(f"{name}: conflicting control plane name: {name}", d.loc)
        seen[key] = d
