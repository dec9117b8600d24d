"""The P4Runtime view of one loaded pipeline: Write batches and Read requests.

Write semantics are the specification's: updates run in order; with
CONTINUE_ON_ERROR each failed update is undone alone and the others stay; with
ROLLBACK_ON_ERROR (and DATAPLANE_ATOMIC, which the single switch lock already gives)
any failure undoes the whole batch. Either way no update is ever half-applied. The
result is one error slot per update, reported by the server as per-update details.
"""

from __future__ import annotations

import contextlib
import gc
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import grpc
from p4.v1 import p4runtime_pb2

from softswitch.core.control import SwitchControl
from softswitch.diagnostics import P4Error
from softswitch.memory import reclaim
from softswitch.p4runtime import errors
from softswitch.p4runtime.encoding import LazyRequest, WireError
from softswitch.p4runtime.externs import Externs
from softswitch.p4runtime.meters import MeterDriver
from softswitch.p4runtime.p4index import P4InfoIndex
from softswitch.p4runtime.profiles import ActionProfiles
from softswitch.p4runtime.replication import Replication
from softswitch.p4runtime.tables import TableEntries
from softswitch.p4runtime.undo import UndoLog
from softswitch.p4runtime.valuesets import ValueSets

WriteRequest = p4runtime_pb2.WriteRequest
_log = logging.getLogger("softswitch.p4runtime")
_UPDATE_TYPES = frozenset((p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY,
                           p4runtime_pb2.Update.DELETE))
_PAUSE_GC_FROM = 64        # updates in a batch from which the cyclic GC is paused
Result = errors.P4RuntimeError | None


class PipelineRuntime:
    """Entities of one pipeline: translation to ``SwitchControl`` calls and back."""

    def __init__(self, switch: SwitchControl, index: P4InfoIndex) -> None:
        self.switch = switch
        self.index = index
        self.meters = MeterDriver(switch)
        self.profiles = ActionProfiles(switch, index)
        self.tables = TableEntries(switch, index, self.meters, self.profiles)
        self.externs = Externs(switch, index, self.meters, self.tables)
        self.replication = Replication(switch)
        self.value_sets = ValueSets(switch, index)
        self.digest_configs: dict[int, p4runtime_pb2.DigestEntry.Config] = {}
        self._writers: dict[str, Callable[[int, Any, UndoLog], None]] = {
            "table_entry": self.tables.write,
            "action_profile_member": self.profiles.write_member,
            "action_profile_group": self.profiles.write_group,
            "counter_entry": self.externs.write_counter,
            "direct_counter_entry": self.externs.write_direct_counter,
            "register_entry": self.externs.write_register,
            "meter_entry": self.externs.write_meter,
            "direct_meter_entry": self.externs.write_direct_meter,
            "packet_replication_engine_entry": self.replication.write,
            "value_set_entry": self.value_sets.write,
            "digest_entry": self._write_digest,
        }
        self._readers: dict[str, Callable[[Any], Iterator[Any]]] = {
            "table_entry": self._read_tables,
            "action_profile_member": self.profiles.read_member,
            "action_profile_group": self.profiles.read_group,
            "counter_entry": self.externs.read_counter,
            "direct_counter_entry": self.externs.read_direct_counter,
            "register_entry": self.externs.read_register,
            "meter_entry": self.externs.read_meter,
            "direct_meter_entry": self.externs.read_direct_meter,
            "packet_replication_engine_entry": self.replication.read,
            "value_set_entry": self.value_sets.read,
            "digest_entry": self._read_digest,
        }

    # ------------------------------------------------------------------ Write
    def write(self, request: WriteRequest | LazyRequest,
              permit: Callable[[p4runtime_pb2.Update], Result] | None = None,
              cancelled: Callable[[], bool] | None = None,
              freeze: bool = False) -> list[Result]:
        """Apply a batch; returns one result per update (None = OK). ``permit`` gives
        the error of an update the writer's role may not make (checked first). A
        :class:`~softswitch.p4runtime.encoding.LazyRequest` is parsed update by update.
        Once ``cancelled()`` (the switch is stopping) the rest is UNAVAILABLE.
        ``freeze``: see :func:`_collector_paused` (a server with a reclaimer)."""
        lazy = isinstance(request, LazyRequest)
        atomicity = request.header.atomicity if lazy else request.atomicity
        atomic = atomicity in (WriteRequest.ROLLBACK_ON_ERROR, WriteRequest.DATAPLANE_ATOMIC)
        if atomicity not in (WriteRequest.CONTINUE_ON_ERROR, WriteRequest.ROLLBACK_ON_ERROR,
                             WriteRequest.DATAPLANE_ATOMIC):
            raise errors.invalid(f"unknown atomicity {atomicity}")
        reparse: Callable[[int], Any] | None = None
        if not lazy:
            slices: Iterable[tuple[int, Sequence[Any]]] = [(0, request.updates)]
        elif permit is None:
            # Plain table-entry updates come decoded from the wire (entrywire); one the
            # fast checks do not take (or None: not plain) is parsed and goes the
            # general way.
            slices = request.plain_slices(self.tables.native_plans)
            reparse = request.element
        else:
            slices = request.element_slices()
        count = len(request) if lazy else len(request.updates)
        # The switch may mirror the batch's entries into its data path in one go at
        # the end (FastSwitch.synced_batch); the device lock is held throughout. A
        # batch of one has nothing to gather: its entry goes straight in.
        synced = self.switch.synced_batch() if count > 1 and \
            hasattr(self.switch, "synced_batch") else _NOTHING
        # What the batch drops waits for the reply (reclaim.held) unless it is big.
        hold = reclaim.freeing_now() if count > reclaim.HOLD_UPDATES else _NOTHING
        with hold, _collector_paused(freeze, count >= _PAUSE_GC_FROM), synced:
            return self._write_batch(slices, count, atomic, permit, cancelled, reparse)

    def write_checked(self, items: list[Any], start: int = 0) -> int:
        """Apply the updates ``items[start:]`` checked in C (``entrywire.Checked``) in
        order, outside atomic batches, as :meth:`write` applies them (runs of one table
        in one C call, the others one by one), up to the first one not taken: its
        index (``len(items)`` when all were applied). Nothing is reported: the caller
        gives the one not taken, and those after it, to :meth:`write`, which reports
        any error. The switch mirrors the entries into its data path in one go at the
        end (``synced_batch``); a single update goes straight in."""
        tables = self.tables
        count = len(items)
        if count - start == 1:
            return start + tables.write_plain(items[start], _UNLOGGED)
        synced = self.switch.synced_batch() if hasattr(self.switch, "synced_batch") \
            else _NOTHING
        with synced:
            done = start
            while done < count:
                ran = tables.apply_run(items, done)
                if ran > done:
                    done = ran
                elif tables.write_plain(items[done], _UNLOGGED):
                    done += 1
                else:
                    break
        return done

    def _write_batch(self, slices: Iterable[tuple[int, Sequence[Any]]], count: int,
                     atomic: bool, permit: Callable[[p4runtime_pb2.Update], Result] | None,
                     cancelled: Callable[[], bool] | None,
                     reparse: Callable[[int], Any] | None = None) -> list[Result]:
        """The updates come in slices (first index, updates): a decoded slice's runs of
        checked updates are applied in one C call each (``TableEntries.apply_run``)
        outside atomic batches, whose undo log wants one step per update."""
        log = UndoLog(atomic)
        results: list[Result] = []
        failed = stopped = False
        apply = self._apply
        plain = self.tables.write_plain
        run = self.tables.apply_run if reparse is not None and not atomic else None
        later = reclaim.held()
        for base, items in slices:
            if later is not None:     # freed once the reply is sent (reclaim.held)
                later.append(items)
            j, n = 0, len(items)
            while j < n:
                if cancelled is not None and cancelled():
                    results.append(errors.P4RuntimeError(grpc.StatusCode.UNAVAILABLE,
                                                         "the switch is shutting down"))
                    failed = stopped = True
                    break
                update = items[j]
                if run is not None and type(update) is tuple:
                    k = run(items, j)     # type: ignore[arg-type]
                    if k > j:
                        results.extend([None] * (k - j))
                        j = k
                        continue
                i = base + j
                j += 1
                mark = log.mark()
                try:
                    if type(update) is tuple:
                        if plain(update, log):
                            # Outside atomic batches a plain write leaves no undo step
                            # (nothing after its switch call can fail): nothing to forget.
                            results.append(None)
                            continue
                        assert reparse is not None
                        update = reparse(i)
                    elif update is None:            # not plain: parsed now
                        assert reparse is not None
                        update = reparse(i)
                    if isinstance(update, WireError):
                        raise errors.invalid(str(update))
                    refused = permit(update) if permit is not None else None
                    if refused is not None:
                        raise refused
                    apply(update, log)
                    results.append(None)
                    if not atomic:
                        log.forget(mark)
                except errors.P4RuntimeError as exc:
                    log.rollback(mark)
                    # Without its traceback: frame -> results -> exc would be a cycle
                    # per failed update, garbage for the cyclic collector only.
                    results.append(exc.with_traceback(None))
                    failed = True
                except P4Error as exc:
                    log.rollback(mark)
                    results.append(errors.invalid(exc.message))
                    failed = True
                except Exception as exc:  # noqa: BLE001 - a softswitch bug: undone like a failure
                    log.rollback(mark)
                    _log.error("internal error applying an update: %s: %s",
                               type(exc).__name__, exc)
                    results.append(errors.internal(f"internal error: {type(exc).__name__}: "
                                                   f"{exc}"))
                    failed = True
                if failed and atomic:
                    stopped = True
                    break
            if stopped:
                break
        if failed and atomic:
            for exc in log.rollback():
                _log.error("rollback of a Write batch incomplete: %s", exc)
            aborted = errors.aborted("not applied: another update of this batch failed "
                                     "and the batch was rolled back")
            results = [r if r is not None else aborted for r in results]
        if len(results) < count:
            filler = aborted if failed and atomic else errors.P4RuntimeError(
                grpc.StatusCode.UNAVAILABLE, "not applied: the switch is shutting down")
            results += [filler] * (count - len(results))
        return results

    def _apply(self, update: p4runtime_pb2.Update, log: UndoLog) -> None:
        kind = update.type
        entity = update.entity
        which, writer = _handler(self._writers, entity, "Incorrect entity type", "writing")
        if kind not in _UPDATE_TYPES:
            if which == "digest_entry":
                raise errors.invalid("Invalid update type for DigestEntry")
            unset = kind == p4runtime_pb2.Update.UNSPECIFIED
            raise errors.invalid("Update type is not set" if unset else "Invalid update type")
        writer(kind, getattr(entity, which), log)

    # ------------------------------------------------------------------ Read
    def read_wire(self, entities: list[p4runtime_pb2.Entity]) -> list[bytes]:
        """All entities matching the request (wildcards expanded), encoded; or an error.

        Table entries come from per-entry caches of their encoding (see :mod:`wire`)."""
        out: list[bytes] = []
        for entity in entities:
            which, reader = _handler(self._readers, entity, "Incorrect entity type", "reading")
            try:
                out.extend(item if isinstance(item, bytes) else item.SerializeToString()
                           for item in reader(getattr(entity, which)))
            except P4Error as exc:
                raise errors.invalid(exc.message) from None
        return out

    def read(self, entities: list[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        """Like :meth:`read_wire`, as messages (for in-process users)."""
        return [p4runtime_pb2.Entity.FromString(data) for data in self.read_wire(entities)]

    def _read_tables(self, req: p4runtime_pb2.TableEntry) -> Iterator[bytes]:
        return self.tables.read(req)

    # ------------------------------------------------------------------ digests
    def _write_digest(self, kind: int, entry: p4runtime_pb2.DigestEntry, log: UndoLog) -> None:
        info = self.index.get("digests", entry.digest_id)
        did = info.preamble.id
        exists = did in self.digest_configs
        if kind == p4runtime_pb2.Update.INSERT and exists:
            raise errors.already_exists(f"Digest {did} already configured")
        if kind != p4runtime_pb2.Update.INSERT and not exists:
            raise errors.not_found(f"Digest {did} not configured")
        previous = self.digest_configs.get(did)
        if kind == p4runtime_pb2.Update.DELETE:
            del self.digest_configs[did]
        else:
            config = p4runtime_pb2.DigestEntry.Config()
            config.CopyFrom(entry.config)
            if config.max_list_size < 0 or config.max_timeout_ns < 0:
                raise errors.invalid("digest config values must not be negative")
            self.digest_configs[did] = config

        def undo() -> None:
            if previous is None:
                self.digest_configs.pop(did, None)
            else:
                self.digest_configs[did] = previous
        log.push(undo)

    def _read_digest(self, req: p4runtime_pb2.DigestEntry) -> Iterator[p4runtime_pb2.Entity]:
        ids = sorted(self.digest_configs) if req.digest_id == 0 else [
            self.index.get("digests", req.digest_id).preamble.id]
        for did in ids:
            if did not in self.digest_configs:
                if req.digest_id:
                    raise errors.not_found(f"Digest {did} not configured")
                continue
            out = p4runtime_pb2.Entity()
            out.digest_entry.digest_id = did
            out.digest_entry.config.CopyFrom(self.digest_configs[did])
            yield out


_NOTHING = contextlib.nullcontext()       # reusable: a context that does nothing
# The log of plain updates outside atomic batches: such a write pushes no undo step
# (nothing after its switch call can fail), so one log serves them all.
_UNLOGGED = UndoLog(atomic=False)


class _collector_paused:  # noqa: N801 - used as a context manager, like contextlib's
    """No automatic cyclic-GC pass while a big batch (``pause``) is applied.

    A batch allocates several tracked objects per entry, none of them garbage: every
    gen-2 pass it triggers would walk the whole table (O(table) per batch). It is
    re-enabled after the batch if it was enabled before it (so concurrent batches cannot
    leave it off). With ``freeze`` (a server whose :mod:`reclaim` thread collects and
    re-freezes once quiet) what exists then is moved to the permanent generation
    (O(1)), after small writes too: otherwise the passes after the write walk its
    objects anyway, in young, then middle, then full passes, costing as much as the
    insert and, for entries added one at a time, stopping the port loop for whole
    full passes.
    A class, not a generator: every Write enters it, a batch of one too."""

    __slots__ = ("_freeze", "_paused")

    def __init__(self, freeze: bool = False, pause: bool = True) -> None:
        self._freeze = freeze
        self._paused = pause and gc.isenabled()

    def __enter__(self) -> None:
        if self._paused:
            gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self._freeze:
            gc.freeze()
        if self._paused:
            gc.enable()


_Handler = TypeVar("_Handler")


def _handler(handlers: dict[str, _Handler], entity: p4runtime_pb2.Entity, empty: str,
             verb: str) -> tuple[str, _Handler]:
    """The kind of ``entity`` and its handler; ``empty`` is the error when it has none."""
    which = entity.WhichOneof("entity")
    if which is None:          # PI's code and words for an entity of no kind
        raise errors.P4RuntimeError(grpc.StatusCode.UNKNOWN, empty)
    handler = handlers.get(which)
    if handler is None:
        # PI refuses extern entries with no words
        raise errors.unimplemented("" if which == "extern_entry" and verb == "writing"
                                   else f"{verb} {which} is not supported")
    return which, handler
