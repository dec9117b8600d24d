"""softswitch run's interpreter settings (softswitch.daemon.ports.realtime)."""

from __future__ import annotations

import gc
import sys

from softswitch.daemon.ports import realtime


def test_settle_freezes_the_heap_and_sets_the_collector():
    thresholds, interval = gc.get_threshold(), sys.getswitchinterval()
    kept = [object() for _ in range(3)]
    try:
        realtime.settle()
        assert gc.get_threshold() == realtime.THRESHOLDS
        assert sys.getswitchinterval() == interval          # left as CPython has it
        assert gc.get_freeze_count() >= len(kept)
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        sys.setswitchinterval(interval)
