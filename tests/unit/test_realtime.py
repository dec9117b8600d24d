"""softswitch run's interpreter settings (softswitch.ports.realtime)."""

from __future__ import annotations

import gc
import sys

from softswitch.ports import realtime


def test_settle_freezes_the_heap_and_sets_collector_and_switch_interval():
    thresholds, interval = gc.get_threshold(), sys.getswitchinterval()
    kept = [object() for _ in range(3)]
    try:
        realtime.settle()
        assert gc.get_threshold() == realtime.THRESHOLDS
        assert abs(sys.getswitchinterval() - realtime.SWITCH_INTERVAL_S) < 1e-6
        assert gc.get_freeze_count() >= len(kept)
        assert realtime.SWITCH_INTERVAL_S <= 0.0005     # far below CPython's 5 ms
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        sys.setswitchinterval(interval)
