"""The lab's discrete-event clock: callbacks ordered by time (microseconds), ties in
the order they were scheduled, so a seed gives the same run every time. One loop for
the single-switch lab (sim.py) and the fabric (network.py)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable


class EventLoop:
    """Run callbacks at simulated times; ``now`` is the time of the one running.

    ``heap`` and ``seq`` are open to the hot paths that schedule per packet: pushing
    ``(max(t, now), next(seq), fn)`` onto ``heap`` is what :meth:`at` does."""

    def __init__(self) -> None:
        self.now = 0.0
        self.heap: list[tuple[float, int, Callable[[], None]]] = []
        self.seq = itertools.count()
        self.executed = 0      # callbacks run: the simulation's cost, per packet a few

    def at(self, t: float, fn: Callable[[], None]) -> None:
        now = self.now
        heapq.heappush(self.heap, (now if now > t else t, next(self.seq), fn))

    def run(self, until_us: float) -> None:
        heap, pop = self.heap, heapq.heappop
        executed = self.executed
        try:
            while heap and heap[0][0] <= until_us:
                t, _, fn = pop(heap)
                self.now = t
                executed += 1
                fn()
        finally:
            self.executed = executed
        self.now = until_us
