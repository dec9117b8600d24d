"""Priority flow control (IEEE 802.1Qbb) — a softswitch extension BMv2 does not have.

The switch counts, per ingress port and priority, the packets it holds in its egress
queues. When a count reaches the XOFF threshold the switch pauses that priority on the
upstream link (the ingress port); when it drains to the XON threshold it resumes it.
That is exactly the behaviour that makes PFC dangerous for inference: the pause stops
*every* flow of that priority on the link, not the one causing the backlog.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

PFC_DST_MAC = bytes.fromhex("0180c2000001")
MAC_CONTROL_ETHERTYPE = 0x8808
PFC_OPCODE = 0x0101
MAX_PAUSE_QUANTA = 0xFFFF


@dataclass(frozen=True)
class PfcThresholds:
    """XOFF when the held packet count reaches ``xoff``; XON when it drops to ``xon``."""

    xoff: int
    xon: int

    def __post_init__(self) -> None:
        if not 0 <= self.xon < self.xoff:
            raise ValueError(f"PFC thresholds need 0 <= xon < xoff (got xon={self.xon}, "
                             f"xoff={self.xoff})")


@dataclass(frozen=True)
class PfcEvent:
    """A pause (``pause`` True, XOFF) or resume (XON) the switch sends out ``port``."""

    port: int
    priority: int
    pause: bool
    time_us: float


@dataclass
class PfcMonitor:
    """Tracks held packets per (ingress port, priority) against configured thresholds."""

    thresholds: dict[tuple[int, int], PfcThresholds] = field(default_factory=dict)
    held: dict[tuple[int, int], int] = field(default_factory=dict)
    paused: set[tuple[int, int]] = field(default_factory=set)
    pauses_sent: dict[tuple[int, int], int] = field(default_factory=dict)
    events: list[PfcEvent] = field(default_factory=list)

    def configure(self, port: int, priority: int, thresholds: PfcThresholds | None) -> None:
        key = (port, priority)
        if thresholds is None:
            self.thresholds.pop(key, None)
        else:
            self.thresholds[key] = thresholds

    def on_enqueue(self, port: int, priority: int, now_us: float) -> None:
        key = (port, priority)
        count = self.held.get(key, 0) + 1
        self.held[key] = count
        th = self.thresholds.get(key)
        if th is not None and key not in self.paused and count >= th.xoff:
            self.paused.add(key)
            self.pauses_sent[key] = self.pauses_sent.get(key, 0) + 1
            self.events.append(PfcEvent(port, priority, True, now_us))

    def on_dequeue(self, port: int, priority: int, now_us: float) -> None:
        key = (port, priority)
        count = max(self.held.get(key, 0) - 1, 0)
        self.held[key] = count
        th = self.thresholds.get(key)
        if key in self.paused and th is not None and count <= th.xon:
            self.paused.discard(key)
            self.events.append(PfcEvent(port, priority, False, now_us))

    def take_events(self) -> list[PfcEvent]:
        events, self.events = self.events, []
        return events


def build_pfc_frame(src_mac: bytes, pause_quanta: dict[int, int]) -> bytes:
    """An 802.1Qbb frame pausing each priority in ``pause_quanta`` for that many quanta
    (512 bit times each; 0 resumes). Padded to the 60-byte Ethernet minimum."""
    enable = 0
    times = [0] * 8
    for prio, quanta in pause_quanta.items():
        if not 0 <= prio < 8 or not 0 <= quanta <= MAX_PAUSE_QUANTA:
            raise ValueError(f"PFC priority {prio} / quanta {quanta} out of range")
        enable |= 1 << prio
        times[prio] = quanta
    frame = PFC_DST_MAC + src_mac + struct.pack("!HHH8H", MAC_CONTROL_ETHERTYPE, PFC_OPCODE,
                                                enable, *times)
    return frame.ljust(60, b"\0")


def parse_pfc_frame(frame: bytes) -> dict[int, int] | None:
    """The {priority: quanta} of a PFC frame, or None if ``frame`` is not one."""
    if len(frame) < 34 or frame[12:14] != MAC_CONTROL_ETHERTYPE.to_bytes(2, "big"):
        return None
    opcode, enable = struct.unpack("!HH", frame[14:18])
    if opcode != PFC_OPCODE:
        return None
    times = struct.unpack("!8H", frame[18:34])
    return {p: times[p] for p in range(8) if enable >> p & 1}
