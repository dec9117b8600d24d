"""All-or-nothing writes, on targets that grant atomic batches and on those that do not.

P4Runtime's ``ROLLBACK_ON_ERROR`` makes *one* WriteRequest all-or-nothing, but BMv2's
``simple_switch_grpc`` refuses it (``UNIMPLEMENTED``) and accepts only
``CONTINUE_ON_ERROR``; and where it is granted (softswitch) it covers one request, while
the controller writes in dependency phases and batches (``tailcc apply``: deletes, ECMP
members, groups, table entries, replication).

A :class:`Transaction` therefore journals every update the switch accepted, with what
the switch held before it, and when anything is refused undoes them itself, newest
first, with the inverse updates::

    INSERT -> DELETE        DELETE -> INSERT of the entity as it was read before
    MODIFY -> MODIFY back to the value as it was read before

The previous state of what a MODIFY or DELETE touches must be known *before* the
write: callers that already read the switch (the reconciler) pass it in, otherwise the
transaction reads it first. After undoing, it reads every touched entity back (one
repair attempt for anything that still differs), so the error says either that the
switch reads as before or which entities could not be restored, and why.

Whether the target grants ``ROLLBACK_ON_ERROR`` is learned once per session
(:meth:`controlplane.p4rt.client.Client.grants_atomic_writes`); where granted, each
batch is still sent atomically, so only earlier batches need undoing.
``Client(atomic_writes=False)`` forces the controller's own rollback everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import grpc
from p4.v1 import p4runtime_pb2

from controlplane.p4rt.describe import entity_text, entry_key, entry_value
from controlplane.p4rt.errors import P4RuntimeClientError, P4RuntimeWriteError
from controlplane.p4rt.p4info import P4InfoIndex

Entity: TypeAlias = p4runtime_pb2.Entity
Update: TypeAlias = p4runtime_pb2.Update


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
"""``before`` value meaning "not known: read it from the switch before writing"."""


class _Assumed:
    def __repr__(self) -> str:
        return "ASSUMED_ABSENT"


_ASSUMED_ABSENT: Any = _Assumed()
"""An INSERT whose previous state was not read: a successful INSERT proves the key was
absent, but when the outcome is unknown (the RPC failed without per-update statuses)
nothing is known, and such a key is reported rather than "restored" to absent."""


@dataclass
class _Step:
    update: Update
    key: tuple
    before: Entity | None        # what the switch held at ``key`` before (None: nothing)
    certain: bool = True         # False: the RPC failed without saying what it applied


@dataclass
class RollbackReport:
    """What undoing a failed transaction achieved."""

    undone: int = 0                                   # inverse updates the switch took
    not_restored: list[str] = field(default_factory=list)   # "entity: reason" lines
    verified: bool = False                            # the read-back was possible

    @property
    def complete(self) -> bool:
        return self.verified and not self.not_restored


class WriteAborted(P4RuntimeWriteError):
    """A transaction the switch refused part of; everything already applied was rolled
    back (see :attr:`rollback`). :attr:`failed` lists the refused updates as
    ``(update, code name, message)``."""

    def __init__(self, message: str, errors: list[tuple[int, str, str]],
                 failed: list[tuple[Update, str, str]], rollback: RollbackReport,
                 code: grpc.StatusCode | None = None) -> None:
        super().__init__(message, errors, code)
        self.failed = failed
        self.rollback = rollback


class Transaction:
    """Updates written in order, all-or-nothing across every batch written through it.

    ``tx = Transaction(client, index)``; ``tx.write(updates, before=...)`` as often as
    needed (each call one or more batches, in order); on a refusal ``write`` undoes
    everything this transaction applied and raises :class:`WriteAborted`. When something
    else fails between writes (a traffic-manager command, say), call :meth:`abort`.
    ``before`` (aligned with ``updates``) is the switch's entity before each update —
    ``None`` for "absent", :data:`UNKNOWN` for "read it first". By default INSERTs are
    taken as absent before (a successful INSERT proves it) and MODIFY/DELETE are read.
    """

    def __init__(self, client: Any, index: P4InfoIndex | None = None,
                 batch_size: int = 500,
                 describe: Callable[[Entity], str] | None = None) -> None:
        self.client = client
        self.index = index
        self.batch_size = batch_size
        self._describe = describe
        self.steps: list[_Step] = []
        self.unknown: list[Update] = []     # INSERTs of unknown outcome and prior state
        self.written = 0

    # --- writing -------------------------------------------------------------------------
    def write(self, updates: Sequence[Update], before: Sequence[Any] | None = None,
              atomic: bool = True) -> int:
        """Write ``updates`` in batches; ``atomic=False`` never asks the target for an
        atomic batch (e.g. replication entries, which some targets cannot take back).
        Returns the number written; raises :class:`WriteAborted` after rolling back."""
        updates = list(updates)
        if not updates:
            return 0
        befores = list(before) if before is not None else [UNKNOWN] * len(updates)
        if len(befores) != len(updates):
            raise ValueError("before must be aligned with updates")
        befores = self._known_before(updates, befores)
        for start in range(0, len(updates), self.batch_size):
            self._write_batch(updates[start:start + self.batch_size],
                              befores[start:start + self.batch_size], atomic)
        self.written += len(updates)
        return len(updates)

    def _known_before(self, updates: list[Update], befores: list[Any]) -> list[Any]:
        """Fill in UNKNOWN previous states: INSERT -> absent, MODIFY/DELETE -> read."""
        out = list(befores)
        wanted = []
        for i, (u, b) in enumerate(zip(updates, befores, strict=True)):
            if b is UNKNOWN:
                if u.type == Update.INSERT:
                    out[i] = _ASSUMED_ABSENT
                else:
                    wanted.append(i)
        if wanted:
            state = read_state(self.client, [updates[i].entity for i in wanted])
            for i in wanted:
                out[i] = state.get(entry_key(updates[i].entity))
        return out

    def _write_batch(self, batch: list[Update], befores: list[Any], atomic: bool) -> None:
        use_atomic = atomic and self.client.grants_atomic_writes()
        try:
            self.client.write(batch, "ROLLBACK_ON_ERROR" if use_atomic
                              else "CONTINUE_ON_ERROR")
        except P4RuntimeWriteError as exc:
            # Per-update statuses: under CONTINUE_ON_ERROR the OK ones were applied.
            statuses = {i: code for i, code, _ in exc.errors}
            for i, (u, b) in enumerate(zip(batch, befores, strict=True)):
                code = statuses.get(i)
                if code == "OK" and not use_atomic:
                    self._journal(u, b)
                elif code is None and not use_atomic:
                    self._journal(u, b, certain=False)     # the target did not say
            failed = [(batch[i], code, msg) for i, code, msg in exc.errors
                      if code not in ("OK", "ABORTED") and i < len(batch)]
            raise self._aborted(failed, exc) from None
        except P4RuntimeClientError as exc:
            if use_atomic and _atomic_refused(exc):
                # The target does not grant atomic batches: learned for this session.
                self.client.atomic_writes = False
                self._write_batch(batch, befores, atomic)
                return
            if not _nothing_applied(exc):
                for u, b in zip(batch, befores, strict=True):
                    self._journal(u, b, certain=False)
            first = batch[0] if len(batch) == 1 else None
            failed = [(first, exc.code.name if exc.code else "ERROR", str(exc))] \
                if first is not None else []
            raise self._aborted(failed, exc) from None
        for u, b in zip(batch, befores, strict=True):
            self._journal(u, b)

    def _journal(self, update: Update, before: Any, certain: bool = True) -> None:
        if before is _ASSUMED_ABSENT:
            if not certain:
                self.unknown.append(update)
                return
            before = None
        self.steps.append(_Step(update, entry_key(update.entity), before, certain))

    # --- failing ---------------------------------------------------------------------------
    def abort(self, cause: BaseException) -> WriteAborted:
        """Roll back everything applied so far because of ``cause`` (not a refused
        update: e.g. a traffic-manager command failed); returns the error to raise."""
        return self._aborted([], cause)

    def _aborted(self, failed: list[tuple[Update, str, str]],
                 cause: BaseException) -> WriteAborted:
        applied = len([s for s in self.steps if s.certain])
        report = self.rollback()
        if failed:
            u, code, msg = failed[0]
            what = f"{Update.Type.Name(u.type)} {self.describe(u.entity)}"
            head = f"{self.client.address}: the switch refused {what}: {code}: {msg}"
            if len(failed) > 1:
                head += f" (+{len(failed) - 1} more refused)"
        else:
            head = str(cause)
        errors = getattr(cause, "errors", [])
        status = getattr(cause, "code", None)
        return WriteAborted(head + "; " + self._outcome(applied, report), errors,
                            failed, report, status)

    def _outcome(self, applied: int, report: RollbackReport) -> str:
        if not self.steps and not self.unknown:
            return "nothing was written"
        if report.complete:
            uncertain = len(self.steps) - applied
            extra = f" (and checked {uncertain} of unknown outcome)" if uncertain else ""
            return (f"rolled back the {applied} update(s) already applied{extra}: "
                    "the switch reads as before")
        if not report.verified:
            return (f"ROLLBACK NOT VERIFIED: {applied} update(s) had been applied and the "
                    f"switch could not be read back: {'; '.join(report.not_restored)}")
        shown = "; ".join(report.not_restored[:5])
        more = f" (+{len(report.not_restored) - 5} more)" if len(report.not_restored) > 5 \
            else ""
        return (f"ROLLBACK INCOMPLETE: {len(report.not_restored)} entit(ies) could not be "
                f"restored: {shown}{more}")

    def describe(self, entity: Entity) -> str:
        if self._describe is not None:
            return self._describe(entity)
        if self.index is not None:
            try:
                return entity_text(self.index, entity)
            except Exception:  # noqa: BLE001 - an id the P4Info lacks: show the raw entity
                pass
        return str(entity).replace("\n", " ").strip()

    # --- rolling back ----------------------------------------------------------------------
    def rollback(self) -> RollbackReport:
        """Undo every journaled update (newest first), read back, repair, report."""
        report = RollbackReport()
        report.not_restored = [f"{self.describe(u.entity)}: may have been inserted (the "
                               "write's outcome is unknown and the entry was not read "
                               "before)" for u in self.unknown]
        if not self.steps:
            report.verified = True
            return report
        failures: dict[tuple, str] = {}
        inverses: list[tuple[tuple, Update]] = []
        for step in reversed(self.steps):
            if step.certain:
                inv = inverse(step.update, step.before)
                if inv is not None:
                    inverses.append((step.key, inv))
        report.undone += self._write_repairs(inverses, failures)
        # What each touched key held before the transaction (its first step's "before").
        expected: dict[tuple, Entity | None] = {}
        samples: dict[tuple, Entity] = {}
        for step in self.steps:
            expected.setdefault(step.key, step.before)
            samples.setdefault(step.key, step.update.entity)
        for attempt in range(2):
            try:
                state = read_state(self.client, list(samples.values()))
            except P4RuntimeClientError as exc:
                report.not_restored += [f"{len(expected)} touched entities: cannot read "
                                        f"the switch: {exc}"]
                return report
            wrong = [k for k in expected if not _same(state.get(k), expected[k])]
            if not wrong or attempt == 1:
                break
            # One repair attempt, by state: make each key hold what it held before.
            order = [s.key for s in reversed(self.steps)]
            repairs = []
            for key in dict.fromkeys(k for k in order if k in wrong):
                fix = restore(state.get(key), expected[key])
                if fix is not None:
                    repairs.append((key, fix))
            report.undone += self._write_repairs(repairs, failures)
        report.verified = True
        for key in wrong:
            was, now = expected[key], state.get(key)
            text = self.describe(was if was is not None else (now or samples[key]))
            if was is None:
                state_text = "still present (it was absent before)"
            elif now is None:
                state_text = "missing (it was present before)"
            else:
                state_text = f"holds {self.describe(now)}"
            reason = failures.get(key)
            report.not_restored.append(f"{text}: {state_text}"
                                       + (f" ({reason})" if reason else ""))
        return report

    def _write_repairs(self, repairs: list[tuple[tuple, Update]],
                       failures: dict[tuple, str]) -> int:
        """Write inverse/repair updates in order (CONTINUE_ON_ERROR); the count applied."""
        done = 0
        for start in range(0, len(repairs), self.batch_size):
            chunk = repairs[start:start + self.batch_size]
            try:
                self.client.write([u for _, u in chunk], "CONTINUE_ON_ERROR")
                done += len(chunk)
            except P4RuntimeWriteError as exc:
                codes = {i: (c, m) for i, c, m in exc.errors}
                for i, (key, u) in enumerate(chunk):
                    code, msg = codes.get(i, ("UNKNOWN", "no status"))
                    if code == "OK":
                        done += 1
                    else:
                        failures[key] = (f"undo {Update.Type.Name(u.type)} refused: "
                                         f"{code}: {msg}")
            except P4RuntimeClientError as exc:
                for key, u in chunk:
                    failures[key] = f"undo {Update.Type.Name(u.type)} failed: {exc}"
        return done


def inverse(update: Update, before: Entity | None) -> Update | None:
    """The update that undoes ``update`` given what the switch held before it."""
    if update.type == Update.INSERT:
        return Update(type=Update.DELETE, entity=update.entity)
    if before is None:
        if update.type == Update.MODIFY and _is_default(update.entity):
            # A default entry whose old action is unknown: reset it to the program's.
            return Update(type=Update.MODIFY, entity=_default_reset(update.entity))
        return None                      # nothing was there: nothing to bring back
    if update.type == Update.DELETE:
        return Update(type=Update.INSERT, entity=before)
    return Update(type=Update.MODIFY, entity=before)


def restore(now: Entity | None, was: Entity | None) -> Update | None:
    """The update that makes a key that holds ``now`` hold ``was`` again."""
    if was is None:
        return None if now is None else Update(type=Update.DELETE, entity=now)
    if now is None:
        kind = Update.MODIFY if _is_default(was) else Update.INSERT
        return Update(type=kind, entity=was)
    return Update(type=Update.MODIFY, entity=was)


def _same(now: Entity | None, was: Entity | None) -> bool:
    if now is None or was is None:
        return now is None and was is None
    return entry_value(now) == entry_value(was)


def _is_default(entity: Entity) -> bool:
    return entity.WhichOneof("entity") == "table_entry" and entity.table_entry.is_default_action


def _default_reset(entity: Entity) -> Entity:
    out = Entity()
    out.table_entry.table_id = entity.table_entry.table_id
    out.table_entry.is_default_action = True
    return out


def _atomic_refused(exc: P4RuntimeClientError) -> bool:
    """A whole-request UNIMPLEMENTED (no per-update statuses) to an atomic batch."""
    return exc.code == grpc.StatusCode.UNIMPLEMENTED and not isinstance(exc, P4RuntimeWriteError)


def _nothing_applied(exc: P4RuntimeClientError) -> bool:
    """Whole-request refusals that happen before any update is looked at."""
    return exc.code in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.INVALID_ARGUMENT,
                        grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.UNIMPLEMENTED,
                        grpc.StatusCode.UNAUTHENTICATED)


# --- reading the state of touched entities ------------------------------------------------
def read_filter(entity: Entity) -> Any:
    """A Read filter covering ``entity``'s scope: its table (or the table's default
    entry), its action profile, or every clone session / multicast group. Scopes are
    wildcards because targets differ on reading one missing entity (an empty answer on
    BMv2, NOT_FOUND from softswitch for a clone session)."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        te = entity.table_entry
        return p4runtime_pb2.TableEntry(table_id=te.table_id,
                                        is_default_action=te.is_default_action)
    if kind == "action_profile_member":
        return p4runtime_pb2.ActionProfileMember(
            action_profile_id=entity.action_profile_member.action_profile_id)
    if kind == "action_profile_group":
        return p4runtime_pb2.ActionProfileGroup(
            action_profile_id=entity.action_profile_group.action_profile_id)
    if kind == "packet_replication_engine_entry":
        pre = p4runtime_pb2.PacketReplicationEngineEntry()
        if entity.packet_replication_engine_entry.HasField("clone_session_entry"):
            pre.clone_session_entry.session_id = 0
        else:
            pre.multicast_group_entry.multicast_group_id = 0
        return pre
    return entity      # counters, registers, ...: read the entity itself


def read_state(client: Any, entities: list[Entity]) -> dict[tuple, Entity]:
    """What the switch holds in the scopes of ``entities``, by :func:`entry_key`."""
    filters: dict[bytes, Any] = {}
    for e in entities:
        flt = read_filter(e)
        filters.setdefault(type(flt).__name__.encode() + flt.SerializeToString(
            deterministic=True), flt)
    state: dict[tuple, Entity] = {}
    for flt in filters.values():
        for got in client.read([flt]):
            state[entry_key(got)] = got
    return state


def write_all_or_nothing(client: Any, updates: Sequence[Update],
                         index: P4InfoIndex | None = None,
                         before: Sequence[Any] | None = None, atomic: bool = True) -> int:
    """One transaction of ``updates`` (see :class:`Transaction`). A single update is
    all-or-nothing by itself: it is written as it is (CONTINUE_ON_ERROR, which every
    target grants), without reading its previous state first."""
    if len(updates) == 1:
        tx = Transaction(client, index)
        try:
            client.write(list(updates), "CONTINUE_ON_ERROR")
        except P4RuntimeWriteError as exc:
            failed = [(updates[i], code, msg) for i, code, msg in exc.errors
                      if code != "OK" and i == 0]
            raise tx._aborted(failed, exc) from None
        return 1
    return Transaction(client, index).write(updates, before, atomic)


__all__ = ["UNKNOWN", "RollbackReport", "Transaction", "WriteAborted", "inverse",
           "read_state", "restore", "write_all_or_nothing"]
