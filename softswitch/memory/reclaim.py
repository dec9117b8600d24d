"""Giving memory back after big Write/Read batches.

A parsed TableEntry costs many times its encoded size, so a controller that inserts and
deletes a few hundred thousand entries moves gigabytes through the server. Three things
keep that memory after the entries are gone; :class:`Reclaimer`, a background thread,
undoes each once the server has been quiet for a moment after such a batch:

* **emptied dicts and sets keep their size** (CPython never shrinks a dict when keys
  are deleted): :func:`compact` rebuilds sparse containers of the pipeline *in place*
  (clear + refill keeps their identity, which the data path's closures may hold);
* **reference cycles** wait for a full collection of the permanent generation too
  (Writes freeze what exists when they end: ``runtime._collector_paused``): it is
  unfrozen, collected, and what survives frozen again, as ``ports.realtime.settle``
  does at start-up. That pass walks every object of the process with the GIL held,
  stopping the port loop, and after table writes finds nothing (their paths leave no
  cycle; ``tests/test_p4runtime_cycles.py`` keeps it so), so it runs only after a
  pipeline change (``note(..., pipeline=True)``), whose old pipeline it alone frees;
* **the C allocator keeps freed heap** in its arenas: ``settle_heap``
  (:mod:`softswitch.memory.allocator`) returns it to the kernel, keeping some freed pages for
  the next batch while requests keep coming (faulting them in again slows that batch).

Requests add up: once the bytes handled since the last reclamation pass
``BIG_REQUEST_BYTES``, one is due. Without a pipeline change the work is proportional
to the pipeline's containers, not to its entries, and holds the device lock only for
:func:`compact`.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from softswitch.memory.allocator import release_heap, settle_heap

log = logging.getLogger("softswitch.p4runtime")
# Requests this large (bytes) or batches this long (updates/entities) are "big".
BIG_REQUEST_BYTES = 1 << 20
QUIET_SECONDS = 1.0
TRIM_EVERY_SECONDS = 2.0
_MIN_BYTES = 4096               # smaller containers are left alone


class _Later(threading.local):
    """Per thread: what requests answered there drop (None: drop at once). The class
    default makes reading it on a thread that never set it (the port loop's, where
    runtime-channel commands run) a plain read, not a raised and caught AttributeError."""

    items: list[Any] | None = None


_later = _Later()


def held() -> list[Any] | None:
    """The list that keeps what a request drops (deleted entries, replaced actions, its
    decoded updates) until its reply is on its way, on a thread that answers requests
    so (``rpc.unary``: :func:`holding`), else None: drop at once.

    Freeing is an entry's costliest part on glibc's allocator (``softswitch run``'s, see
    ``cli._system_allocator``). Done after the reply has been handed to gRPC, it
    overlaps the client's next request instead of delaying this reply; a request's
    garbage is held for that request only."""
    return _later.items


# Batches of more updates free as they go: holding everything such a batch drops (its
# decoded updates, a MODIFY's old actions) until the reply would raise its peak memory
# by as much again.
HOLD_UPDATES = 4096


@contextlib.contextmanager
def freeing_now() -> Iterator[None]:
    """Within, :func:`held` is None on this thread: a big batch frees as it goes."""
    items = _later.items
    _later.items = None
    try:
        yield
    finally:
        _later.items = items


class Holding:
    """:func:`holding`'s context (a plain class: it runs once per request, and a
    generator-based context manager costs several calls more)."""

    __slots__ = ("_items",)

    def __enter__(self) -> list[Any]:
        self._items: list[Any] = []
        _later.items = self._items
        return self._items

    def __exit__(self, *exc: object) -> None:
        _later.items = None
        self._items.clear()


def holding() -> Holding:
    """On this thread, :func:`held` gives a list while the block runs; the caller
    clears it (after sending the reply) and everything goes when the block ends."""
    return Holding()




def _sparse(container: Any) -> bool:
    size = sys.getsizeof(container)
    return size > _MIN_BYTES and size > 3 * (64 * len(container) + 256)


def _rebuild(container: Any) -> int:
    """Right-size a dict/set in place (same object); returns 1 if rebuilt."""
    if not _sparse(container):
        return 0
    if isinstance(container, dict):
        items = list(container.items())
        container.clear()
        container.update(items)
    else:
        members = list(container)
        container.clear()
        container.update(members)
    return 1


def compact(root: Any, depth: int = 4, _seen: set[int] | None = None) -> int:
    """Rebuild the sparse dicts/sets reachable from ``root``'s attributes (softswitch
    objects, ``depth`` levels down; containers of fewer than 1000 objects are walked
    into, big ones — of entries — are not). Returns how many were rebuilt."""
    seen = _seen if _seen is not None else set()
    if id(root) in seen or depth < 0:
        return 0
    seen.add(id(root))
    rebuilt = 0
    try:
        attrs = vars(root)
    except TypeError:
        return 0
    for value in list(attrs.values()):
        rebuilt += _visit(value, depth, seen)
    return rebuilt


def _visit(value: Any, depth: int, seen: set[int]) -> int:
    rebuilt = 0
    if isinstance(value, dict):
        rebuilt += _rebuild(value)
        if len(value) < 1000:
            for inner in list(value.values()):
                rebuilt += _visit(inner, depth - 1, seen)
    elif isinstance(value, set):
        rebuilt += _rebuild(value)
    elif isinstance(value, list) and len(value) < 1000:
        for inner in value:
            rebuilt += _visit(inner, depth - 1, seen)
    elif _ours(value):
        rebuilt += compact(value, depth - 1, seen)
    return rebuilt


def _ours(value: Any) -> bool:
    module = getattr(type(value), "__module__", "") or ""
    return module.startswith("softswitch.") and hasattr(value, "__dict__")


def reclaim(lock: Any, roots: Callable[[], list[Any]],
            cycles: bool = False, quiet: float = 0.0) -> dict[str, float]:
    """One reclamation: compact the pipeline's containers (under ``lock``), collect
    cycles (``cycles``: the whole heap, see the module doc), trim the heap (``quiet``:
    seconds since the last request, see ``settle_heap``). Returns what it did (for the
    log)."""
    t0 = time.perf_counter()
    with lock:
        rebuilt = sum(compact(root) for root in roots())
    collected = -1
    if cycles:
        gc.unfreeze()
        collected = gc.collect()
        gc.freeze()
        release_heap()          # the old pipeline's memory: none of it is reused soon
    else:
        settle_heap(quiet)      # a table's freed entries: the next batch may reuse them
    return {"rebuilt": rebuilt, "collected": collected, "seconds": time.perf_counter() - t0}


class Reclaimer:
    """Runs :func:`reclaim` once the server has been quiet for ``quiet`` seconds after
    a big request (``note``)."""

    def __init__(self, lock: Any, roots: Callable[[], list[Any]],
                 quiet: float = QUIET_SECONDS) -> None:
        self._lock = lock
        self._roots = roots
        self._quiet = quiet
        self._due = threading.Event()
        self._last = 0.0
        self._pending = 0
        self._cycles = False         # a pipeline changed: the next pass collects cycles
        self._cycles_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reclaim", daemon=True)
        self._thread.start()

    def note(self, size: int, pipeline: bool = False) -> None:
        """A request of ``size`` bytes was handled; once they add up to a big one, a
        reclamation is due. ``pipeline``: it changed the pipeline, whose old one only a
        full collection frees (one is due now, with it)."""
        self._last = time.monotonic()
        self._pending += size
        if pipeline:
            with self._cycles_lock:
                self._cycles = True
        if self._pending >= BIG_REQUEST_BYTES or pipeline:
            self._pending = 0
            self._due.set()

    def _quiet_for(self) -> float:
        """Seconds since the last request."""
        return time.monotonic() - self._last

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self._due.wait(TRIM_EVERY_SECONDS):
                # Memory freed outside any request softswitch sees (gRPC refusing an
                # oversized message, packet bursts) goes back too, at low cost.
                settle_heap(self._quiet_for())
                continue
            if self._stop.is_set():
                return
            while self._quiet_for() < self._quiet:
                if self._stop.wait(self._quiet / 4):
                    return
            self._due.clear()
            with self._cycles_lock:
                cycles, self._cycles = self._cycles, False
            try:
                done = reclaim(self._lock, self._roots, cycles, self._quiet_for())
            except Exception as exc:  # noqa: BLE001 - never take the server down
                log.error("memory reclamation failed: %s: %s", type(exc).__name__, exc)
                continue
            log.debug("memory reclaimed: %s", done)

    def stop(self) -> None:
        self._stop.set()
        self._due.set()
        self._thread.join(2)
