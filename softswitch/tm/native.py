"""What the traffic manager needs of a store of native (C) egress queues.

:class:`~softswitch.tm.TrafficManager` may hand an egress port's queues to a faster
implementation (``softswitch.v1model.native_queues.NativeQueues`` on ``softswitch run``'s C
fast path) and take them back; it talks to it through this contract only, so the
traffic manager does not depend on the fast path above it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from softswitch.tm.scheduler import QueuedPacket

# (port, priority, enqueued, dequeued, dropped, bytes enqueued, max depth) since the last take
QueueCounts = tuple[int, int, int, int, int, int, int]


@dataclass
class NativeTake:
    """The native queues' counters since the last :meth:`NativeQueues.take`."""

    enqueues: int                              # TrafficManager.enqueue calls, drops included
    dropped: int                               # of which dropped
    queues: list[QueueCounts]
    held: list[tuple[int, int, int]]           # (ingress port, priority, change of held)


@dataclass
class Evicted:
    """A port's queues as C held them: the port's ``busy_until_us`` and, per priority,
    the last departure given and the packets, oldest first."""

    busy_us: float
    queues: list[tuple[float, list[tuple[QueuedPacket, int]]]]   # (packet, ingress port)


class NativeQueueStore(Protocol):
    """Configuration in, counters and packets out (see the module doc)."""

    def adopt(self, port: int, config: list[tuple[int, float, float]],
              busy_us: float) -> None: ...

    def configure(self, port: int, priority: int, capacity: int, rate_pps: float) -> None: ...

    def evict(self, port: int) -> Evicted: ...

    def take(self) -> NativeTake | None: ...

    def next_event_us(self, now_us: float) -> float | None: ...

    def depth(self, port: int, priority: int | None) -> int: ...

    def held(self) -> int: ...
