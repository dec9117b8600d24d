"""The memory reclaimer walks the whole heap only after a pipeline change
(softswitch.memory.reclaim): a full collection stops the port loop for as long as it
takes, and after table writes it finds nothing."""

from __future__ import annotations

import gc
import threading
import time
import weakref

from softswitch.memory import reclaim


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _frozen_cycle() -> weakref.ref:
    """A garbage cycle moved out of the collector's reach (as a Write's freeze moves
    it); a weak reference tells whether it was freed."""
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    del a, b
    gc.freeze()
    return ref


def _wait_for_pass(passes: list[dict]) -> None:
    deadline = time.monotonic() + 10
    while not passes and time.monotonic() < deadline:
        time.sleep(0.02)
    assert passes, "no reclamation ran"


def test_only_a_pipeline_change_makes_the_reclaimer_collect_the_frozen_heap(monkeypatch):
    passes: list[dict] = []
    real = reclaim.reclaim

    def recorded(lock, roots, cycles=False, quiet=0.0):
        done = real(lock, roots, cycles, quiet)
        passes.append(dict(done, quiet=quiet))
        return done

    monkeypatch.setattr(reclaim, "reclaim", recorded)
    enabled = gc.isenabled()
    gc.disable()
    reclaimer = reclaim.Reclaimer(threading.Lock(), lambda: [], quiet=0.05)
    try:
        ref = _frozen_cycle()
        reclaimer.note(reclaim.BIG_REQUEST_BYTES)           # big writes: no full pass
        _wait_for_pass(passes)
        assert passes[0]["collected"] == -1 and ref() is not None
        # once quiet (0.05 s here), not yet KEEP_SECONDS: settle_heap may keep pages
        assert 0.05 <= passes[0]["quiet"] < 5
        passes.clear()
        reclaimer.note(1000, pipeline=True)                 # a pipeline change: one
        _wait_for_pass(passes)
        assert passes[0]["collected"] >= 2 and ref() is None
    finally:
        reclaimer.stop()
        gc.unfreeze()
        if enabled:
            gc.enable()
