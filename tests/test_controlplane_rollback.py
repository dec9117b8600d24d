"""controlplane.p4rt.rollback: the controller's own all-or-nothing writes.

Against an in-memory fake target that applies CONTINUE_ON_ERROR batches the way
BMv2 does (and can be told to refuse chosen updates, or the undo of one), and against
a live softswitch with the self-rollback path forced (``atomic_writes=False``) and
with its atomic batches.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from controlplane.p4rt import Client, EntityBuilder, P4InfoIndex
from controlplane.p4rt.client import update
from controlplane.p4rt.describe import entry_key, entry_value
from controlplane.p4rt.entities import to_entity
from controlplane.p4rt.errors import P4RuntimeClientError, P4RuntimeWriteError
from controlplane.p4rt.rollback import (
    UNKNOWN,
    Transaction,
    WriteAborted,
    inverse,
    write_all_or_nothing,
)
from softswitch.frontend.compiler import compile_program
from softswitch.p4info import generate

ROOT = Path(__file__).resolve().parents[1]
L3 = ROOT / "p4src/samples/l3_basic.p4"
Update = p4runtime_pb2.Update


@pytest.fixture(scope="module")
def index() -> P4InfoIndex:
    return P4InfoIndex(generate(compile_program(str(L3))))


def route(b: EntityBuilder, net: str, port: int = 1, drop: bool = False):
    if drop:
        return to_entity(b.table_entry("ipv4_lpm", match={"dst_addr": net}, action="drop"))
    return to_entity(b.table_entry("ipv4_lpm", match={"dst_addr": net},
                                   action="set_next_hop",
                                   params={"port": port, "src_mac": "00:aa:00:00:00:01",
                                           "dst_mac": "00:00:00:00:00:02"}))


class FakeTarget:
    """Keyed state; CONTINUE_ON_ERROR like BMv2 (ROLLBACK_ON_ERROR refused unless
    ``atomic``); ``refuse`` / ``refuse_undo``: keys whose (first / undo) write fails."""

    address = "fake:1"

    def __init__(self, atomic: bool = False) -> None:
        self.state: dict[tuple, p4runtime_pb2.Entity] = {}
        self.atomic = atomic
        self.atomic_writes: bool | None = None
        self.refuse: set[tuple] = set()
        self.refuse_undo: set[tuple] = set()
        self.writes: list[tuple[str, list[str]]] = []
        self.lose_answer_at: int | None = None     # that write is applied, then UNAVAILABLE
        self._seen: set[tuple] = set()

    def grants_atomic_writes(self) -> bool:
        # No probe: like a client whose probe was inconclusive, the first atomic batch
        # decides (an UNIMPLEMENTED answer makes the transaction set it to False).
        return True if self.atomic_writes is None else self.atomic_writes

    def _apply(self, u: Update) -> tuple[str, str]:
        key = entry_key(u.entity)
        undoing = key in self._seen
        self._seen.add(key)
        if key in self.refuse and not undoing:
            return "RESOURCE_EXHAUSTED", "refused on purpose"
        if key in self.refuse_undo and undoing:
            self.refuse_undo.discard(key)            # once
            return "RESOURCE_EXHAUSTED", "undo refused on purpose"
        have = key in self.state
        if u.type == Update.INSERT:
            if have:
                return "ALREADY_EXISTS", "exists"
            self.state[key] = u.entity
        elif u.type == Update.MODIFY:
            if not have:
                return "NOT_FOUND", "missing"
            self.state[key] = u.entity
        else:
            if not have:
                return "NOT_FOUND", "missing"
            del self.state[key]
        return "OK", ""

    def write(self, updates: list[Update], atomicity: str = "CONTINUE_ON_ERROR") -> None:
        self.writes.append((atomicity, [Update.Type.Name(u.type) for u in updates]))
        if atomicity != "CONTINUE_ON_ERROR" and not self.atomic:
            raise P4RuntimeClientError("fake: UNIMPLEMENTED: atomic",
                                       grpc.StatusCode.UNIMPLEMENTED)
        saved = dict(self.state)
        results = [self._apply(u) for u in updates]
        if self.lose_answer_at == len(self.writes) - 1:
            raise P4RuntimeClientError("fake: Write failed: UNAVAILABLE: connection reset",
                                       grpc.StatusCode.UNAVAILABLE)
        if all(code == "OK" for code, _ in results):
            return
        if atomicity != "CONTINUE_ON_ERROR":
            self.state = saved
            results = [r if r[0] != "OK" else ("ABORTED", "rolled back") for r in results]
        raise P4RuntimeWriteError("fake: Write failed", [
            (i, code, msg) for i, (code, msg) in enumerate(results)],
            grpc.StatusCode.UNKNOWN)

    def read(self, filters):
        for f in filters:
            assert isinstance(f, p4runtime_pb2.TableEntry)
            for e in self.state.values():
                if e.table_entry.table_id == f.table_id and \
                        e.table_entry.is_default_action == f.is_default_action:
                    yield e

    def snapshot(self) -> dict[tuple, tuple]:
        return {k: entry_value(e) for k, e in self.state.items()}


def test_inverse_updates() -> None:
    e, old = p4runtime_pb2.Entity(), p4runtime_pb2.Entity()
    e.table_entry.table_id, old.table_entry.table_id = 1, 1
    assert inverse(Update(type=Update.INSERT, entity=e), None).type == Update.DELETE
    old.table_entry.priority = 9
    back = inverse(Update(type=Update.DELETE, entity=e), old)
    assert back.type == Update.INSERT and back.entity == old
    back = inverse(Update(type=Update.MODIFY, entity=e), old)
    assert back.type == Update.MODIFY and back.entity == old
    e.table_entry.is_default_action = True
    reset = inverse(Update(type=Update.MODIFY, entity=e), None)
    assert reset.type == Update.MODIFY and not reset.entity.table_entry.HasField("action")


def _mixed(index: P4InfoIndex, target: FakeTarget) -> tuple[list[Update], dict[tuple, tuple]]:
    """A switch with three routes, a transaction that deletes one, modifies one, inserts
    two, and the switch's snapshot before it."""
    b = EntityBuilder(index)
    for net in ("10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16"):
        e = route(b, net)
        target.state[entry_key(e)] = e
    return [update("DELETE", route(b, "10.1.0.0/16")),
            update("MODIFY", route(b, "10.2.0.0/16", drop=True)),
            update("INSERT", route(b, "10.4.0.0/16")),
            update("INSERT", route(b, "10.5.0.0/16"))], target.snapshot()


def test_refusal_in_a_later_batch_undoes_every_earlier_one(index: P4InfoIndex) -> None:
    target = FakeTarget()
    updates, before = _mixed(index, target)
    target.refuse.add(entry_key(updates[3].entity))
    tx = Transaction(target, index, batch_size=2)
    with pytest.raises(WriteAborted) as info:
        tx.write(updates)                      # priors read first: no ``before`` given
    assert target.snapshot() == before
    err = info.value
    assert err.rollback.complete and err.rollback.undone == 3
    text = str(err)
    assert "the switch refused INSERT L3Ingress.ipv4_lpm hdr.ipv4.dst_addr=10.5.0.0/16" in text
    assert "RESOURCE_EXHAUSTED: refused on purpose" in text
    assert "rolled back the 3 update(s) already applied: the switch reads as before" in text
    # the atomic mode was asked for once, refused, then never again
    assert [a for a, _ in target.writes[:2]] == ["ROLLBACK_ON_ERROR", "CONTINUE_ON_ERROR"]
    assert all(a == "CONTINUE_ON_ERROR" for a, _ in target.writes[2:])
    # inverses newest first (in batches of 2): DELETE 10.4, MODIFY 10.2 back, INSERT 10.1
    assert target.writes[-2:] == [("CONTINUE_ON_ERROR", ["DELETE", "MODIFY"]),
                                  ("CONTINUE_ON_ERROR", ["INSERT"])]


def test_failure_across_write_calls_and_abort(index: P4InfoIndex) -> None:
    target = FakeTarget()
    updates, before = _mixed(index, target)
    tx = Transaction(target, index)
    tx.write(updates[:2], [target.state[entry_key(updates[0].entity)],
                           target.state[entry_key(updates[1].entity)]])
    tx.write(updates[2:])
    assert target.snapshot() != before
    err = tx.abort(P4RuntimeClientError("queue command refused"))
    assert target.snapshot() == before
    assert str(err).startswith("queue command refused; rolled back the 4 update(s)")


def test_undo_that_fails_is_repaired_or_reported(index: P4InfoIndex) -> None:
    target = FakeTarget()
    updates, before = _mixed(index, target)
    target.refuse.add(entry_key(updates[3].entity))
    # the undo of the MODIFY is refused once: the repair pass restores it
    target.refuse_undo.add(entry_key(updates[1].entity))
    with pytest.raises(WriteAborted) as info:
        Transaction(target, index).write(updates)
    assert target.snapshot() == before and info.value.rollback.complete
    assert target.writes[-1] == ("CONTINUE_ON_ERROR", ["MODIFY"])     # the repair


def test_unrestorable_entity_is_named(index: P4InfoIndex) -> None:
    target = FakeTarget()
    updates, _ = _mixed(index, target)
    target.refuse.add(entry_key(updates[3].entity))

    # the deleted route can never be inserted again
    original = target._apply
    deleted = entry_key(updates[0].entity)

    def apply(u: Update):
        if u.type == Update.INSERT and entry_key(u.entity) == deleted:
            return "RESOURCE_EXHAUSTED", "no room"
        return original(u)

    target._apply = apply
    with pytest.raises(WriteAborted) as info:
        Transaction(target, index).write(updates)
    text = str(info.value)
    assert "ROLLBACK INCOMPLETE: 1 entit(ies) could not be restored" in text
    assert "hdr.ipv4.dst_addr=10.1.0.0/16" in text and "missing (it was present before)" \
        in text and "undo INSERT refused: RESOURCE_EXHAUSTED: no room" in text
    assert not info.value.rollback.complete


@pytest.mark.parametrize("known", [True, False])
def test_lost_answer_is_checked_by_reading(index: P4InfoIndex, known: bool) -> None:
    """A batch whose answer is lost (applied, then UNAVAILABLE): its keys are compared
    with their state before and repaired; an INSERT whose previous state was never read
    cannot be, and is reported as possibly inserted."""
    target = FakeTarget()
    updates, before = _mixed(index, target)
    target.lose_answer_at = 2          # the second batch (the two INSERTs)
    befores = [target.state[entry_key(updates[0].entity)],
               target.state[entry_key(updates[1].entity)]]
    befores += [None, None] if known else [UNKNOWN, UNKNOWN]
    with pytest.raises(WriteAborted) as info:
        Transaction(target, index, batch_size=2).write(updates, befores)
    text = str(info.value)
    assert "UNAVAILABLE: connection reset" in text
    if known:
        assert target.snapshot() == before and info.value.rollback.complete
        assert "(and checked 2 of unknown outcome)" in text
    else:
        assert "ROLLBACK INCOMPLETE: 2 entit(ies) could not be restored" in text
        assert "10.4.0.0/16 -> L3Ingress.set_next_hop(port=1, src_mac=00:aa:00:00:00:01, " \
               "dst_mac=00:00:00:00:00:02): may have been inserted" in text
        # what was known is restored all the same
        assert {k: v for k, v in target.snapshot().items() if k in before} == before


def test_atomic_target_only_earlier_batches_are_undone(index: P4InfoIndex) -> None:
    target = FakeTarget(atomic=True)
    updates, before = _mixed(index, target)
    target.refuse.add(entry_key(updates[3].entity))
    with pytest.raises(WriteAborted) as info:
        Transaction(target, index, batch_size=3).write(updates)
    assert target.snapshot() == before
    assert info.value.rollback.undone == 3          # the first batch; the second: atomic
    assert [a for a, _ in target.writes[:2]] == ["ROLLBACK_ON_ERROR"] * 2


def test_single_update_is_written_as_is(index: P4InfoIndex) -> None:
    b = EntityBuilder(index)
    target = FakeTarget()
    e = route(b, "10.9.0.0/16")
    assert write_all_or_nothing(target, [update("INSERT", e)], index) == 1
    with pytest.raises(WriteAborted, match="the switch refused INSERT .*10.9.0.0/16.*"
                       "ALREADY_EXISTS.*nothing was written"):
        write_all_or_nothing(target, [update("INSERT", e)], index)
    assert target.writes[0][0] == "CONTINUE_ON_ERROR"


# --- live softswitch ---------------------------------------------------------------------------
def _read(client: Client, b: EntityBuilder) -> list[str]:
    flt = [b.table_wildcard("ipv4_lpm"),
           p4runtime_pb2.TableEntry(table_id=b.index.table("ipv4_lpm").preamble.id,
                                    is_default_action=True)]
    return sorted(str(entry_value(e)) + str(entry_key(e)) for e in client.read(flt))


@pytest.mark.parametrize("atomic", [None, False], ids=["atomic", "self-rollback"])
def test_softswitch_rollback_of_insert_modify_delete_and_default(softswitch_server, index,
                                                                  atomic) -> None:
    b = EntityBuilder(index)
    with Client(softswitch_server, 1, atomic_writes=atomic) as c:
        c.set_pipeline(index.p4info, L3.read_bytes())
        c.write_batches([update("INSERT", route(b, f"10.{i}.0.0/16")) for i in (1, 2, 3)])
        before = _read(c, b)
        default = b.table_entry("ipv4_lpm", default=True, action="drop")
        updates = [update("DELETE", route(b, "10.1.0.0/16")),
                   update("MODIFY", route(b, "10.2.0.0/16", drop=True)),
                   update("MODIFY", default),
                   update("INSERT", route(b, "10.4.0.0/16")),
                   update("INSERT", route(b, "10.3.0.0/16"))]      # exists: refused
        tx = Transaction(c, index, batch_size=2)
        with pytest.raises(WriteAborted) as info:
            tx.write(updates, [UNKNOWN] * len(updates))
        assert "ALREADY_EXISTS" in str(info.value)
        assert "the switch reads as before" in str(info.value)
        assert _read(c, b) == before
        assert c.grants_atomic_writes() is (atomic is None)
