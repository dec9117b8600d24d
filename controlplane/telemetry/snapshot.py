"""One read of tailcc's counters and queue registers from a switch.

Names are looked up by suffix; a counter the loaded program lacks is simply absent,
so the commands built on snapshots also work (with less to say) on other programs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from controlplane.p4rt import Client, EntityBuilder
from controlplane.p4rt import values as v

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

    def total(self, kind: str) -> int:
        return sum(p for p, _ in self.counters.get(kind, {}).values())


def take_snapshot(client: Client, builder: EntityBuilder) -> Snapshot:
    snap = Snapshot(time.monotonic())
    index = builder.index
    for kind, name in COUNTERS.items():
        if not index.has("counters", name):
            continue
        cells = {}
        for e in client.read([builder.counter_entry(name)]):
            ce = e.counter_entry
            if ce.data.packet_count or ce.data.byte_count:
                cells[ce.index.index] = (ce.data.packet_count, ce.data.byte_count)
        snap.counters[kind] = cells
    for kind, name in REGISTERS.items():
        if not index.has("registers", name):
            continue
        cells_r = {}
        for e in client.read([builder.register_entry(name)]):
            re_ = e.register_entry
            value = v.decode(re_.data.bitstring) if re_.data.bitstring else 0
            if value:
                cells_r[re_.index.index] = value
        snap.registers[kind] = cells_r
    return snap


def delta(before: Snapshot, after: Snapshot, kind: str) -> dict[int, int]:
    """Packets counted per index between two snapshots."""
    old = before.counters.get(kind, {})
    return {i: p - old.get(i, (0, 0))[0] for i, (p, _) in after.counters.get(kind, {}).items()
            if p - old.get(i, (0, 0))[0]}
