"""Work other threads hand to the port loop, run by it between two bursts.

A thread that changes the switch (the runtime channel's ``table_add``, a queue rate)
needs the GIL and the device lock for as long as the change takes. While it holds the
GIL, the port loop, woken by an urgent frame, cannot run: CPython gives the GIL to a
waiting thread only when the holder blocks or after the switch interval (5 ms), so a
controller piping bursts of commands would keep the port loop out for a burst at a time.

So such work is queued here and the calling thread blocks until it is done (the GIL
is free meanwhile); the port loop runs one queued call per turn, after the frames that
woke it. An urgent frame then waits for at most one command, never for a burst of them,
and the loop's frames and the commands take turns instead of racing for the GIL.

A call may also mark the points between its steps where the loop may forward its
urgent frames before going on (:meth:`LoopCalls.checkpoint`): a runtime-channel
``table_add`` is three steps (parse, build the entry, write it), so an urgent frame
waits for one step of it, not for all of it. A checkpoint must sit where
the switch's state is whole (before a change, or after it).

When no port loop runs (before it starts, after it stops, or in a process without
one), and on the loop's own thread, a call runs at once on the caller's thread.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger("softswitch.daemon.ports")


class _Call:
    """One queued call: its function, and its result or exception once run."""

    __slots__ = ("fn", "done", "result", "error")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
            self.error = exc
        finally:
            self.done.set()


class _Posted:
    """A call queued by the loop itself (:meth:`LoopCalls.post`)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn

    def run(self) -> None:
        try:
            self.fn()
        except Exception as exc:  # noqa: BLE001 - the loop must keep running
            log.error("port loop: posted call failed: %s: %s", type(exc).__name__, exc)


class LoopCalls:
    """The queue between other threads and the port loop (see the module's docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()       # open/close against queueing a call
        self._pending: deque[_Call | _Posted] = deque()
        self._loop: int | None = None        # the loop's thread while it takes calls
        self._wake: Callable[[], None] = lambda: None
        self._urgent: Callable[[], None] = lambda: None
        self._in_call = False                # the loop runs a queued call now

    def call(self, fn: Callable[[], T]) -> T:
        """``fn()``, run by the port loop between two bursts if one is running (this
        thread waits), else here and now. Its exception is raised here."""
        return self.call_each([fn])[0]

    def call_each(self, fns: list[Callable[[], T]]) -> list[T]:
        """Each ``fn()`` in order, one per turn of the port loop, and their results;
        queued together, so the loop is woken once for all of them (a client's
        pipelined commands). The first exception is raised here once all have run."""
        with self._lock:
            queued: list[_Call] = []
            if self._loop is not None and threading.get_ident() != self._loop:
                queued = [_Call(fn) for fn in fns]
                self._pending.extend(queued)
        if not queued:
            return [fn() for fn in fns]
        self._wake()
        queued[-1].done.wait()          # run in order: the last one done, all are
        for call in queued:
            if call.error is not None:
                raise call.error
        return [call.result for call in queued]

    def post(self, fn: Callable[[], Any]) -> None:
        """On the loop's thread: run ``fn()`` on a later turn, nobody waiting for it
        (the runtime channel's connections the loop serves queue their commands so,
        one per turn). Its exception is logged."""
        self._pending.append(_Posted(fn))

    def pending(self) -> bool:
        """Whether a call waits (the loop then polls instead of sleeping)."""
        return bool(self._pending)

    def run_one(self) -> None:
        """On the loop: run the oldest waiting call, if any."""
        try:
            queued = self._pending.popleft()
        except IndexError:
            return
        self._in_call = True
        try:
            queued.run()
        finally:
            self._in_call = False

    def checkpoint(self) -> None:
        """Inside a call the loop runs: forward the urgent frames waiting now, then go
        on (the module's docstring). Anywhere else (another thread too, while the loop
        runs a call) it does nothing."""
        if self.checkpointing():
            self._urgent()

    def checkpointing(self) -> bool:
        """Whether :meth:`checkpoint` acts here: in a call, on the loop's thread."""
        return self._in_call and threading.get_ident() == self._loop

    @contextmanager
    def as_call(self) -> Iterator[None]:
        """On the loop: run the body as it runs a queued call, so its checkpoints
        forward urgent frames (work the loop takes from a socket it watches, such as
        the P4Runtime front end's Writes)."""
        previous, self._in_call = self._in_call, True
        try:
            yield
        finally:
            self._in_call = previous

    def open(self, wake: Callable[[], None],
             urgent: Callable[[], None] | None = None) -> None:
        """The calling thread is now the loop; ``wake`` interrupts its wait, ``urgent``
        forwards the urgent frames waiting (for :meth:`checkpoint`)."""
        with self._lock:
            self._loop, self._wake = threading.get_ident(), wake
            self._urgent = urgent if urgent is not None else (lambda: None)

    def close(self) -> None:
        """The loop ends: calls from now on run on their own thread, and those still
        queued run here, so no caller is left waiting."""
        with self._lock:
            self._loop, self._wake, self._urgent = None, lambda: None, lambda: None
        while self._pending:
            self.run_one()
