"""Interpreter settings for a switch that forwards packets in real time.

**The cyclic collector** stops the process while it walks the tracked objects. After a
pipeline is loaded the heap holds hundreds of thousands of long-lived objects (AST, IR,
tables), so a full collection is a long stall, and with the default thresholds the
packet path's short-lived objects trigger collections often: every one is a stall
every queued packet waits behind, urgent ones too. So, once the switch is set up, the
objects that exist are moved to the permanent generation (``gc.freeze``), where
collections never look, and the young-generation threshold is raised so the packet
path's garbage (freed by reference counting anyway) rarely triggers a pass.

**The GIL's switch interval** stays CPython's default (5 ms). The port loop gives the
GIL up at every system call; with a shorter interval it loses the GIL to a writing
thread far more often, and urgent frames wait longer, not less.
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
