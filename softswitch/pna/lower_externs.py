"""Code generation for calls of PNA's extern functions and extern object methods.

The core library's calls (``extract``, ``emit``, ``verify`` …) lower as for v1model
(:mod:`softswitch.core.extern_calls`, whose helpers flatten data arguments and
pick hash functions); PNA's own calls lower to the NIC runtime ``_RT``
(:class:`softswitch.pna.runtime.PnaRuntime`) or to the extern objects the builder
made (:mod:`softswitch.pna.build`). Each handler returns the value's code, or None
after emitting statements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from softswitch.core import extern_calls as core
from softswitch.core.lower import FnCtx, fit
from softswitch.frontend import ast
from softswitch.frontend import types as T

if TYPE_CHECKING:
    from softswitch.core.blocks import BlockLowerer


def _opt(lw: BlockLowerer, info: Any, i: int, fn: FnCtx) -> str:
    """An optional argument's code, or ``None``."""
    a = core.arg(info, i)
    return "None" if a is None else lw.expr(a, fn)


def _value_of(lw: BlockLowerer, e: ast.Call, code: str) -> str:
    return fit(code, e.type) if e.type is not None else code


# ---------------------------------------------------------------- extern functions
def _drop_packet(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return "_RT.drop_packet()"


def _send_to_port(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return f"_RT.send_to_port({lw.expr(info.args[0], fn)})"


def _recirculate(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return "_RT.recirculate()"


def _mirror_packet(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return (f"_RT.mirror_packet({lw.expr(info.args[0], fn)}, "
            f"{lw.expr(info.args[1], fn)})")


def _add_entry(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    name = info.args[0].const if isinstance(info.args[0].const, str) else None
    if name is None:
        raise lw.fail("add_entry: the action name must be a string literal", info.args[0])
    items = core.flatten(lw, info.args[1], fn)
    vals = ", ".join(f"(({c}) & {(1 << w) - 1})" if w > 0 else c for c, w, _ in items)
    profile = lw.expr(info.args[2], fn)
    return f"_RT.add_entry({name!r}, ({vals}{',' if len(items) == 1 else ''}), {profile})"


def _allocate_flow_id(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return "_RT.allocate_flow_id()"


def _set_entry_expire_time(lw: BlockLowerer, e: ast.Call, info: Any,
                           fn: FnCtx) -> str | None:
    return f"_RT.set_entry_expire_time({lw.expr(info.args[0], fn)})"


def _restart_expire_timer(lw: BlockLowerer, e: ast.Call, info: Any,
                          fn: FnCtx) -> str | None:
    return "_RT.restart_expire_timer()"


def _select_by_direction(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    dt = T.strip_newtype(info.args[0].type)
    n2h = dt.members.get("NET_TO_HOST", 0) if isinstance(dt, T.EnumType) else 0
    d = lw.expr(info.args[0], fn)
    a = lw.expr(info.args[1], fn)
    b = lw.expr(info.args[2], fn)
    return f"({a} if {d} == {n2h} else {b})"


# ---------------------------------------------------------------- extern objects
def _counter_count(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = core.receiver(lw, info, fn)
    inc = _opt(lw, info, 1, fn)
    return f"{r}.count({lw.expr(info.args[0], fn)}, _RT.pkt.length if {inc} is None else {inc})"


def _direct_counter_count(lw: BlockLowerer, e: ast.Call, info: Any,
                          fn: FnCtx) -> str | None:
    return f"_RT.direct_count({_opt(lw, info, 0, fn)})"


def _meter_execute(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = core.receiver(lw, info, fn)
    idx = lw.expr(info.args[0], fn)
    color = _opt(lw, info, 1, fn)
    return f"_meter_color({r}.execute({idx}, _RT.pkt.length), {color})"


def _direct_meter_execute(lw: BlockLowerer, e: ast.Call, info: Any,
                          fn: FnCtx) -> str | None:
    params = [p.name for p in info.params]
    color = _opt(lw, info, params.index("color"), fn) if "color" in params else "None"
    length = _opt(lw, info, params.index("pkt_len"), fn) if "pkt_len" in params else "None"
    return f"_RT.direct_meter({color}, {length})"


def _meter_dpdk_execute(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    """dpdk/pna.p4's Meter.dpdk_execute(index, [color,] pkt_len)."""
    r = core.receiver(lw, info, fn)
    idx = lw.expr(info.args[0], fn)
    color = lw.expr(info.args[1], fn) if len(info.args) == 3 else "None"
    length = lw.expr(info.args[-1], fn)
    return f"_meter_color({r}.execute({idx}, {length}), {color})"


def _direct_meter_dpdk_execute(lw: BlockLowerer, e: ast.Call, info: Any,
                               fn: FnCtx) -> str | None:
    """dpdk/pna.p4's DirectMeter.dpdk_execute([color,] pkt_len)."""
    color = lw.expr(info.args[0], fn) if len(info.args) == 2 else "None"
    return f"_RT.direct_meter({color}, {lw.expr(info.args[-1], fn)})"


def _register_read(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = core.receiver(lw, info, fn)
    return f"{r}.read({lw.expr(info.args[0], fn)})"


def _register_write(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = core.receiver(lw, info, fn)
    return f"{r}.write({lw.expr(info.args[0], fn)}, {lw.expr(info.args[1], fn)})"


def _hash_get(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = core.receiver(lw, info, fn)
    if len(info.args) == 1:
        return _value_of(lw, e, f"{r}({core.packed(lw, info.args[0], fn)})")
    base = lw.expr(info.args[0], fn)
    data = core.packed(lw, info.args[1], fn)
    mx = lw.expr(info.args[2], fn)
    return _value_of(lw, e, f"_hash_offset({base}, {r}({data}), {mx})")


def _random_read(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = core.receiver(lw, info, fn)
    return f"_RT.random(*{r})"


def _digest_pack(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = core.receiver(lw, info, fn)
    items = core.flatten(lw, info.args[0], fn)
    vals = ", ".join(f"(({c}) & {(1 << w) - 1})" if w > 0 else c for c, w, _ in items)
    return f"_RT.digest(0, {r}.name, ({vals}{',' if len(items) == 1 else ''}))"


def _csum_clear(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return f"{core.receiver(lw, info, fn)}.clear()"


def _csum_data(method: str) -> Any:
    def handler(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
        r = core.receiver(lw, info, fn)
        return f"{r}.{method}({core.packed(lw, info.args[0], fn)})"
    return handler


def _csum_get(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return _value_of(lw, e, f"{core.receiver(lw, info, fn)}.get()")


def _csum_get_state(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return f"{core.receiver(lw, info, fn)}.get_state()"


def _csum_set_state(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return f"{core.receiver(lw, info, fn)}.set_state({lw.expr(info.args[0], fn)})"


FUNCTIONS: dict[str, Any] = {
    **core.CORE_FUNCTIONS,
    "log_msg": core.log_msg,
    "drop_packet": _drop_packet,
    "send_to_port": _send_to_port,
    "recirculate": _recirculate,
    "mirror_packet": _mirror_packet,
    "add_entry": _add_entry,
    "allocate_flow_id": _allocate_flow_id,
    "set_entry_expire_time": _set_entry_expire_time,
    "restart_expire_timer": _restart_expire_timer,
    "SelectByDirection": _select_by_direction,
}

METHODS: dict[tuple[str, str], Any] = {
    **core.CORE_METHODS,
    ("Counter", "count"): _counter_count,
    ("DirectCounter", "count"): _direct_counter_count,
    ("Meter", "execute"): _meter_execute,
    ("DirectMeter", "execute"): _direct_meter_execute,
    ("Meter", "dpdk_execute"): _meter_dpdk_execute,
    ("DirectMeter", "dpdk_execute"): _direct_meter_dpdk_execute,
    ("Register", "read"): _register_read,
    ("Register", "write"): _register_write,
    ("Hash", "get_hash"): _hash_get,
    ("Random", "read"): _random_read,
    ("Digest", "pack"): _digest_pack,
    ("Checksum", "clear"): _csum_clear,
    ("Checksum", "update"): _csum_data("update"),
    ("Checksum", "get"): _csum_get,
    ("InternetChecksum", "clear"): _csum_clear,
    ("InternetChecksum", "add"): _csum_data("add"),
    ("InternetChecksum", "subtract"): _csum_data("subtract"),
    ("InternetChecksum", "get"): _csum_get,
    ("InternetChecksum", "get_state"): _csum_get_state,
    ("InternetChecksum", "set_state"): _csum_set_state,
}
