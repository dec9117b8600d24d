"""Values between BMv2's Thrift wire and softswitch's switch control.

BMv2 sends and expects big-endian byte strings (a key field's value in all its bytes, an
action parameter given back without its leading zero bytes), match parameters by kind
(``BmMatchParam``), priorities where the lower wins and ``-1`` for none. These functions
turn them into :class:`~softswitch.core.control.KeyMatch` lists, action arguments and
SwitchControl priorities, and table entries back into ``BmMtEntry``.
"""

from __future__ import annotations

from typing import Any

from bm_runtime.standard import ttypes as std

from softswitch.core.control import (
    BMV2_PRIORITY_BASE,
    EntryView,
    KeyInfo,
    KeyMatch,
    TableInfo,
    bmv2_match_type,
    from_bmv2_priority,
)
from softswitch.diagnostics import P4Error

P = std.BmMatchParamType


def to_int(data: bytes) -> int:
    return int.from_bytes(data, "big")


def key_bytes(value: int, width: int) -> bytes:
    """A key field's value as BMv2 gives it: all the field's bytes."""
    return value.to_bytes(max((width + 7) // 8, 1), "big")


def data_bytes(value: int) -> bytes:
    """An action parameter as BMv2 gives it back: its bytes less the leading zero ones."""
    return value.to_bytes(max((value.bit_length() + 7) // 8, 1), "big")


def priority(table: TableInfo, options: Any) -> int | None:
    """The SwitchControl priority of BMv2 entry options; None for a table whose entries
    have none (BMv2 ignores the priority the CLI sends for those: 0)."""
    prio = getattr(options, "priority", None)
    if prio is None or prio < 0 or bmv2_match_type(table) not in ("ternary", "range"):
        return None
    return from_bmv2_priority(prio)


def keys_of(table: TableInfo, params: list[Any]) -> list[KeyMatch]:
    """A table's key from BMv2 match parameters, in key order."""
    if len(params) != len(table.keys):
        raise P4Error(f"table {table.name} has {len(table.keys)} key field(s), "
                      f"{len(params)} given")
    return [key_of(k, p) for k, p in zip(table.keys, params, strict=True)]


def key_of(key: KeyInfo, p: Any) -> KeyMatch:
    if p.type == P.EXACT:
        return KeyMatch(key.name, key.match_kind, to_int(p.exact.key))
    if p.type == P.LPM:
        return KeyMatch(key.name, "lpm", to_int(p.lpm.key), prefix_len=p.lpm.prefix_length)
    if p.type == P.TERNARY:
        value, mask = to_int(p.ternary.key), to_int(p.ternary.mask)
        if key.match_kind == "optional":
            return KeyMatch(key.name, "optional", value, wildcard=mask == 0)
        return KeyMatch(key.name, "ternary", value, mask=mask)
    if p.type == P.RANGE:
        return KeyMatch(key.name, "range", to_int(p.range.start), high=to_int(p.range.end_))
    raise P4Error(f"key {key.name}: match parameter type {p.type} is not supported")


def params_of(table: TableInfo, keys: list[KeyMatch]) -> list[Any]:
    """A key as BMv2 gives it back (what two keys are compared on)."""
    return [param_of(k, m) for k, m in zip(table.keys, keys, strict=True)]


def param_of(key: KeyInfo, k: KeyMatch) -> Any:
    w = key.width
    if k.kind == "lpm":
        return std.BmMatchParam(type=P.LPM, lpm=std.BmMatchParamLPM(
            key_bytes(k.value, w), k.prefix_len or 0))
    if k.kind == "ternary":
        return std.BmMatchParam(type=P.TERNARY, ternary=std.BmMatchParamTernary(
            key_bytes(k.value, w), key_bytes(k.mask or 0, w)))
    if k.kind == "optional":
        mask = 0 if k.wildcard else (1 << w) - 1
        return std.BmMatchParam(type=P.TERNARY, ternary=std.BmMatchParamTernary(
            key_bytes(k.value, w), key_bytes(mask, w)))
    if k.kind == "range":
        return std.BmMatchParam(type=P.RANGE, range=std.BmMatchParamRange(
            key_bytes(k.value, w), key_bytes(k.high or 0, w)))
    return std.BmMatchParam(type=P.EXACT, exact=std.BmMatchParamExact(key_bytes(k.value, w)))


def entry_of(table: TableInfo, e: EntryView, life: tuple[int, int] | None = None) -> Any:
    """An entry as BMv2 gives it; ``life``: (timeout, ms since the last hit) of an entry
    with an idle timeout (BMv2's TTL)."""
    data = [data_bytes(v) for v in e.args]
    return std.BmMtEntry(
        life=None if life is None else std.BmMtEntryLife(timeout_ms=life[0],
                                                         time_since_hit_ms=life[1]),
        match_key=params_of(table, e.keys),
        entry_handle=e.handle,
        options=std.BmAddEntryOptions(
            priority=-1 if e.priority is None else BMV2_PRIORITY_BASE - e.priority),
        action_entry=std.BmActionEntry(action_type=std.BmActionEntryType.ACTION_DATA,
                                       action_name=e.action, action_data=data))
