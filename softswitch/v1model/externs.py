"""v1model's extern table: what each ``v1model.p4`` extern call means, and its emissions.

One place per extern: the table at the end names every extern a v1model program may
call (core.p4's from :data:`softswitch.core.extern_calls.CORE` included), says in a line
what a call does, and points at its two emissions, written side by side above it:
``_py_*`` is the interpreter's Python (the oracle), ``_c_*`` the fast path's C; where
the back ends' shared hooks spell a call alike, one emission serves both.
Both back ends read :data:`EXTERNS` through the program builder. The forwarding calls
(``mark_to_drop``, ``clone``, ``resubmit``, ``recirculate``, ``truncate``) set the
packet's metadata; ``hash``, the checksums and ``digest`` flatten their data argument at
generation time into the fields BMv2 serializes (fields of invalid headers skipped at
run time, as BMv2's field-list builder does); ``random``, meters, digests and
``log_msg`` keep their state in Python, so the C calls back into it and results agree.
"""

from __future__ import annotations

from typing import Any

from softswitch.core import extern_calls as pyx
from softswitch.core.contracts import Lowering, PyLowering
from softswitch.core.extern_calls import arg, enum_name
from softswitch.core.extern_table import Extern, ExternTable
from softswitch.core.lower import FnCtx as PyFn
from softswitch.core.lower import fit, scalar_bits
from softswitch.fastpath import cexterns as cx
from softswitch.fastpath import ctypes_
from softswitch.fastpath.ccontracts import CLowering
from softswitch.fastpath.cexpr import CFnCtx as CFn
from softswitch.frontend import ast
from softswitch.frontend.cpnames import digest_data_type


# ---------------------------------------------------------------- functions
def _py_mark_to_drop(lw: PyLowering, e: ast.Call, info: Any, fn: PyFn) -> str | None:
    sm = lw.expr(info.args[0], fn)
    fn.buf.emit(f"{sm}.f_egress_spec = 511")
    fn.buf.emit(f"{sm}.f_mcast_grp = 0")
    return None


def _c_mark_to_drop(lw: CLowering, e: ast.Call, info: Any, fn: CFn) -> str | None:
    sm = lw.expr(info.args[0], fn)
    fn.buf.emit(f"{sm}.f_egress_spec = 511;")
    fn.buf.emit(f"{sm}.f_mcast_grp = 0;")
    return None


def _py_hash(lw: PyLowering, e: ast.Call, info: Any, fn: PyFn) -> str | None:
    algo = enum_name(arg(info, 1))
    base = lw.expr(info.args[2], fn)
    data = pyx.packed(lw, info.args[3], fn)
    mx = lw.expr(info.args[4], fn)
    h = pyx.hash_call(lw, algo, data, e)
    pyx.out_assign(lw, info.args[0], f"_hash_offset({base}, {h}, {mx})", fn)
    return None


def _c_hash(lw: CLowering, e: ast.Call, info: Any, fn: CFn) -> str | None:
    algo = enum_name(arg(info, 1))
    base = lw.expr(info.args[2], fn)
    buf, nbytes, _ = cx.packed(lw, info.args[3], fn)
    mx = lw.expr(info.args[4], fn)
    h = cx.hash_value(lw, algo, buf, nbytes, e, fn)
    bt = lw.tmp("hb")
    mt = lw.tmp("hm")
    fn.buf.emit(f"i128 {bt} = (i128)({base});")
    fn.buf.emit(f"i128 {mt} = (i128)({mx});")
    code = f"({mt} == 0 ? {bt} : {bt} + rt_fmod((i128)({h}), {mt}))"
    pyx.out_assign(lw, info.args[0], code, fn)
    return None


def _py_random(lw: PyLowering, e: ast.Call, info: Any, fn: PyFn) -> str | None:
    lo = lw.expr(info.args[1], fn)
    hi = lw.expr(info.args[2], fn)
    pyx.out_assign(lw, info.args[0], f"_RT.random({lo}, {hi})", fn)
    return None


def _c_random(lw: CLowering, e: ast.Call, info: Any, fn: CFn) -> str | None:
    lo = lw.expr(info.args[1], fn)
    hi = lw.expr(info.args[2], fn)
    r = lw.tmp("rnd")
    fn.buf.emit(f"i128 {r} = 0;")
    fn.buf.emit(f"st = cb_random(c, (i128)({lo}), (i128)({hi}), &{r});")
    lw.check(fn)
    pyx.out_assign(lw, info.args[0], r, fn)
    return None


def _py_digest(lw: PyLowering, e: ast.Call, info: Any, fn: PyFn) -> str | None:
    recv = lw.expr(info.args[0], fn)
    vals = pyx.field_tuple(lw, info.args[1], fn, unsigned=True)
    # named as in P4Info, so digests the switch produces match what clients were told
    tname = lw.pb.elab.digest_names.get(id(e)) or str(digest_data_type(e))
    return f"_RT.digest({recv}, {tname!r}, {vals})"


def _c_digest(lw: CLowering, e: ast.Call, info: Any, fn: CFn) -> str | None:
    recv = lw.expr(info.args[0], fn)
    data = info.args[1]
    items = cx.flatten(lw, data, fn)
    vals = []
    for code, w, _, _t in items:
        if w < 0 or ctypes_.is_wide(_t):
            raise lw.fail("varbit or >128-bit values in a digest are not supported by the C "
                          "back end", e)
        if w > 0:
            vals.append(f"u128_to_py(((u128)({code})) & "
                        f"{'(~(u128)0)' if w >= 128 else f'((((u128)1) << {w}) - 1)'})")
        else:
            vals.append(cx.py_value(lw, code, _t))
    tup = cx.py_tuple(lw, vals, fn)
    # named as the interpreter and P4Info name it (cpnames.digest_names)
    tname = lw.prog.obj(lw.pb.elab.digest_names.get(id(e)) or str(digest_data_type(e)))
    rv = lw.tmp("o")
    fn.buf.emit(f"PyObject *{rv} = {cx.py_value(lw, recv, info.args[0].type)};")
    fn.buf.emit(f"if (!{rv}) {{ Py_DECREF({tup}); return ST_ABORT; }}")
    fn.buf.emit(f"{{ PyObject *_r = PyObject_CallMethod(PyTuple_GET_ITEM(c->objs, 0), "
                f"\"digest\", \"NON\", {rv}, PyTuple_GET_ITEM(c->objs, {tname}), {tup}); "
                f"if (!_r) return ST_ABORT; Py_DECREF(_r); }}")
    return None


def _py_clone(lw: PyLowering, e: ast.Call, info: Any, fn: PyFn) -> str | None:
    kind = enum_name(arg(info, 0))
    session = lw.expr(info.args[1], fn)
    fl = "None"
    if info.decl.name == "clone_preserving_field_list":
        fl = lw.expr(info.args[2], fn)
    return f"_RT.clone({kind!r}, {session}, {fl})"


def _c_clone(lw: CLowering, e: ast.Call, info: Any, fn: CFn) -> str | None:
    kind = enum_name(arg(info, 0))
    session = lw.expr(info.args[1], fn)
    has_fl = info.decl.name == "clone_preserving_field_list"
    fl = lw.expr(info.args[2], fn) if has_fl else "0"
    fn.buf.emit(f"c->pkt.clone_session = (uint64_t)({session});")
    fn.buf.emit(f"c->pkt.clone_type = {2 if kind == 'E2E' else 1};")
    fn.buf.emit(f"c->pkt.has_clone_fl = {1 if has_fl else 0};")
    fn.buf.emit(f"c->pkt.clone_fl = (int64_t)({fl});")
    return None


def _py_resubmit(lw: PyLowering, e: ast.Call, info: Any, fn: PyFn) -> str | None:
    fl = "-1"
    if info.decl.name.endswith("preserving_field_list"):
        fl = lw.expr(info.args[0], fn)
    what = "resubmit" if info.decl.name.startswith("resubmit") else "recirculate"
    return f"_RT.{what}({fl})"


def _c_resubmit(lw: CLowering, e: ast.Call, info: Any, fn: CFn) -> str | None:
    fl = "-1"
    if info.decl.name.endswith("preserving_field_list"):
        fl = f"(int64_t)({lw.expr(info.args[0], fn)})"
    what = "resubmit" if info.decl.name.startswith("resubmit") else "recirc"
    fn.buf.emit(f"c->pkt.has_{what} = 1;")
    fn.buf.emit(f"c->pkt.{what}_fl = {fl};")
    return None


def _py_truncate(lw: PyLowering, e: ast.Call, info: Any, fn: PyFn) -> str | None:
    return f"_RT.truncate({lw.expr(info.args[0], fn)})"


def _c_truncate(lw: CLowering, e: ast.Call, info: Any, fn: CFn) -> str | None:
    n = lw.expr(info.args[0], fn)
    fn.buf.emit("c->pkt.has_trunc = 1;")
    fn.buf.emit(f"c->pkt.trunc = (uint64_t)({n});")
    return None


def _py_checksum(lw: PyLowering, e: ast.Call, info: Any, fn: PyFn) -> str | None:
    name = info.decl.name
    cond = lw.expr(info.args[0], fn)
    algo = enum_name(arg(info, 3))
    target = info.args[2]
    b = scalar_bits(target.type)
    mask = (1 << b[0]) - 1 if b else 0xFFFF
    fn.buf.emit(f"if {cond}:")
    with fn.buf.block():
        data = pyx.packed(lw, info.args[1], fn)
        if name.endswith("_with_payload"):
            data = f"({data} + _RT.payload)"
        h = f"({pyx.hash_call(lw, algo, data, e)} & {mask})"
        if name.startswith("verify"):
            cur = lw.expr(target, fn)
            fn.buf.emit(f"if {h} != ({cur} & {mask}):")
            with fn.buf.block():
                fn.buf.emit("_RT.pkt.checksum_error = 1")
        else:
            lw.assign(target, fit(h, target.type), fn)
    return None


def _c_checksum(lw: CLowering, e: ast.Call, info: Any, fn: CFn) -> str | None:
    name = info.decl.name
    cond = lw.expr(info.args[0], fn)
    algo = enum_name(arg(info, 3))
    target = info.args[2]
    b = ctypes_.scalar_bits(target.type)
    mask = (1 << b[0]) - 1 if b else 0xFFFF
    if mask >= (1 << 64):
        raise lw.fail("checksums wider than 64 bits are not supported by the C back end", e)
    with fn.buf.block(f"if ({cond})"):
        buf, nbytes, _ = cx.packed(lw, info.args[1], fn)
        if name.endswith("_with_payload"):
            nb = lw.tmp("nb")
            sb = lw.tmp("sb")
            fn.buf.emit(f"size_t {nb} = {nbytes};")
            fn.buf.emit(f"uint8_t *{sb} = rt_scratch(c, {nb} + c->payload_len + PAD);")
            fn.buf.emit(f"if (!{sb}) {{ PyErr_NoMemory(); return ST_ABORT; }}")
            fn.buf.emit(f"memcpy({sb}, {buf}, {nb});")
            fn.buf.emit(f"if (c->payload_len) memcpy({sb} + {nb}, c->payload, c->payload_len);")
            buf, nbytes = sb, f"({nb} + c->payload_len)"
        h = f"((uint64_t)({cx.hash_value(lw, algo, buf, nbytes, e, fn)}) & 0x{mask:x}ULL)"
        if name.startswith("verify"):
            cur = lw.expr(target, fn)
            with fn.buf.block(f"if ({h} != ((uint64_t)({cur}) & 0x{mask:x}ULL))"):
                fn.buf.emit("c->pkt.checksum_error = 1;")
        else:
            lw.assign(target, ctypes_.fit(h, target.type), fn)
    return None


def _py_assert(lw: PyLowering, e: ast.Call, info: Any, fn: PyFn) -> str | None:
    cond = lw.expr(info.args[0], fn)
    where = lw.const_obj(e.loc, "_loc")
    fn.buf.emit(f"if not ({cond}):")
    with fn.buf.block():
        fn.buf.emit(f"_RT.abort({info.decl.name!r}, {where})")
    return None


def _c_assert(lw: CLowering, e: ast.Call, info: Any, fn: CFn) -> str | None:
    cond = lw.expr(info.args[0], fn)
    what = lw.prog.obj(info.decl.name)
    where = lw.prog.obj(e.loc)
    with fn.buf.block(f"if (!({cond}))"):
        fn.buf.emit(f"return cb_abort(c, {what}, {where}, \"abort\");")
    return None


# ---------------------------------------------------------------- stateful externs


def _py_reg_read(lw: PyLowering, e: ast.Call, info: Any, fn: PyFn) -> str | None:
    r = pyx.receiver(lw, info, fn)
    idx = lw.expr(info.args[1], fn)
    pyx.out_assign(lw, info.args[0], f"{r}.read({idx})", fn)
    return None


def _c_reg_read(lw: CLowering, e: ast.Call, info: Any, fn: CFn) -> str | None:
    r = cx.extern_ref(lw, info, fn, "register", e)
    idx = lw.expr(info.args[1], fn)
    size, width, signed = r.obj.size, r.obj.width, r.obj.signed
    cell = f"c->registers[{r.index}].cells[(size_t)({idx})]"
    val = f"sext128({cell}, {width})" if signed else cell
    code = f"({cx.index_ok(lw, idx, info.args[1].type, size)} ? (i128)({val}) : (i128)0)"
    pyx.out_assign(lw, info.args[0], code, fn)
    return None


def _py_reg_write(lw: PyLowering, e: ast.Call, info: Any, fn: PyFn) -> str | None:
    r = pyx.receiver(lw, info, fn)
    return f"{r}.write({lw.expr(info.args[0], fn)}, {lw.expr(info.args[1], fn)})"


def _c_reg_write(lw: CLowering, e: ast.Call, info: Any, fn: CFn) -> str | None:
    r = cx.extern_ref(lw, info, fn, "register", e)
    idx = lw.expr(info.args[0], fn)
    val = lw.expr(info.args[1], fn)
    size, width = r.obj.size, r.obj.width
    m = "(~(u128)0)" if width >= 128 else f"((((u128)1) << {width}) - 1)"
    with fn.buf.block(f"if ({cx.index_ok(lw, idx, info.args[0].type, size)})"):
        fn.buf.emit(f"c->registers[{r.index}].cells[(size_t)({idx})] = (u128)({val}) & {m};")
    return None


def _py_count(lw: PyLowering, e: ast.Call, info: Any, fn: PyFn) -> str | None:
    r = pyx.receiver(lw, info, fn)
    return f"{r}.count({lw.expr(info.args[0], fn)}, _RT.pkt.length)"


def _c_count(lw: CLowering, e: ast.Call, info: Any, fn: CFn) -> str | None:
    r = cx.extern_ref(lw, info, fn, "counter", e)
    idx = lw.expr(info.args[0], fn)
    with fn.buf.block(f"if ({cx.index_ok(lw, idx, info.args[0].type, r.obj.size)})"):
        fn.buf.emit(f"c->counters[{r.index}].pk[(size_t)({idx})] += 1;")
        fn.buf.emit(f"c->counters[{r.index}].by[(size_t)({idx})] += c->pkt.length;")
    return None


def _direct_count(lw: Lowering, e: ast.Call, info: Any, fn: Any) -> str | None:
    return None  # BMv2 counts direct counters on every hit of their table (both back ends)


def _py_execute_meter(lw: PyLowering, e: ast.Call, info: Any, fn: PyFn) -> str | None:
    r = pyx.receiver(lw, info, fn)
    idx = lw.expr(info.args[0], fn)
    pyx.out_assign(lw, info.args[1], f"{r}.execute({idx}, _RT.pkt.length)", fn)
    return None


def _c_execute_meter(lw: CLowering, e: ast.Call, info: Any, fn: CFn) -> str | None:
    r = cx.extern_ref(lw, info, fn, "meter", e)
    idx = lw.expr(info.args[0], fn)
    res = lw.tmp("col")
    iv = lw.tmp("o")
    fn.buf.emit(f"u128 {res} = 0;")
    fn.buf.emit(f"PyObject *{iv} = {cx.py_value(lw, idx, info.args[0].type)};")
    fn.buf.emit(f"if (!{iv}) return ST_ABORT;")
    fn.buf.emit(f"st = cb_int(PyObject_CallMethod(PyTuple_GET_ITEM(c->objs, {r.index}), "
                f"\"execute\", \"NK\", {iv}, (unsigned long long)c->pkt.length), &{res});")
    lw.check(fn)
    pyx.out_assign(lw, info.args[1], res, fn)
    return None


def _direct_meter_read(lw: Lowering, e: ast.Call, info: Any, fn: Any) -> str | None:
    """Both back ends: the color the hit of the meter's table left (0 without one)."""
    color = lw.direct_meter_color(getattr(info.receiver, "decl", None))
    pyx.out_assign(lw, info.args[0], color or "0", fn)
    return None


def _py_checksum16_get(lw: PyLowering, e: ast.Call, info: Any, fn: PyFn) -> str | None:
    return pyx.hash_call(lw, "csum16", pyx.packed(lw, info.args[0], fn), e)


def _c_checksum16_get(lw: CLowering, e: ast.Call, info: Any, fn: CFn) -> str | None:
    buf, nbytes, _ = cx.packed(lw, info.args[0], fn)
    return f"rt_hash(H_CSUM16, {buf}, {nbytes})"



_CLONE = "copy the packet to a clone session at the end of this pipeline"
_RESUBMIT = "send the packet back through the ingress parser after this pipeline"
_RECIRCULATE = "send the deparsed packet back to ingress"
_CHECKSUM = "compute a checksum over the data; compare it with, or write it to, a field"
_ASSERT = "stop the switch with an error when the condition is false"

_clone = Extern(_CLONE, _py_clone, _c_clone)
_resubmit = Extern(_RESUBMIT, _py_resubmit, _c_resubmit)
_recirculate = Extern(_RECIRCULATE, _py_resubmit, _c_resubmit)
_checksum = Extern(_CHECKSUM, _py_checksum, _c_checksum)
_assert = Extern(_ASSERT, _py_assert, _c_assert)

#: Every extern a v1model program may call.
EXTERNS: ExternTable = pyx.CORE.with_c(cx.CORE_FUNCTIONS, cx.CORE_METHODS).extend(
    "v1model",
    functions={
        "mark_to_drop": Extern("drop the packet: egress_spec 511, no multicast group",
                               _py_mark_to_drop, _c_mark_to_drop),
        "hash": Extern("base + hash(data) mod max into the result (base when max is 0)",
                       _py_hash, _c_hash),
        "random": Extern("a random value in [lo, hi] into the result", _py_random, _c_random),
        "digest": Extern("send the data's fields to the control plane", _py_digest,
                         _c_digest),
        "clone": _clone,
        "clone3": _clone,
        "clone_preserving_field_list": _clone,
        "resubmit": _resubmit,
        "resubmit_preserving_field_list": _resubmit,
        "recirculate": _recirculate,
        "recirculate_preserving_field_list": _recirculate,
        "truncate": Extern("send at most n bytes of the packet", _py_truncate, _c_truncate),
        "verify_checksum": _checksum,
        "update_checksum": _checksum,
        "verify_checksum_with_payload": _checksum,
        "update_checksum_with_payload": _checksum,
        "assert": _assert,
        "assume": _assert,
    },
    methods={
        ("register", "read"): Extern("a cell's value into the result (0 out of range)",
                                     _py_reg_read, _c_reg_read),
        ("register", "write"): Extern("set a cell (nothing out of range)", _py_reg_write,
                                      _c_reg_write),
        ("counter", "count"): Extern("count the packet and its bytes in a cell", _py_count,
                                     _c_count),
        ("direct_counter", "count"): Extern(
            "nothing: BMv2 counts direct counters on every hit of their table",
            _direct_count, _direct_count),
        ("meter", "execute_meter"): Extern("the cell's color for this packet into the result",
                                           _py_execute_meter, _c_execute_meter),
        ("direct_meter", "read"): Extern("the color the table's hit gave into the result",
                                         _direct_meter_read, _direct_meter_read),
        ("Checksum16", "get"): Extern("the ones' complement checksum of the data",
                                      _py_checksum16_get, _c_checksum16_get),
    },
)
