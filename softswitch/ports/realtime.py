"""Interpreter settings for a switch that forwards packets in real time.

**The cyclic collector** stops the process while it walks the tracked objects. After a
pipeline is loaded the heap holds hundreds of thousands of long-lived objects (AST, IR,
tables), so a full collection takes tens of milliseconds, and with the default
thresholds the packet path's short-lived objects trigger collections often: every one
is a stall every queued packet waits behind, urgent ones too. So, once the switch is
set up, the objects that exist are moved to the permanent generation (``gc.freeze``),
where collections never look, and the young-generation threshold is raised so the
packet path's garbage (freed by reference counting anyway) rarely triggers a pass.

**The GIL's switch interval** stays CPython's 5 ms. A shorter one (200 µs) was
measured with ``bench/urgent_latency.py`` and 1000 CLI writes/s applied during the
traffic: urgent P99 24-31 ms against 3.1-3.3 ms at 5 ms (12 s runs, idle 2-core
machine) — the port loop, which gives the GIL up at every system call, lost it to the
write thread far more often.
"""

from __future__ import annotations

import gc

# young generation: allocations between passes; older ones: passes of the younger one
THRESHOLDS = (50_000, 20, 100)


def settle() -> None:
    """Collect once, freeze what survives and set the real-time thresholds; call once,
    when the switch is loaded and before packets flow. (A pipeline a controller sets
    later is not frozen: freezing without a collection would keep the old pipeline's
    garbage forever, and a collection then would be the very stall this avoids.)"""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
