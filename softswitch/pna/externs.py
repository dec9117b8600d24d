"""PNA's extern table: what each ``pna.p4`` extern call means, and its emission.

:data:`EXTERNS` names every extern a PNA program may call (core.p4's from
:data:`softswitch.core.extern_calls.CORE` included), says in a line what a call does
and points at its interpreter emission; PNA runs on the interpreter only, so no entry
has a C emission. PNA's own calls lower to the NIC runtime ``_RT``
(:class:`softswitch.pna.runtime.PnaRuntime`) or to the extern objects the builder made
(:mod:`softswitch.pna.build`). Each emission returns the value's code, or None after
emitting statements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from softswitch.core import extern_calls as core
from softswitch.core.extern_table import Extern, ExternTable
from softswitch.core.lower import FnCtx, fit
from softswitch.frontend import ast
from softswitch.frontend import types as T

if TYPE_CHECKING:
    from softswitch.core.contracts import PyLowering


def _opt(lw: PyLowering, info: Any, i: int, fn: FnCtx) -> str:
    """An optional argument's code, or ``None``."""
    a = core.arg(info, i)
    return "None" if a is None else lw.expr(a, fn)


def _value_of(lw: PyLowering, e: ast.Call, code: str) -> str:
    return fit(code, e.type) if e.type is not None else code


# ---------------------------------------------------------------- extern functions
def _drop_packet(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return "_RT.drop_packet()"


def _send_to_port(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return f"_RT.send_to_port({lw.expr(info.args[0], fn)})"


def _recirculate(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return "_RT.recirculate()"


def _mirror_packet(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return (f"_RT.mirror_packet({lw.expr(info.args[0], fn)}, "
            f"{lw.expr(info.args[1], fn)})")


def _add_entry(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    name = info.args[0].const if isinstance(info.args[0].const, str) else None
    if name is None:
        raise lw.fail("add_entry: the action name must be a string literal", info.args[0])
    vals = core.field_tuple(lw, info.args[1], fn, unsigned=True)
    profile = lw.expr(info.args[2], fn)
    return f"_RT.add_entry({name!r}, {vals}, {profile})"


def _allocate_flow_id(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return "_RT.allocate_flow_id()"


def _set_entry_expire_time(lw: PyLowering, e: ast.Call, info: Any,
                           fn: FnCtx) -> str | None:
    return f"_RT.set_entry_expire_time({lw.expr(info.args[0], fn)})"


def _restart_expire_timer(lw: PyLowering, e: ast.Call, info: Any,
                          fn: FnCtx) -> str | None:
    return "_RT.restart_expire_timer()"


def _select_by_direction(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    dt = T.strip_newtype(info.args[0].type)
    n2h = dt.members.get("NET_TO_HOST", 0) if isinstance(dt, T.EnumType) else 0
    d = lw.expr(info.args[0], fn)
    a = lw.expr(info.args[1], fn)
    b = lw.expr(info.args[2], fn)
    return f"({a} if {d} == {n2h} else {b})"


# ---------------------------------------------------------------- extern objects
def _counter_count(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = core.receiver(lw, info, fn)
    inc = _opt(lw, info, 1, fn)
    return f"{r}.count({lw.expr(info.args[0], fn)}, _RT.pkt.length if {inc} is None else {inc})"


def _direct_counter_count(lw: PyLowering, e: ast.Call, info: Any,
                          fn: FnCtx) -> str | None:
    return f"_RT.direct_count({_opt(lw, info, 0, fn)})"


def _meter_execute(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = core.receiver(lw, info, fn)
    idx = lw.expr(info.args[0], fn)
    color = _opt(lw, info, 1, fn)
    return f"_meter_color({r}.execute({idx}, _RT.pkt.length), {color})"


def _direct_meter_execute(lw: PyLowering, e: ast.Call, info: Any,
                          fn: FnCtx) -> str | None:
    params = [p.name for p in info.params]
    color = _opt(lw, info, params.index("color"), fn) if "color" in params else "None"
    length = _opt(lw, info, params.index("pkt_len"), fn) if "pkt_len" in params else "None"
    return f"_RT.direct_meter({color}, {length})"


def _meter_dpdk_execute(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    """dpdk/pna.p4's Meter.dpdk_execute(index, [color,] pkt_len)."""
    r = core.receiver(lw, info, fn)
    idx = lw.expr(info.args[0], fn)
    color = lw.expr(info.args[1], fn) if len(info.args) == 3 else "None"
    length = lw.expr(info.args[-1], fn)
    return f"_meter_color({r}.execute({idx}, {length}), {color})"


def _direct_meter_dpdk_execute(lw: PyLowering, e: ast.Call, info: Any,
                               fn: FnCtx) -> str | None:
    """dpdk/pna.p4's DirectMeter.dpdk_execute([color,] pkt_len)."""
    color = lw.expr(info.args[0], fn) if len(info.args) == 2 else "None"
    return f"_RT.direct_meter({color}, {lw.expr(info.args[-1], fn)})"


def _register_read(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = core.receiver(lw, info, fn)
    return f"{r}.read({lw.expr(info.args[0], fn)})"


def _register_write(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = core.receiver(lw, info, fn)
    return f"{r}.write({lw.expr(info.args[0], fn)}, {lw.expr(info.args[1], fn)})"


def _hash_get(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = core.receiver(lw, info, fn)
    if len(info.args) == 1:
        return _value_of(lw, e, f"{r}({core.packed(lw, info.args[0], fn)})")
    base = lw.expr(info.args[0], fn)
    data = core.packed(lw, info.args[1], fn)
    mx = lw.expr(info.args[2], fn)
    return _value_of(lw, e, f"_hash_offset({base}, {r}({data}), {mx})")


def _random_read(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = core.receiver(lw, info, fn)
    return f"_RT.random(*{r})"


def _digest_pack(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = core.receiver(lw, info, fn)
    return f"_RT.digest(0, {r}.name, {core.field_tuple(lw, info.args[0], fn, unsigned=True)})"


def _csum_clear(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return f"{core.receiver(lw, info, fn)}.clear()"


def _csum_data(method: str) -> Any:
    def handler(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
        r = core.receiver(lw, info, fn)
        return f"{r}.{method}({core.packed(lw, info.args[0], fn)})"
    return handler


def _csum_get(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return _value_of(lw, e, f"{core.receiver(lw, info, fn)}.get()")


def _csum_get_state(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return f"{core.receiver(lw, info, fn)}.get_state()"


def _csum_set_state(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return f"{core.receiver(lw, info, fn)}.set_state({lw.expr(info.args[0], fn)})"


_COUNT = "count the packet (its bytes, or the given increment)"
_METER = "the color of this packet (its length, or the given one) after the given color"
_CSUM = "the checksum's state"

#: Every extern a PNA program may call.
EXTERNS: ExternTable = core.CORE.extend(
    "pna",
    functions={
        "drop_packet": Extern("drop the packet at the end of the pipeline", _drop_packet),
        "send_to_port": Extern("send the packet to a port", _send_to_port),
        "recirculate": Extern("send the packet back through the pipeline", _recirculate),
        "mirror_packet": Extern("copy the packet to a mirror session", _mirror_packet),
        "add_entry": Extern("add an entry for the missed key (add-on-miss)", _add_entry),
        "allocate_flow_id": Extern("a new flow id", _allocate_flow_id),
        "set_entry_expire_time": Extern("set the hit entry's expire time profile",
                                        _set_entry_expire_time),
        "restart_expire_timer": Extern("restart the hit entry's expire timer",
                                       _restart_expire_timer),
        "SelectByDirection": Extern("the first value for NET_TO_HOST, else the second",
                                    _select_by_direction),
    },
    methods={
        ("Counter", "count"): Extern(_COUNT + " in a cell", _counter_count),
        ("DirectCounter", "count"): Extern(_COUNT + " in the hit entry", _direct_counter_count),
        ("Meter", "execute"): Extern(_METER, _meter_execute),
        ("DirectMeter", "execute"): Extern(_METER + ", the hit entry's meter",
                                           _direct_meter_execute),
        ("Meter", "dpdk_execute"): Extern(_METER, _meter_dpdk_execute),
        ("DirectMeter", "dpdk_execute"): Extern(_METER + ", the hit entry's meter",
                                                _direct_meter_dpdk_execute),
        ("Register", "read"): Extern("a cell's value", _register_read),
        ("Register", "write"): Extern("set a cell", _register_write),
        ("Hash", "get_hash"): Extern("the hash of the data (base + hash mod max)", _hash_get),
        ("Random", "read"): Extern("a random value in the instance's range", _random_read),
        ("Digest", "pack"): Extern("send the data's fields to the control plane",
                                   _digest_pack),
        ("Checksum", "clear"): Extern("reset " + _CSUM, _csum_clear),
        ("Checksum", "update"): Extern("add the data to " + _CSUM, _csum_data("update")),
        ("Checksum", "get"): Extern(_CSUM + " as a value", _csum_get),
        ("InternetChecksum", "clear"): Extern("reset " + _CSUM, _csum_clear),
        ("InternetChecksum", "add"): Extern("add the data to " + _CSUM, _csum_data("add")),
        ("InternetChecksum", "subtract"): Extern("subtract the data from " + _CSUM,
                                                 _csum_data("subtract")),
        ("InternetChecksum", "get"): Extern(_CSUM + " as a value", _csum_get),
        ("InternetChecksum", "get_state"): Extern(_CSUM + " as 16 bits", _csum_get_state),
        ("InternetChecksum", "set_state"): Extern("set " + _CSUM, _csum_set_state),
    },
)
