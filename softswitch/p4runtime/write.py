"""A P4Runtime Write, from the request's bytes to its results: the one entrance.

:meth:`Writes.write` is what a Write means (P4Runtime 1.4, Write RPC): the header's
checks in the specification's order (unknown device or role NOT_FOUND, not the role's
primary PERMISSION_DENIED, no pipeline FAILED_PRECONDITION), then each update decoded,
checked against the writer's role and applied in order (``runtime.PipelineRuntime``),
one result per update. Every server calls it and only maps its answer to a status.

How an update is decoded and applied is chosen behind it. A request of at most
``SMALL_UPDATES`` plain table entries from the default role's primary (this device, its
election id, no role, CONTINUE_ON_ERROR: ``entrywire.primary_spans``) is decoded and
checked in C and applied in the same hold of the lock, up to its first update that the
C checks do not take; everything else (or the rest of such a request) is parsed update
by update after the checks (``encoding.LazyRequest``) and applied by the runtime. Both
give the same results, errors and order: an update the C checks do not take is parsed
with protobuf, so errors have one source.

The target (:class:`WriteTarget`, the daemon's device) owns the lock, the pipeline and
the arbiter. Where its port loop answers the Write (``checkpointing``), a
CONTINUE_ON_ERROR batch is applied ``LOOP_WRITE_SLICE`` updates per hold of the lock,
a ``checkpoint`` before each, where the switch's state is whole; a pipeline set at a
checkpoint ends the batch there (the rest ABORTED).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

import grpc
from p4.v1 import p4runtime_pb2

from softswitch.memory import reclaim
from softswitch.p4runtime import entrywire, errors
from softswitch.p4runtime.arbitration import Arbiter, election_id_of, role_name
from softswitch.p4runtime.encoding import LazyRequest
from softswitch.p4runtime.entrywire import CHECKED_LEN
from softswitch.p4runtime.roles import Role
from softswitch.p4runtime.runtime import PipelineRuntime, Result

WriteRequest = p4runtime_pb2.WriteRequest
# Updates of a CONTINUE_ON_ERROR batch applied per hold of the lock when the target's
# port loop answers the Write, a checkpoint between.
LOOP_WRITE_SLICE = 4
# The requests the small-batch shortcut looks at (a plain entry's update: ~40-120 bytes).
SMALL_UPDATES = 16
SMALL_BYTES = 2048
_LOW_64 = (1 << 64) - 1


class Pipeline(Protocol):
    """A loaded pipeline as a Write uses it."""

    runtime: PipelineRuntime
    switch: object


class WriteTarget(Protocol):
    """What a Write needs of the device it changes."""

    device_id: int
    arbiter: Arbiter
    lock: Any                         # a context manager: held while the switch changes
    stopping: threading.Event
    checkpoint: Callable[[], None]

    @property
    def current(self) -> Pipeline | None: ...
    @property
    def reclaimer(self) -> object | None: ...
    @property
    def checkpointing(self) -> Callable[[], bool] | None:
        """None: no port loop answers Writes (a Write holds the lock once)."""

    def check_device(self, device_id: int) -> None: ...
    def require_pipeline(self) -> Pipeline: ...
    def note_request(self, size: int, pipeline: bool = False) -> None: ...


class _Taken(NamedTuple):
    """What the shortcut applied of a request: its first ``applied`` updates of
    ``updates``, to ``pipeline``."""

    applied: int
    updates: int
    pipeline: object = None


_NOT_TAKEN = _Taken(0, 0)


class Writes:
    """The Writes of one target (module doc)."""

    def __init__(self, target: WriteTarget, shortcut: bool = True) -> None:
        """``shortcut``: whether small batches may take the C shortcut (False: every
        update is parsed with protobuf; the answers are the same)."""
        self._target = target
        self._native = entrywire.native() if shortcut else None

    def write(self, data: bytes) -> list[Result] | None:
        """Apply the encoded WriteRequest ``data``: None when every update was applied,
        else one result per update (None = applied). A request refused as a whole
        raises its :class:`~softswitch.p4runtime.errors.P4RuntimeError`."""
        taken = self._shortcut(data) if self._native is not None else _NOT_TAKEN
        if taken.applied and taken.applied == taken.updates:
            return None
        return self._general(LazyRequest(WriteRequest, p4runtime_pb2.Update, 4, data), taken)

    # ------------------------------------------------------------------ the general way
    def _general(self, request: LazyRequest, taken: _Taken) -> list[Result] | None:
        """The header's checks, then the updates the shortcut did not apply (``taken``:
        those it did, to its pipeline), parsed one by one."""
        target = self._target
        head = request.header
        try:
            if request.error is not None:
                raise errors.invalid(request.error)
            if head.device_id != target.device_id:
                target.check_device(head.device_id)       # raises NOT_FOUND
            role = target.arbiter.check_writer(
                role_name(name=head.role, role_id=head.role_id), election_id_of(head))
            target.checkpoint()
            done = taken.applied
            results: list[Result] = [None] * done
            results += self._in_parts(request.part(done, len(request)) if done else request,
                                      role, taken.pipeline)
        finally:
            request.release()
            target.note_request(request.size)
        if results.count(None) == len(results):
            return None
        if target.stopping.is_set():
            raise errors.P4RuntimeError(grpc.StatusCode.UNAVAILABLE,
                                        "the switch is shutting down: the batch was cut "
                                        "short (updates before the cut applied)")
        return results

    def _in_parts(self, request: LazyRequest, role: Role, first: object = None
                  ) -> list[Result]:
        """The batch's results; a checkpoint after each hold of the lock (one, or one
        per LOOP_WRITE_SLICE updates where the port loop answers). A pipeline set
        between two parts ends the batch there: the rest is ABORTED. ``first``: the
        pipeline the batch's first updates went to (the shortcut's), if any."""
        target = self._target
        parts = [request]
        turns = target.checkpointing
        if (request.header.atomicity == WriteRequest.CONTINUE_ON_ERROR
                and len(request) > LOOP_WRITE_SLICE and turns is not None and turns()):
            parts = [request.part(at, at + LOOP_WRITE_SLICE)
                     for at in range(0, len(request), LOOP_WRITE_SLICE)]
        results: list[Result] = []
        for part in parts:
            with target.lock:
                loaded = target.current
                if loaded is None:
                    loaded = target.require_pipeline()  # raises FAILED_PRECONDITION
                if first is not None and loaded is not first:
                    results += [errors.aborted("not applied: the pipeline was set while "
                                               "the batch was applied")] * (
                        len(request) - len(results))
                    break
                first = loaded
                runtime = loaded.runtime
                permit = None
                if not role.full_access:
                    scope = target.arbiter.roles.scope(role, runtime.index)
                    permit = None if scope.full else scope.update_error
                results += runtime.write(part, permit=permit,
                                         cancelled=target.stopping.is_set,
                                         freeze=target.reclaimer is not None)
            target.checkpoint()
        return results

    # ------------------------------------------------------------------ the shortcut
    def _shortcut(self, data: bytes) -> _Taken:
        """Apply what the small-batch shortcut takes of ``data`` (module doc). None of
        its updates: nothing changed, the general way takes the whole request. Some:
        it takes the rest, for the same pipeline."""
        mod: Any = self._native
        target = self._target
        election = target.arbiter.default_election
        if (election is None or len(data) > SMALL_BYTES or target.current is None
                or target.stopping.is_set()):
            return _NOT_TAKEN
        spans = mod.primary_spans(data, target.device_id, election >> 64,
                                  election & _LOW_64, SMALL_UPDATES)
        if spans is None:
            return _NOT_TAKEN
        turns = target.checkpointing
        sliced = turns is not None and turns()
        if sliced:
            target.checkpoint()           # the header read, the updates decoded next
        with target.lock:
            loaded = target.current
            if loaded is None:
                return _NOT_TAKEN
            runtime = loaded.runtime
            items = mod.decode(data, spans, runtime.tables.native_plans)
            for update in items:
                if type(update) is not tuple or len(update) != CHECKED_LEN:
                    return _NOT_TAKEN
            done = 0 if sliced else runtime.write_checked(items)   # sliced: below
        if sliced:
            done = self._in_slices(items, loaded)
        if not done:
            return _NOT_TAKEN
        self._applied(items, len(data) if done == len(items) else 0)
        return _Taken(done, len(items), loaded)

    def _in_slices(self, items: list[Any], loaded: Pipeline) -> int:
        """Where the port loop answers: the decoded updates applied LOOP_WRITE_SLICE per
        hold of the lock, a checkpoint before each, up to the first update not taken
        or a pipeline set meanwhile (the general way then answers for the rest, from its
        own checkpoint). How many were applied."""
        target, done = self._target, 0
        while done < len(items):
            target.checkpoint()
            with target.lock:
                if target.current is not loaded or target.stopping.is_set():
                    return done
                end = min(done + LOOP_WRITE_SLICE, len(items))
                applied = loaded.runtime.write_checked(items[:end], done)
            if applied < end:
                return applied
            done = applied
        return done

    def _applied(self, items: list[Any], size: int) -> None:
        """What the general way does once a batch is in (``runtime.write``); ``size``:
        the request's bytes, counted for the reclaimer (0 when the general way, which
        takes the rest, counts them)."""
        if self._target.reclaimer is not None:
            # what the write added goes to the permanent generation, as the runtime's
            gc.freeze()
        later = reclaim.held()
        if later is not None:        # freed once the reply is sent
            later.append(items)
        if size:
            self._target.note_request(size)

