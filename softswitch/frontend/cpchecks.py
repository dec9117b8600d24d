"""What the control-plane description of a program cannot express.

p4c builds the P4Runtime description (P4Info and the initial entries of every table the
program uses) after its front end, and rejects what P4Runtime cannot say: a table entry
key a match kind cannot take (a range on a ternary key, a mask on an exact, optional
or range key, ``_`` on an exact key), a range whose low end passes its high end once the
values are truncated to the key's width, a negative value (an ``int<W>`` key or action
argument). p4c's own corpus is compiled that way, so its verdicts include these; this
pass makes the same checks on the same objects: the tables the elaboration under
``main`` finds in use (an unused table is not described, and not checked).

As in p4c's front end, ``v &&& m`` with an all-ones mask counts as ``v`` and ``v .. v``
as ``v`` (strength reduction runs first).
"""

from __future__ import annotations

from typing import Any

from softswitch.diagnostics import DiagnosticSink, P4Error
from softswitch.frontend import ast
from softswitch.frontend import types as T
from softswitch.frontend.checkbase import describe
from softswitch.frontend.consteval import MemberConst


def check(program: ast.Program, sink: DiagnosticSink) -> Any:
    """Check the initial entries of every table in use; returns the elaboration."""
    from softswitch.frontend.elaborate import elaborate

    try:
        elab = elaborate(program)
    except P4Error:
        return None         # reported where the elaboration is used (P4Info, the target)
    for table in elab.tables:
        prop = table.decl.prop("entries")
        if prop is None or not isinstance(prop.value, list):
            continue
        kinds = [k.match_kind for k in table.keys]
        for entry in prop.value:
            try:
                _entry(entry, table.keys, kinds)
            except P4Error as err:
                sink.error(err.message, err.loc)
    return elab


def _value(e: ast.Expr) -> int | None:
    c = e.const
    if isinstance(c, MemberConst):
        return c.value
    if isinstance(c, bool):
        return int(c)
    return c if isinstance(c, int) else None


def _all_ones(mask: ast.Expr, width: int | None) -> bool:
    v = _value(mask)
    return width is not None and v is not None and v == (1 << width) - 1


def _fail(msg: str, node: ast.Node) -> P4Error:
    return P4Error(msg, node.loc)


def _entry(entry: ast.TableEntry, keys: list, kinds: list[str]) -> None:
    for item, key, kind in zip(entry.key_items, keys, kinds, strict=False):
        _key_item(item, kind, key.width)
    call = getattr(entry.action, "call", None)
    for a in (call.args if call is not None else ()):
        v = _value(a) if a is not None else None
        if v is not None and v < 0:
            raise _fail(f"{v}: Negative values not supported yet", a)


def _key_item(item: ast.Expr, kind: str, width: int | None) -> None:
    if isinstance(item, ast.Binary) and item.op == "&&&" and _all_ones(item.right, width):
        item = item.left
    if isinstance(item, ast.Binary) and item.op == ".." and \
            _value(item.left) is not None and _value(item.left) == _value(item.right):
        item = item.left
    if isinstance(item, (ast.DefaultExpr, ast.DontCareExpr, ast.DotsExpr)):
        if kind == "exact":
            raise _fail("DefaultExpression invalid key expression", item)
        return
    if isinstance(item, ast.Binary) and item.op in ("&&&", ".."):
        allowed = {"&&&": ("ternary", "lpm"), "..": ("range",)}[item.op]
        if kind in ("exact", "lpm", "ternary", "range", "optional") and kind not in allowed:
            raise _fail(f"{describe(item)} invalid key expression", item)
        lo, hi = _value(item.left), _value(item.right)
        for side, v in ((item.left, lo), (item.right, hi)):
            if v is not None and v < 0:
                raise _fail(f"{v}: Negative values not supported yet", side)
        if item.op == ".." and lo is not None and hi is not None and lo > hi:
            raise _fail(f"{describe(item)}: Invalid range for table entry", item)
        return
    v = _value(item)
    if v is not None and v < 0 and not isinstance(T.strip_newtype(item.type), T.ErrorType):
        raise _fail(f"{v}: Negative values not supported yet", item)
