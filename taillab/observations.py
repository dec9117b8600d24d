"""What a fabric run observes: message completions, delivered and CE-marked packets, CNP
feedback delay, PFC pause frames and paused time (and the flows caught in a paused
queue), queue depth samples and buffer peaks; the report reads them after the run."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from taillab.roce import (
    BTH_OPCODE_OFFSET,
)
from taillab.traffic import FabricMessage as Message

IP_PAIR = slice(26, 34)                                        # source, destination IP
QP_PSN = slice(BTH_OPCODE_OFFSET + 4, BTH_OPCODE_OFFSET + 12)   # BTH destination QP, PSN


def packet_identity(data: bytes) -> bytes:
    """What stays the same hop by hop (MACs, TTL, ECN and checksum change): source IP,
    destination IP, BTH destination QP and PSN (``data[IP_PAIR] + data[QP_PSN]``, which
    the hot paths write out)."""
    return data[IP_PAIR] + data[QP_PSN]


@dataclass
class PfcLedger:
    """Pause frames and paused time, per (node, port, priority) that was paused."""

    frames: int = 0
    paused_since: dict[tuple[str, int, int], float] = field(default_factory=dict)
    paused_us: dict[tuple[str, int, int], float] = field(default_factory=dict)
    intervals: dict[tuple[str, int, int], list[list[float]]] = field(default_factory=dict)
    paused_flows: set[tuple[bytes, bytes, int]] = field(default_factory=set)  # src, dst IP, QP

    def start(self, key: tuple[str, int, int], now: float) -> None:
        self.frames += 1
        if key not in self.paused_since:
            self.paused_since[key] = now
            self.intervals.setdefault(key, []).append([now, float("inf")])

    def end(self, key: tuple[str, int, int], now: float) -> None:
        self.frames += 1
        since = self.paused_since.pop(key, None)
        if since is not None:
            self.paused_us[key] = self.paused_us.get(key, 0.0) + now - since
            self.intervals[key][-1][1] = now

    def paused_during(self, key: tuple[str, int, int], t0: float, t1: float) -> bool:
        """Was ``key`` paused at some time in [t0, t1] (a packet's stay in a queue)?"""
        for start, end in reversed(self.intervals.get(key, ())):
            if end < t0:
                return False
            if start <= t1:
                return True
        return False

    def close(self, now: float) -> None:
        for key in list(self.paused_since):
            self.end(key, now)
            self.frames -= 1

    @property
    def total_paused_us(self) -> float:
        return sum(self.paused_us.values())


@dataclass
class Observations:
    completions: list[tuple[Message, float]] = field(default_factory=list)
    delivered_bytes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    delivered_pkts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    ce_pkts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    cnp_delay_us: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    pfc: PfcLedger = field(default_factory=PfcLedger)
    depth_samples: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    # message id -> when its first packet left the sender's NIC: what came before is
    # waiting at the sender (its QP busy with an earlier message, the NIC with others)
    first_tx_us: dict[int, float] = field(default_factory=dict)
    peak_buffer_pkts: dict[str, int] = field(default_factory=dict)
