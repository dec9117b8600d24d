"""One read of tailcc's counters and queue registers from a switch.

Names are looked up by suffix; a counter the loaded program lacks is simply absent,
so the commands built on snapshots also work (with less to say) on other programs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import grpc

from controlplane.p4rt import Client, EntityBuilder
from controlplane.p4rt import values as v
from controlplane.p4rt.errors import P4RuntimeClientError

COUNTERS = {
    "class": "classify.class_counter",               # index: traffic class
    "ecn_mark": "ecn_marking.ecn_mark_counter",      # index: port * 8 + queue
    "ecn_drop": "ecn_marking.ecn_drop_counter",      # index: port * 8 + queue
    "pfc": "mac_control.pfc_priority_counter",       # index: port * 8 + priority
    "fast_cnp": "fast_cnp.fast_cnp_counter",         # 0 sent, 1 unresolved, 2 rate-limited
    "cnp_built": "cnp_builder.fast_cnp_built_counter",
    "drop": "ingress_drop_counter",                  # index: DROP_* reason
    "segment_deny": "segmentation.segment_deny_counter",  # index: VRF
}
REGISTERS = {"queue_depth": "queue_depth", "queue_watermark": "queue_depth_watermark"}
DROP_REASONS = ["parser_error", "pfc_frame", "rfc6040", "segment_deny", "ttl_expired",
                "no_route", "not_ect_queue", "other"]
CNP_OUTCOMES = ["sent", "unresolved", "rate_limited", "built"]


@dataclass
class Snapshot:
    """Non-zero cells only: counters[kind][index] = (packets, bytes)."""

    time: float
    counters: dict[str, dict[int, tuple[int, int]]] = field(default_factory=dict)
    registers: dict[str, dict[int, int]] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)   # kind -> why not read

    def total(self, kind: str) -> int:
        return sum(p for p, _ in self.counters.get(kind, {}).values())


PORT_QUEUE_KINDS = {"ecn_mark", "ecn_drop", "pfc", "queue_depth", "queue_watermark"}


def port_queue_slots(ports: list[int]) -> list[int]:
    return [port << 3 | queue for port in sorted(ports) for queue in range(8)]


@dataclass(frozen=True)
class Scope:
    """Which cells matter: the switch's ports and tenant VRFs (from the intent)."""

    ports: tuple[int, ...]
    vrfs: tuple[int, ...]


def _counter_filters(builder: EntityBuilder, kind: str, name: str,
                     scope: Scope | None) -> list:
    if scope is not None and kind in PORT_QUEUE_KINDS:
        return [builder.counter_entry(name, i) for i in port_queue_slots(list(scope.ports))]
    if scope is not None and kind == "segment_deny":
        return [builder.counter_entry(name, vrf) for vrf in scope.vrfs]
    return [builder.counter_entry(name)]


def take_snapshot(client: Client, builder: EntityBuilder,
                  scope: Scope | None = None, thrift: Any = None) -> Snapshot:
    """Read every counter/register tailcc keeps. With a ``scope`` (from the intent),
    the 4096-cell arrays are read only at the cells that exist on this switch: a
    wildcard read of 4096 cells is far slower than a few dozen indexed ones.

    BMv2's P4Runtime server refuses register reads (UNIMPLEMENTED); with ``thrift`` (a
    :class:`~controlplane.reconcile.bmv2_thrift.Bmv2Thrift` to the same switch) they are
    read over BMv2's Thrift API instead, otherwise ``snap.unavailable`` says why not."""
    snap = Snapshot(time.monotonic())
    index = builder.index
    for kind, name in COUNTERS.items():
        if not index.has("counters", name):
            continue
        cells = {}
        filters = _counter_filters(builder, kind, name, scope)
        if not filters:
            continue
        for e in client.read(filters):
            ce = e.counter_entry
            if ce.data.packet_count or ce.data.byte_count:
                cells[ce.index.index] = (ce.data.packet_count, ce.data.byte_count)
        snap.counters[kind] = cells
    for kind, name in REGISTERS.items():
        if not index.has("registers", name):
            continue
        slots = port_queue_slots(list(scope.ports)) if scope is not None else None
        try:
            snap.registers[kind] = _read_register(client, builder, name, slots)
        except P4RuntimeClientError as exc:
            if exc.code != grpc.StatusCode.UNIMPLEMENTED:
                raise
            if thrift is None:
                snap.unavailable[kind] = str(exc)
                continue
            full = index.register(name).preamble.name
            values = thrift.register_read_all(full)
            snap.registers[kind] = {i: x for i, x in enumerate(values)
                                    if x and (slots is None or i in slots)}
    return snap


def _read_register(client: Client, builder: EntityBuilder, name: str,
                   slots: list[int] | None) -> dict[int, int]:
    cells: dict[int, int] = {}
    filters = ([builder.register_entry(name, i) for i in slots] if slots is not None
               else [builder.register_entry(name)])
    for e in client.read(filters):
        re_ = e.register_entry
        value = v.decode(re_.data.bitstring) if re_.data.bitstring else 0
        if value:
            cells[re_.index.index] = value
    return cells


def delta(before: Snapshot, after: Snapshot, kind: str) -> dict[int, int]:
    """Packets counted per index between two snapshots."""
    old = before.counters.get(kind, {})
    return {i: p - old.get(i, (0, 0))[0] for i, (p, _) in after.counters.get(kind, {}).items()
            if p - old.get(i, (0, 0))[0]}
