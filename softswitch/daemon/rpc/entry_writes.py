"""The Write lane for plain table entries: the common small Write, without the general path.

A controller that writes entries one by one (p4runtime-shell's ``insert()``, a route
daemon) or a few at a time (tailcc's control plane) sends Writes of one to a few
updates each, from the primary of the default role. The general path
(``P4RuntimeServicer.Write``) runs many Python calls per Write (request header, device
and arbitration checks, the role's scope, the batch machinery); between two Writes
gRPC's and the kernel's work evict their code and objects from the CPU's caches, so the
cost of a small Write is the number of calls, not their work. This path makes a few.

:meth:`SmallWrites.apply` takes a Write only when ``entrywire.primary_spans`` finds it
the common one (this device, the default role's primary's election id, no role,
CONTINUE_ON_ERROR, nothing unknown or repeated, at most ``MAX_UPDATES`` updates) and
every update decodes as a checked plain table entry. It applies them in order as the
general path would, up to the first one not taken. A request none of whose updates was
applied goes to the general path whole, with nothing changed; one whose first k were
applied goes there for the rest, and the answer counts the k as done. So whatever the
server answers (results, errors, their order) is what the general path answers.

In process the updates are applied in one hold of the device lock. On the port loop
(``Device.checkpointing``) they are applied ``LOOP_WRITE_SLICE`` per hold, with a
checkpoint once the header is read and before each slice, where the switch's state is
whole: urgent frames wait for one slice, not the whole Write. A pipeline set at a
checkpoint between two slices ends the batch there; the general path, which takes the
rest, aborts it."""

from __future__ import annotations

import contextlib
import gc
from typing import NamedTuple

from softswitch.daemon.device import LOOP_WRITE_SLICE, Device, Loaded
from softswitch.memory import reclaim
from softswitch.p4runtime import entrywire
from softswitch.p4runtime.entrywire import CHECKED_LEN
from softswitch.p4runtime.tables import TableEntries
from softswitch.p4runtime.undo import UndoLog

_LOW_64 = (1 << 64) - 1
# The requests this path looks at: one update of a plain table entry is ~40-120 bytes.
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
        reply is ready: process.writes), up to the first update not taken or a pipeline
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
