"""The common Write of one table entry, answered without the general path's layers.

A controller that writes entries one by one (p4runtime-shell's ``insert()``, a route
daemon) sends Writes of one update each, from the primary of the default role. On the
general path (``P4RuntimeServicer.Write``) such a Write runs ~90 Python calls: the lazy
request and its protobuf header, the device and arbitration checks, the role's scope,
the runtime's batch machinery (slices, undo log, per-update error handling). Each is
cheap when warm, but between two Writes of a controller gRPC's and the kernel's work
evicts them from the CPU's caches: the same handler that costs ~13 µs in a loop costs
~60 µs as a server answers it (2026-12-06, ``bench/p4runtime_write.py`` at batch 1:
softswitch's server used ~230 µs of CPU per Write against BMv2's ~185).

:meth:`SmallWrites.apply` takes such a Write in a few steps: ``entrywire.primary_spans``
reads the request's header in C and answers the update's span only when the request
is the common one (this device, the default role's primary's election id, no role,
CONTINUE_ON_ERROR, nothing unknown or repeated); the update must decode as a checked
plain table entry (``entrywire.decode`` with the tables' native plans) that
``TableEntries.write_plain`` takes — the very call the general path makes for it.
Anything else (an error to report, another entity, a batch, another role, a Write
the port loop answers with checkpoints) returns False with nothing
changed, and the general path handles the request from its bytes, as it always did:
whatever it answers (results, errors, their order) is unchanged.
"""

from __future__ import annotations

import gc

from softswitch.p4runtime import entrywire, reclaim
from softswitch.p4runtime.device import Device
from softswitch.p4runtime.entrywire import CHECKED_LEN
from softswitch.p4runtime.undo import UndoLog

_LOW_64 = (1 << 64) - 1
# The requests this path looks at: one update of a plain table entry is ~40-120 bytes.
MAX_BYTES = 1024


class SmallWrites:
    """The fast path of one device's single-update Writes (module doc)."""

    def __init__(self, device: Device) -> None:
        self._device = device
        # The default role, the only one this path takes, always has full access
        # (roles.py): its writes need no scope check.
        self._mod = entrywire.native()

    def apply(self, data: bytes) -> bool:
        """Apply the encoded WriteRequest ``data`` when it is the common single-update
        Write and it succeeds: True, and its answer is the empty WriteResponse. False
        when this path does not take it, having changed nothing."""
        mod = self._mod
        device = self._device
        election = device.arbiter.default_election
        if (mod is None or election is None or len(data) > MAX_BYTES
                or device.current is None or device.stopping.is_set()
                or device.checkpointing()):
            return False
        spans = mod.primary_spans(data, device.device_id, election >> 64,
                                  election & _LOW_64, 1)
        if spans is None:
            return False
        with device.lock:
            loaded = device.current
            if loaded is None:
                return False
            tables = loaded.runtime.tables
            items = mod.decode(data, spans, tables.native_plans)
            update = items[0]
            # One update, applied or not: its undo log (CONTINUE_ON_ERROR: no steps
            # kept) is never rolled back.
            if type(update) is not tuple or len(update) != CHECKED_LEN \
                    or not tables.write_plain(update, UndoLog(atomic=False)):
                return False
        if device.reclaimer is not None:
            # What the write added goes to the permanent generation, as the general
            # path's (runtime._collector_paused): the collector's passes never walk it.
            gc.freeze()
        later = reclaim.held()
        if later is not None:        # freed once the reply is sent, as the general path
            later.append(items)
        device.note_request(len(data))
        return True
