"""Control-plane names: the rules that give P4Runtime and the switch one name per object.

The analogue of p4c's ``HierarchicalNames`` and ``TableKeyNames`` passes (P4_16 spec,
"Control plane names"):

* an object's local name is its ``@name`` if it has one, else its declared name
  (:func:`local_name`); ``@hidden`` objects have none (:func:`is_hidden`);
* a local name is qualified by the prefix of the block instance it lives in
  (:func:`qualify`: ``MyIngress.t``), unless it starts with a dot (``@name(".t")``: the
  name is absolute, ``t``);
* a table key's match-field name is its ``@name`` or is derived from the key
  expression the way p4c prints it (:func:`key_field_name`: ``hdr.ipv4.dstAddr``,
  ``hdr.ipv4.$valid$`` for ``isValid()``, ``a[2].f``, ``x[7:0]``, ``a & b``);
* the width P4Info reports for a field of a ``@p4runtime_translation`` type is the
  controller-side width (:func:`type_width`);
* a named type's control-plane name is its ``@name`` or its name (:func:`type_name`);
  a ``digest`` call's digest is named after its data type (:func:`digest_names`).

:mod:`softswitch.frontend.elaborate` applies them while it walks the instance tree.
"""

from __future__ import annotations

from typing import Any

from softswitch.diagnostics import P4Error
from softswitch.frontend import ast
from softswitch.frontend import types as T


def string_annotation(node: Any, name: str) -> str | None:
    """The string argument of ``@name("x")``-style annotations (None when absent)."""
    a = ast.annotation(node, name)
    if a is None:
        return None
    if a.exprs and isinstance(a.exprs[0], ast.StringLiteral):
        return a.exprs[0].value
    body = a.body.strip()
    if len(body) >= 2 and body[0] == '"' and body[-1] == '"':
        return body[1:-1]
    raise P4Error(f"@{name} annotation's argument must be a string", a.loc)


def is_hidden(node: Any) -> bool:
    return ast.annotation(node, "hidden") is not None


def local_name(node: Any, default: str) -> str:
    """The local control-plane name: ``@name`` if present, else the declared name."""
    n = string_annotation(node, "name")
    return default if n is None else n


def qualify(prefix: str, name: str) -> str:
    """``prefix.name``, or ``name`` without its dot when it is absolute (``.x``)."""
    if name.startswith("."):
        return name[1:]
    return f"{prefix}.{name}" if prefix else name


def _literal_text(expr: ast.Expr) -> str | None:
    if isinstance(expr, ast.IntLiteral):
        text = expr.text or str(expr.value)
        # p4c prints the value in the base it was written in, without width prefix.
        for sep in ("w", "s"):
            if sep in text and not text.lower().startswith("0x"):
                head, _, tail = text.partition(sep)
                if head.isdigit():
                    text = tail
        if text.lower().startswith("0x"):
            return hex(expr.value)
        if text.lower().startswith("0b"):
            return bin(expr.value)
        if text.lower().startswith("0o"):
            return oct(expr.value)
        return str(expr.value)
    c = getattr(expr, "const", ast.NOT_CONST)
    if isinstance(c, int) and not isinstance(c, bool):
        return str(c)
    return None


def _field_external_name(expr: ast.Member) -> str:
    t = getattr(expr.expr, "type", None)
    if isinstance(t, T.StructLikeType):
        f = t.field(expr.name)
        a = ast.annotation(f, "name") if f is not None else None
        if a is not None and a.exprs and isinstance(a.exprs[0], ast.StringLiteral):
            return a.exprs[0].value
    return expr.name


def _is_header_like(t: Any) -> bool:
    return isinstance(t, (T.HeaderType, T.HeaderUnionType))


def key_expr_name(expr: ast.Expr) -> str | None:
    """p4c's generated name of a key expression, or None when it needs ``@name``."""
    if isinstance(expr, ast.PathExpr):
        return ("." if expr.top_level else "") + expr.name
    if isinstance(expr, ast.Member):
        fname = expr.name
        if fname == "isValid" and (_is_header_like(getattr(expr.expr, "type", None))
                                   or getattr(expr.expr, "type", None) is None):
            fname = "$valid$"
        else:
            fname = _field_external_name(expr)
        if fname.startswith("."):
            return fname[1:]
        left = key_expr_name(expr.expr)
        return None if left is None else f"{left}.{fname}"
    if isinstance(expr, ast.Call):
        m = key_expr_name(expr.target)
        if m is not None and m.endswith("$valid$") and not expr.args:
            return m
        return None
    if isinstance(expr, ast.Index):
        left = key_expr_name(expr.expr)
        right = _literal_text(expr.index)
        if right is None:
            right = key_expr_name(expr.index)
        return None if left is None or right is None else f"{left}[{right}]"
    if isinstance(expr, ast.Slice):
        e0 = key_expr_name(expr.expr)
        hi, lo = _literal_text(expr.hi), _literal_text(expr.lo)
        if e0 is None or hi is None or lo is None:
            return None
        return f"{e0}[{hi}:{lo}]"
    if isinstance(expr, ast.Binary) and expr.op == "&":
        left, right = key_expr_name(expr.left), key_expr_name(expr.right)
        return None if left is None or right is None else f"{left} & {right}"
    if isinstance(expr, ast.IntLiteral):
        return _literal_text(expr)
    return None


def key_field_name(elem: ast.KeyElement) -> str:
    explicit = string_annotation(elem, "name")
    if explicit is not None:
        return explicit
    name = key_expr_name(elem.expr)
    if name is None:
        raise P4Error("Complex key expression requires a @name annotation (P4Runtime needs "
                      "a name for every key field)", elem.expr.loc or elem.loc)
    return name


def type_width(t: Any) -> int | None:
    """Width in bits as P4Info reports it (``@p4runtime_translation`` sdn width wins)."""
    if t is None:
        return None
    if isinstance(t, T.NewType):
        sdn = translation_width(t)
        if sdn is not None:
            return sdn
    return T.bit_width(t)


def translation_width(t: T.NewType) -> int | None:
    """The controller-side width of a ``@p4runtime_translation`` type: W for
    ``(uri, W)``, 0 for ``(uri, string)``; None when the type is not translated."""
    a = ast.annotation(t.decl, "p4runtime_translation")
    if a is None:
        return None
    w = a.exprs[1] if a.exprs and len(a.exprs) > 1 else None
    if isinstance(w, ast.IntLiteral):
        return w.value
    c = getattr(w, "const", ast.NOT_CONST)
    return c if isinstance(c, int) and not isinstance(c, bool) else 0


def type_name(t: Any) -> str:
    """A named type's control-plane name: its ``@name`` (no leading dot) or its name."""
    decl = getattr(t, "decl", None)
    a = ast.annotation(decl, "name") if decl is not None else None
    if a is not None and a.exprs and isinstance(a.exprs[0], ast.StringLiteral):
        return a.exprs[0].value.lstrip(".")
    return t.name


def digest_data_type(call: ast.Call) -> Any:
    """The data type ``T`` of a ``digest<T>(receiver, data)`` call (a list's type as the
    tuple it is)."""
    info = call.resolved
    t = next(iter(info.type_args.values()), None) if info is not None and \
        info.type_args else None
    if t is None and call.type_args:
        t = call.type_args[0].resolved
    if t is None and len(call.args) > 1:
        t = call.args[1].value.type
    return T.TupleType(t.elements) if isinstance(t, T.ListType) else t


def digest_names(calls: list[ast.Call]) -> dict[int, str]:
    """The digest name of each ``digest`` call (by ``id``), as p4c names them: a struct,
    header or union by its type's control-plane name, a type written by name (a
    typedef) by that name, any other (a tuple or list, ``bit<W>``, ``bool``)
    ``digest_N``, N counting such calls in program order (``calls``' order)."""
    names: dict[int, str] = {}
    auto = 0
    for call in calls:
        if id(call) in names:
            continue
        t = digest_data_type(call)
        written = call.type_args[0] if call.type_args else None
        if isinstance(t, T.StructLikeType):
            names[id(call)] = type_name(t)
        elif isinstance(t, (T.NewType, T.EnumType)):
            names[id(call)] = type_name(t)
        elif isinstance(written, ast.NamedTypeRef):
            names[id(call)] = written.name
        else:
            names[id(call)] = f"digest_{auto}"
            auto += 1
    return names
