"""Code generation for calls of v1model's externs (``v1model.p4``).

The dispatcher, the argument helpers and core.p4's externs live in
:mod:`softswitch.core.extern_calls`; these are v1model's own: the forwarding calls
(``mark_to_drop``, ``clone``, ``resubmit``, ``recirculate``, ``truncate``), ``hash``,
``random``, ``digest``, the checksum functions, ``assert``/``assume`` and the stateful
externs (``register``, ``counter``, ``meter`` and their direct forms, ``Checksum16``).
Data arguments of ``hash``, checksums and ``digest`` are flattened at compile time
into the fields BMv2 would serialize (fields of invalid headers skipped, as BMv2's
field-list builder does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from softswitch.core.extern_calls import (
    CORE_FUNCTIONS,
    CORE_METHODS,
    Handler,
    arg,
    enum_name,
    flatten,
    hash_call,
    log_msg,
    out_assign,
    packed,
    receiver,
)
from softswitch.core.lower import FnCtx, fit, scalar_bits
from softswitch.frontend import ast
from softswitch.frontend.cpnames import digest_data_type

if TYPE_CHECKING:
    from softswitch.core.blocks import BlockLowerer


# ---------------------------------------------------------------- functions
def _mark_to_drop(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    sm = lw.expr(info.args[0], fn)
    fn.buf.emit(f"{sm}.f_egress_spec = 511")
    fn.buf.emit(f"{sm}.f_mcast_grp = 0")
    return None


def _hash(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    algo = enum_name(arg(info, 1))
    base = lw.expr(info.args[2], fn)
    data = packed(lw, info.args[3], fn)
    mx = lw.expr(info.args[4], fn)
    h = hash_call(lw, algo, data, e)
    out_assign(lw, info.args[0], f"_hash_offset({base}, {h}, {mx})", fn)
    return None


def _random(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    lo = lw.expr(info.args[1], fn)
    hi = lw.expr(info.args[2], fn)
    out_assign(lw, info.args[0], f"_RT.random({lo}, {hi})", fn)
    return None


def _digest(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    recv = lw.expr(info.args[0], fn)
    data = info.args[1]
    items = flatten(lw, data, fn)
    # Digest data goes to the control plane as unsigned bit strings.
    vals = ", ".join(f"(({c}) & {(1 << w) - 1})" if w > 0 else c for c, w, _ in items)
    # named as in P4Info, so digests the switch produces match what clients were told
    tname = lw.pb.elab.digest_names.get(id(e)) or str(digest_data_type(e))
    return f"_RT.digest({recv}, {tname!r}, ({vals}{',' if len(items) == 1 else ''}))"


def _clone(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    kind = enum_name(arg(info, 0))
    session = lw.expr(info.args[1], fn)
    fl = "None"
    if info.decl.name == "clone_preserving_field_list":
        fl = lw.expr(info.args[2], fn)
    return f"_RT.clone({kind!r}, {session}, {fl})"


def _resubmit(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    fl = "-1"
    if info.decl.name.endswith("preserving_field_list"):
        fl = lw.expr(info.args[0], fn)
    what = "resubmit" if info.decl.name.startswith("resubmit") else "recirculate"
    return f"_RT.{what}({fl})"


def _truncate(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return f"_RT.truncate({lw.expr(info.args[0], fn)})"


def _checksum(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    name = info.decl.name
    cond = lw.expr(info.args[0], fn)
    algo = enum_name(arg(info, 3))
    target = info.args[2]
    b = scalar_bits(target.type)
    mask = (1 << b[0]) - 1 if b else 0xFFFF
    fn.buf.emit(f"if {cond}:")
    with fn.buf.block():
        data = packed(lw, info.args[1], fn)
        if name.endswith("_with_payload"):
            data = f"({data} + _RT.payload)"
        h = f"({hash_call(lw, algo, data, e)} & {mask})"
        if name.startswith("verify"):
            cur = lw.expr(target, fn)
            fn.buf.emit(f"if {h} != ({cur} & {mask}):")
            with fn.buf.block():
                fn.buf.emit("_RT.pkt.checksum_error = 1")
        else:
            lw.assign(target, fit(h, target.type), fn)
    return None


def _assert(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    cond = lw.expr(info.args[0], fn)
    where = lw.const_obj(e.loc, "_loc")
    fn.buf.emit(f"if not ({cond}):")
    with fn.buf.block():
        fn.buf.emit(f"_RT.abort({info.decl.name!r}, {where})")
    return None


# ---------------------------------------------------------------- stateful externs
def _reg_read(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = receiver(lw, info, fn)
    idx = lw.expr(info.args[1], fn)
    out_assign(lw, info.args[0], f"{r}.read({idx})", fn)
    return None


def _reg_write(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = receiver(lw, info, fn)
    return f"{r}.write({lw.expr(info.args[0], fn)}, {lw.expr(info.args[1], fn)})"


def _count(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = receiver(lw, info, fn)
    return f"{r}.count({lw.expr(info.args[0], fn)}, _RT.pkt.length)"


def _direct_count(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return None  # BMv2 counts direct counters on every hit of their table


def _execute_meter(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = receiver(lw, info, fn)
    idx = lw.expr(info.args[0], fn)
    out_assign(lw, info.args[1], f"{r}.execute({idx}, _RT.pkt.length)", fn)
    return None


def _direct_meter_read(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    decl = getattr(info.receiver, "decl", None)
    table = lw.direct_meter_table.get(id(decl))
    code = f"{table}.color" if table is not None else "0"
    out_assign(lw, info.args[0], code, fn)
    return None


def _checksum16_get(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return hash_call(lw, "csum16", packed(lw, info.args[0], fn), e)


FUNCTIONS: dict[str, Handler] = {
    **CORE_FUNCTIONS,
    "mark_to_drop": _mark_to_drop,
    "hash": _hash,
    "random": _random,
    "digest": _digest,
    "clone": _clone,
    "clone3": _clone,
    "clone_preserving_field_list": _clone,
    "resubmit": _resubmit,
    "resubmit_preserving_field_list": _resubmit,
    "recirculate": _resubmit,
    "recirculate_preserving_field_list": _resubmit,
    "truncate": _truncate,
    "verify_checksum": _checksum,
    "update_checksum": _checksum,
    "verify_checksum_with_payload": _checksum,
    "update_checksum_with_payload": _checksum,
    "assert": _assert,
    "assume": _assert,
    "log_msg": log_msg,
}

METHODS: dict[tuple[str, str], Handler] = {
    **CORE_METHODS,
    ("register", "read"): _reg_read,
    ("register", "write"): _reg_write,
    ("counter", "count"): _count,
    ("direct_counter", "count"): _direct_count,
    ("meter", "execute_meter"): _execute_meter,
    ("direct_meter", "read"): _direct_meter_read,
    ("Checksum16", "get"): _checksum16_get,
}
