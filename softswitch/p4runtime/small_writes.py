"""The common small Write of table entries, answered without the general path's layers.

A controller that writes entries one by one (p4runtime-shell's ``insert()``, a route
daemon) or a few at a time (tailcc's control plane: the routes due every 10 ms) sends
Writes of one to a few updates each, from the primary of the default role. On the
general path (``P4RuntimeServicer.Write``) such a Write runs ~90 Python calls: the lazy
request and its protobuf header, the device and arbitration checks, the role's scope,
the runtime's batch machinery (slices, undo log, per-update error handling). Each is
cheap when warm, but between two Writes of a controller gRPC's and the kernel's work
evicts them from the CPU's caches: the same handler that costs ~13 µs in a loop costs
~60 µs as a server answers it (2026-12-06, ``bench/p4runtime_write.py`` at batch 1:
softswitch's server used ~230 µs of CPU per Write against BMv2's ~185). On the port
loop (``--p4runtime-process``), whose frames evict everything between two Writes, a
Write of ten routes took 275 µs of the loop's CPU there (34 µs warm), and the urgent
frames behind it waited that long (2026-12-06).

:meth:`SmallWrites.apply` takes such a Write in a few steps: ``entrywire.primary_spans``
reads the request's header in C and answers the updates' spans only when the request
is the common one (this device, the default role's primary's election id, no role,
CONTINUE_ON_ERROR, nothing unknown or repeated, at most ``MAX_UPDATES`` updates); every
update must decode as a checked plain table entry (``entrywire.decode`` with the
tables' native plans); they are applied in order as the general path applies them —
runs of one table in one C call (``TableEntries.apply_run``), any other through
``TableEntries.write_plain`` — until one is not taken. Anything else (an error to
report, another entity, another role, more updates) is left to the general path: a
request none of whose updates was applied goes there whole, with nothing changed; one
whose first k updates were applied goes there for the rest only (the general path
would have applied those k the same way), and the answer counts the k as done. So
whatever the server answers (results, errors, their order) is unchanged.

In process the updates are applied in one hold of the device lock. On the port loop
(``Device.checkpointing``) they are applied ``LOOP_WRITE_SLICE`` per hold, with a
checkpoint (the loop forwards the urgent frames that came meanwhile) once the header
is read and before each slice, where the switch's state is whole; the loop's own last
one comes once the reply is ready, before it is sent (``loop_writes``). In one hold the
urgent frames behind a Write of ten routes waited for all of it (183 µs at P50); in
slices the longest wait is 51-60 µs (2026-12-06, timed on the loop during
``bench/urgent_latency.py``). A pipeline set at a checkpoint between two slices ends
the batch there, as between the general path's slices: the rest goes to the general
path, which aborts it.
"""

from __future__ import annotations

import contextlib
import gc
from typing import NamedTuple

from softswitch.p4runtime import entrywire, reclaim
from softswitch.p4runtime.device import LOOP_WRITE_SLICE, Device, Loaded
from softswitch.p4runtime.entrywire import CHECKED_LEN
from softswitch.p4runtime.tables import TableEntries
from softswitch.p4runtime.undo import UndoLog

_LOW_64 = (1 << 64) - 1
# The requests this path looks at: one update of a plain table entry is ~40-120 bytes.
# Ten routes here cost ~180 µs of the port loop's CPU against ~275 on the general path
# (in process with cold caches 92 against 148).
MAX_UPDATES = 16
MAX_BYTES = 2048


class Taken(NamedTuple):
    """What :meth:`SmallWrites.apply` did with a request."""

    applied: int                # its first updates, applied
    updates: int                # its updates (0: not looked at)
    pipeline: object = None     # the pipeline they went to (when some did)


NOT_TAKEN = Taken(0, 0)


class SmallWrites:
    """The fast path of one device's single-update Writes (module doc)."""

    def __init__(self, device: Device) -> None:
        self._device = device
        # The default role, the only one this path takes, always has full access
        # (roles.py): its writes need no scope check.
        self._mod = entrywire.native()

    def apply(self, data: bytes) -> Taken:
        """Apply what this path takes of the encoded WriteRequest ``data`` (module doc).
        All its updates applied: the answer is the empty WriteResponse. None: nothing
        changed, the general path takes the whole request. Some: it takes the rest
        (``LazyRequest.part``), for the same pipeline (a pipeline set meanwhile
        aborts them, as between the general path's own slices)."""
        mod = self._mod
        device = self._device
        election = device.arbiter.default_election
        if (mod is None or election is None or len(data) > MAX_BYTES
                or device.current is None or device.stopping.is_set()):
            return NOT_TAKEN
        spans = mod.primary_spans(data, device.device_id, election >> 64,
                                  election & _LOW_64, MAX_UPDATES)
        if spans is None:
            return NOT_TAKEN
        sliced = device.checkpointing()
        if sliced:
            device.checkpoint()           # the header read, the updates decoded next
        with device.lock:
            loaded = device.current
            if loaded is None:
                return NOT_TAKEN
            tables = loaded.runtime.tables
            items = mod.decode(data, spans, tables.native_plans)
            for update in items:
                if type(update) is not tuple or len(update) != CHECKED_LEN:
                    return NOT_TAKEN
            if sliced:
                done = 0                  # applied below, between checkpoints
            elif len(items) == 1:
                # One update, applied or not: its undo log (CONTINUE_ON_ERROR: no steps
                # kept) is never rolled back.
                done = int(tables.write_plain(items[0], UndoLog(atomic=False)))
            else:
                done = _apply_in_order(tables, loaded.switch, items)
        if sliced:
            done = self._in_slices(items, loaded)
        if not done:
            return NOT_TAKEN
        self._applied(items, len(data) if done == len(items) else 0)
        return Taken(done, len(items), loaded)

    def _in_slices(self, items: list, loaded: Loaded) -> int:
        """On the port loop: the decoded updates applied LOOP_WRITE_SLICE per hold of
        the device lock, a checkpoint before each (the loop's next one comes once the
        reply is ready: loop_writes), up to the first update not taken or a pipeline
        set meanwhile (the general path then answers for the rest, from its own
        checkpoint). How many were applied."""
        device, done = self._device, 0
        while done < len(items):
            device.checkpoint()
            with device.lock:
                if device.current is not loaded or device.stopping.is_set():
                    return done
                end = min(done + LOOP_WRITE_SLICE, len(items))
                applied = _apply_in_order(loaded.runtime.tables, loaded.switch,
                                          items[:end], done)
            if applied < end:
                return applied
            done = applied
        return done

    def _applied(self, items: list, size: int) -> None:
        """What the general path does once a batch is in (runtime.write); ``size``: the
        request's bytes, counted for the reclaimer (0 when the general path, which
        takes the rest, counts them)."""
        if self._device.reclaimer is not None:
            # What the write added goes to the permanent generation, as the general
            # path's (runtime._collector_paused): the collector's passes never walk it.
            gc.freeze()
        later = reclaim.held()
        if later is not None:        # freed once the reply is sent, as the general path
            later.append(items)
        if size:
            self._device.note_request(size)


def _apply_in_order(tables: TableEntries, switch: object, items: list,
                    start: int = 0) -> int:
    """Apply checked updates ``items[start:]`` in order, as
    ``PipelineRuntime._write_batch`` does outside atomic batches (runs of one table in
    one C call, the others one by one), up to the first one not taken: the index of
    that one (``len(items)`` when all were applied). The switch mirrors their entries
    into its data path in one go at the end (``FastSwitch.synced_batch``), as there."""
    synced = getattr(switch, "synced_batch", None)
    with synced() if synced is not None else contextlib.nullcontext():
        done, count = start, len(items)
        while done < count:
            ran = tables.apply_run(items, done)
            if ran > done:
                done = ran
            elif tables.write_plain(items[done], UndoLog(atomic=False)):
                done += 1
            else:
                break
    return done
