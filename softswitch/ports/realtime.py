"""Interpreter settings for a switch that forwards packets in real time.

**The cyclic collector** stops the process while it walks the tracked objects. After a
pipeline is loaded the heap holds hundreds of thousands of long-lived objects (AST, IR,
tables), so a full collection takes tens of milliseconds, and with the default
thresholds the packet path's short-lived objects trigger collections often: every one
is a stall every queued packet waits behind, urgent ones too. So, once the switch is
set up, the objects that exist are moved to the permanent generation (``gc.freeze``),
where collections never look, and the young-generation threshold is raised so the
packet path's garbage (freed by reference counting anyway) rarely triggers a pass.

**The GIL.** A control thread running Python (a P4Runtime Write, a runtime-channel
command) keeps the port loop off the interpreter until it blocks or the switch interval
ends — 5 ms by default, which urgent frames then wait. At 200 µs the loop gets the
interpreter back within a fifth of a millisecond. Measured with ``bench/urgent_latency.py``
(elephants and 1000 CLI writes/s, 20 s, twice each, idle 2-core machine): urgent P99
325-332 µs against 380-541, P999 1.1-1.2 ms against 1.9-3.1, max 2.8-3.7 ms against
6.9-7.1. A forced switch costs a few µs, paid only while two threads want the GIL.
"""

from __future__ import annotations

import gc
import sys

# young generation: allocations between passes; older ones: passes of the younger one
THRESHOLDS = (50_000, 20, 100)
SWITCH_INTERVAL_S = 0.0002


def settle() -> None:
    """Collect once, freeze what survives and set the real-time thresholds and switch
    interval; call once, when the switch is loaded and before packets flow. (A pipeline
    a controller sets later is not frozen: freezing without a collection would keep the
    old pipeline's garbage forever, and a collection then would be the very stall this
    avoids.)"""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
    sys.setswitchinterval(SWITCH_INTERVAL_S)
