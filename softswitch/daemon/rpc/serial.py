"""Big unary requests, answered one at a time on a thread of their own.

A Write of thousands of entries takes milliseconds to seconds. Whoever receives
requests (the unary lane on grpcio's polling thread, or the port loop reading the
front end's link) must not answer such a request itself: streams, other calls and, on
the port loop, the packets would wait behind it. So it hands the request here, and this
thread answers it (Writes take the device lock one at a time anyway).

Each waiting request holds its bytes, and more while it is parsed; clients may each
send up to the server's 16 MiB at once, so past :data:`QUEUE_BYTES` waiting a new one is
refused (RESOURCE_EXHAUSTED, retry later) rather than queued: the memory big requests
hold stays bounded however many clients send at once. One is always taken.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from softswitch.memory import reclaim

# Requests up to this size (a Write of a few hundred routes) are answered where they
# arrive; bigger ones here.
INLINE_BYTES = 16 << 10
QUEUE_BYTES = 64 << 20


class BigRequests:
    """A thread answering big requests in order, with a bound on the bytes waiting."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[tuple[int, Callable[[], None]] | None] = \
            queue.SimpleQueue()
        self._queued = 0                  # bytes of the requests not answered yet
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._closed = False

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Answer what is queued, then end the thread (waits up to 5 s)."""
        if not self._closed:
            self._closed = True
            self._jobs.put(None)
            if self._thread.is_alive():
                self._thread.join(5)

    def submit(self, size: int, answer: Callable[[], None]) -> str | None:
        """Queue ``answer`` (which answers a request of ``size`` bytes and sends the
        reply); None, or why it is refused (the caller answers RESOURCE_EXHAUSTED)."""
        with self._lock:
            waiting = self._queued
            if waiting > 0 and waiting + size > QUEUE_BYTES:
                return (f"{waiting / 2**20:.1f} MiB of earlier big requests are still "
                        f"being applied (at most {QUEUE_BYTES >> 20} MiB wait): retry "
                        "once they are")
            self._queued += size
        self._jobs.put((size, answer))
        return None

    def _run(self) -> None:
        with reclaim.holding() as later:
            while (job := self._jobs.get()) is not None:
                size, answer = job
                job = None
                try:
                    answer()
                finally:
                    answer = None   # type: ignore[assignment]
                    later.clear()
                    with self._lock:
                        self._queued -= size
