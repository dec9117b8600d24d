"""Which fields a data argument serializes to: the rule both back ends' externs share.

``hash``, the checksums, ``digest``, ``log_msg`` and PNA's ``Hash``/``Checksum``/
``Digest`` take a data argument (a list, a struct, a header, a stack …) and use the
fields BMv2's field-list builder would: in declaration order, a list's items one after
the other, a stack's elements in index order, and every field of a header carrying that
header's validity, so the emitted code skips the fields of a header that is invalid at
run time. :func:`data_fields` decides that once; a back end gets (value code, type,
validity code or None) per leaf and emits its own packing, one guarded step per run of
fields sharing a validity (:func:`validity_runs`, :func:`guarded`). The lowering it
walks with (:class:`FieldWalker`) names places in its own language.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from itertools import groupby
from typing import Any, Protocol, TypeVar

from softswitch.core.codebuf import LineBuf
from softswitch.frontend import ast
from softswitch.frontend import types as T

#: (value code, leaf type, validity code or None)
DataField = tuple[str, Any, str | None]


class FieldWalker(Protocol):
    """What :func:`data_fields` needs of a back end's lowering."""

    def expr(self, e: ast.Expr, fn: Any) -> str: ...
    def field(self, base: str, name: str) -> str: ...
    def element(self, base: str, i: int) -> str: ...
    def named(self, fn: Any, t: Any, code: str) -> str: ...


def data_fields(lw: FieldWalker, e: ast.Expr, fn: Any) -> list[DataField]:
    """Every serialized leaf of data argument ``e``, in order."""
    out: list[DataField] = []
    if isinstance(e, ast.ListExpr) and not isinstance(
            T.strip_newtype(e.type), T.StructLikeType):
        for item in e.items:
            out.extend(data_fields(lw, item, fn))
        return out
    _walk(lw, lw.expr(e, fn), e.type, None, out, fn)
    return out


def _walk(lw: FieldWalker, code: str, t: Any, valid: str | None, out: list[DataField],
          fn: Any) -> None:
    t = T.strip_newtype(t)
    if isinstance(t, T.StructLikeType | T.StackType | T.TupleType | T.ListType):
        code = lw.named(fn, t, code)
    if isinstance(t, T.HeaderType):
        for f in t.fields:
            _walk(lw, lw.field(code, f.name), f.type, f"{code}._v", out, fn)
    elif isinstance(t, T.StructType | T.HeaderUnionType):
        for f in t.fields:
            _walk(lw, lw.field(code, f.name), f.type, valid, out, fn)
    elif isinstance(t, T.StackType):
        for i in range(t.size):
            _walk(lw, f"{code}.items[{i}]", t.element, valid, out, fn)
    elif isinstance(t, T.TupleType | T.ListType):
        for i, et in enumerate(t.elements):
            _walk(lw, lw.element(code, i), et, valid, out, fn)
    else:
        out.append((code, t, valid))


Item = TypeVar("Item", bound=tuple[Any, ...])


def validity_runs(items: Sequence[Item]) -> list[tuple[str | None, list[Item]]]:
    """Consecutive items (a back end's flattened fields, validity third) grouped by
    validity: each run is packed under one test of its header's validity."""
    return [(valid, list(run)) for valid, run in groupby(items, key=lambda it: it[2])]


def guarded(buf: LineBuf, valid: str | None) -> AbstractContextManager[None]:
    """Lines emitted inside run only while ``valid`` holds (always, for None)."""
    return nullcontext() if valid is None else buf.if_(valid)
