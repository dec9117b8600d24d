"""The lab's discrete-event clock: callbacks ordered by time (microseconds), ties in
the order they were scheduled, so a seed gives the same run every time. One loop for
the single-switch lab (sim.py) and the fabric (network.py)."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable


class EventLoop:
    """Run callbacks at simulated times; ``now`` is the time of the one running."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self.executed = 0      # callbacks run: the simulation's cost, per packet a few

    def at(self, t: float, fn: Callable[[], None]) -> None:
        now = self.now
        heapq.heappush(self._heap, (now if now > t else t, next(self._seq), fn))

    def run(self, until_us: float) -> None:
        heap, pop = self._heap, heapq.heappop
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
