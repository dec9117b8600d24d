"""The small-Write fast path answers exactly as the general path (issue 11, batch 1).

``p4runtime.write.Writes.write`` (the one entrance of every Write) first offers a
Write's bytes to its small-batch shortcut, which applies the common Write of up to
``SMALL_UPDATES``
plain table entries from the default role's primary itself, up to the first update it
does not take (the general path takes the rest), and declines anything else with
nothing changed. Here
every request runs on two devices with the same program and the same primary: once
through ``Write`` (as the server answers it) and once with the shortcut off
(the general path alone). The answers (response, code, details, per-update errors) and what Read
returns afterwards must be identical, for valid updates, for every kind of invalid
update, and for every header the fast path must not take; and the fast path must have
taken exactly the requests it is for.
"""

from __future__ import annotations

import gc

import grpc
import pytest
from p4.v1 import p4runtime_pb2
from test_p4runtime_plain_writes import PROGRAM, Dev, acl, corpus, route, upd

from softswitch.daemon.rpc import unary
from softswitch.daemon.rpc.server import P4RuntimeServicer
from softswitch.p4runtime import encoding, entrywire, write
from softswitch.p4runtime import errors as p4errors
from softswitch.p4runtime.arbitration import Connection
from softswitch.p4runtime.write import LOOP_WRITE_SLICE, Writes

WriteRequest = p4runtime_pb2.WriteRequest
Update = p4runtime_pb2.Update
INSERT, MODIFY, DELETE = Update.INSERT, Update.MODIFY, Update.DELETE
ELECTION = (3 << 64) | 5                  # both halves of the 128-bit id in play


class Target:
    """A device with a primary controller (election id ELECTION) and a servicer."""

    def __init__(self, program_path: str, general_only: bool) -> None:
        self.dev = Dev(program_path)
        device = self.dev.device
        update = p4runtime_pb2.MasterArbitrationUpdate(device_id=0)
        update.election_id.high, update.election_id.low = ELECTION >> 64, ELECTION & (
            (1 << 64) - 1)
        device.arbiter.arbitrate(Connection(send=lambda message: None), update)
        servicer = P4RuntimeServicer(device)
        if general_only:
            servicer.writes = Writes(device, shortcut=False)
        self.taken = 0          # requests the fast path applied updates of
        self.applied = 0        # updates it applied
        small = servicer.writes._shortcut  # noqa: SLF001

        def counted(data: bytes) -> tuple:
            taken = small(data)
            self.taken += taken.applied > 0
            self.applied += taken.applied
            return taken
        servicer.writes._shortcut = counted    # type: ignore[method-assign]  # noqa: SLF001
        self.handler = (lambda data: data, servicer.Write, encoding.serialize)

    def write(self, data: bytes) -> tuple:
        """(response, code, details, trailing metadata), as the lane answers it."""
        return unary.run_handler(self.handler, data)


@pytest.fixture
def targets(tmp_path):
    path = tmp_path / "small.p4"
    path.write_text(PROGRAM)
    return Target(str(path), general_only=False), Target(str(path), general_only=True)


def request(*updates: Update, election: int | None = ELECTION, **header) -> bytes:
    req = WriteRequest(device_id=header.pop("device_id", 0), **header)
    if election is not None:
        req.election_id.high, req.election_id.low = election >> 64, election & ((1 << 64) - 1)
    req.updates.extend(updates)
    return req.SerializeToString()


def _field(number: int, payload: bytes) -> bytes:
    return encoding.field(bytes([number << 3 | 2]), payload)


def headers(ids: dict) -> list[tuple[str, bytes]]:
    """A valid insert in every request header the fast path must leave to the general
    path (named for the failure message)."""
    ok = upd(INSERT, route(ids, 0x200000000000))
    plain = request(ok)
    one = ok.SerializeToString()
    election = _field(3, b"\x08\x03\x10\x05")
    return [
        ("other device", request(ok, device_id=1)),
        ("no election id", request(ok, election=None)),
        ("other election id (low)", request(ok, election=ELECTION + 1)),
        ("other election id (high)", request(ok, election=ELECTION + (1 << 64))),
        ("a role", request(ok, role="ops")),
        ("a role id", request(ok, role_id=3)),
        ("rollback on error", request(ok, atomicity=WriteRequest.ROLLBACK_ON_ERROR)),
        ("dataplane atomic", request(ok, atomicity=WriteRequest.DATAPLANE_ATOMIC)),
        ("unknown atomicity", request(ok, atomicity=7)),
        ("more updates than the fast path takes",
         request(*(upd(INSERT, route(ids, (0x21 + i) << 40))
                   for i in range(write.SMALL_UPDATES + 1)))),
        ("no update", request()),
        ("device_id twice", b"\x08\x00" + plain),
        ("election_id in two parts", _field(3, b"\x08\x03") + _field(3, b"\x10\x05")
         + _field(4, one)),
        ("an unknown field", plain + b"\x48\x01"),
        ("an unknown election field", _field(3, b"\x08\x03\x10\x05\x18\x01") + _field(4, one)),
        ("a varint past 64 bits", b"\x08" + b"\xff" * 9 + b"\x7f" + election + _field(4, one)),
        ("a truncated update", election + b"\x22\x40" + one[:10]),
        ("a truncated varint", election + _field(4, one) + b"\x08\xff"),
        ("wire type 1 for device_id", b"\x09" + bytes(8) + election + _field(4, one)),
    ]


def test_fast_and_general_paths_answer_alike(targets):
    fast, general = targets
    assert entrywire.native() is not None, "the C decoder must build here"
    cases = [(f"update {i}", request(u)) for i, u in enumerate(corpus(fast.dev.ids))]
    cases += headers(fast.dev.ids)
    taken, succeeded = [], []
    for name, data in cases:
        before = fast.taken
        got, want = fast.write(data), general.write(data)
        assert got == want, name
        assert fast.dev.read() == general.dev.read(), f"after {name}"
        if fast.taken > before:
            taken.append(name)
        if want[1] == grpc.StatusCode.OK:
            succeeded.append(name)
    assert general.taken == 0
    assert fast.dev.views() == general.dev.views()
    # Every valid single update of the corpus went the fast way (inserts into both
    # tables, one with an idle timeout, one with metadata, modifies, deletes), and
    # nothing else did: no header variant, no failed update.
    assert taken == [name for name in succeeded if name.startswith("update")], taken
    assert len(taken) >= 10, taken


def test_fast_path_leaves_errors_to_the_general_path(targets):
    fast, general = targets
    ids = fast.dev.ids
    entry = route(ids, 0x300000000000)
    for data in (request(upd(INSERT, entry)), request(upd(INSERT, entry)),   # ALREADY_EXISTS
                 request(upd(MODIFY, route(ids, 0x310000000000))),          # NOT_FOUND
                 request(upd(DELETE, entry)), request(upd(DELETE, entry))):
        assert fast.write(data) == general.write(data)
    assert fast.taken == 2                     # the first insert and the first delete
    assert fast.dev.read() == general.dev.read() == []


def test_small_batches_answer_as_the_general_path(targets):
    """Batches of 2 to SMALL_UPDATES updates: all valid (the fast path applies them all),
    or with a failing or uncommon update midway (it applies those before it, the
    general path the rest, reporting the error at its index in the whole batch), or
    with one it does not take first (the general path takes the whole batch)."""
    fast, general = targets
    ids = fast.dev.ids
    batch = [upd(INSERT, route(ids, (0x60 + i) << 40)) for i in range(5)]
    full = [upd(INSERT, route(ids, (0x70 + i) << 40))
            for i in range(write.SMALL_UPDATES)]
    cases = [
        ("five inserts", batch, 5),
        ("a full batch", full, write.SMALL_UPDATES),
        ("modifies", [upd(MODIFY, route(ids, (0x60 + i) << 40, port=7)) for i in range(5)], 5),
        ("an existing entry third", [upd(INSERT, route(ids, 0x800000000000)),
                                     upd(INSERT, route(ids, 0x810000000000)), batch[0],
                                     upd(INSERT, route(ids, 0x820000000000))], 2),
        ("the same entry twice", [upd(INSERT, route(ids, 0x830000000000))] * 2, 1),
        ("an acl entry among routes", [upd(INSERT, route(ids, 0x840000000000)),
                                       upd(INSERT, acl(ids, 0x0800)),
                                       upd(INSERT, route(ids, 0x850000000000))], 3),
        ("a missing entry first", [upd(DELETE, route(ids, 0x900000000000)), batch[1]], 0),
        ("deletes, one missing", [upd(DELETE, batch[1].entity.table_entry),
                                  upd(DELETE, route(ids, 0x910000000000)),
                                  upd(DELETE, batch[2].entity.table_entry)], 1),
        ("deletes", [upd(DELETE, u.entity.table_entry) for u in full], len(full)),
    ]
    for name, updates, fast_applied in cases:
        before = fast.applied
        data = request(*updates)
        assert fast.write(data) == general.write(data), name
        assert fast.dev.read() == general.dev.read(), f"after {name}"
        assert fast.applied - before == fast_applied, name
    assert general.taken == 0
    assert fast.dev.views() == general.dev.views()


def _fast_and_a_new_pipeline(tmp_path) -> tuple:
    """A fast-path target, its pipeline, and a second one compiled from the same
    program, not set: the pipeline-set tests set it at a checkpoint."""
    from softswitch.p4runtime import pipeline

    path = tmp_path / "small.p4"
    path.write_text(PROGRAM)
    fast = Target(str(path), general_only=False)
    old = fast.dev.device.current
    new = fast.dev.device._wrap(old.config,  # noqa: SLF001
                                pipeline.compile_file(str(path), {}))
    return fast, old, new


def test_a_pipeline_set_before_the_rest_aborts_it(tmp_path):
    """A batch whose first updates the fast path applied and whose rest the general
    path takes: a pipeline set in between (at the Write's checkpoint, where the port
    loop lets other work in) aborts the rest, as between the general path's slices."""
    fast, old, new = _fast_and_a_new_pipeline(tmp_path)
    ids, device = fast.dev.ids, fast.dev.device
    taken = upd(INSERT, route(ids, 0xA00000000000))
    assert fast.write(request(taken))[1] == grpc.StatusCode.OK

    def set_pipeline() -> None:
        device.current = new
    device.checkpoint = set_pipeline
    data = request(upd(INSERT, route(ids, 0xA10000000000)), taken,
                   upd(INSERT, route(ids, 0xA20000000000)))
    response, code, details, trailing = fast.write(data)
    assert fast.applied == 2 and code == grpc.StatusCode.UNKNOWN, details
    errors = [e.canonical_code for e in p4errors.details_in(trailing)]
    assert errors == [grpc.StatusCode.OK.value[0]] + [grpc.StatusCode.ABORTED.value[0]] * 2
    assert len(old.runtime.tables._records[ids["I.route"]]) == 2    # noqa: SLF001
    assert not new.runtime.tables._records[ids["I.route"]]         # noqa: SLF001


def test_on_the_port_loop_a_batch_is_applied_a_slice_at_a_time(targets):
    """Where the port loop answers the Write (Device.checkpointing), the fast path
    applies LOOP_WRITE_SLICE updates per hold of the device lock, with a checkpoint
    outside the lock once the header is read and before each slice (the loop's own
    comes before the reply is sent: test_p4runtime_frontend), so an urgent frame waits
    for a slice, not for the batch; the answers are still the
    general path's (which answers off the loop here), a failing update included."""
    fast, general = targets
    ids, device = fast.dev.ids, fast.dev.device
    assert LOOP_WRITE_SLICE == 4
    held: list[bool] = []
    device.checkpointing = lambda: True
    device.checkpoint = lambda: held.append(device.lock._is_owned())  # noqa: SLF001
    data = request(*(upd(INSERT, route(ids, (0xB0 + i) << 40)) for i in range(10)))
    assert fast.write(data) == general.write(data)
    assert fast.applied == 10 and held == [False] * (1 + 3)
    held.clear()
    # an existing entry opens the second slice: the first is in, the general path
    # reports the error at its index and applies the rest (from its own checkpoint)
    mixed = [upd(INSERT, route(ids, (0xC0 + i) << 40)) for i in range(4)]
    mixed += [upd(INSERT, route(ids, 0xB00000000000))]
    mixed += [upd(INSERT, route(ids, (0xD0 + i) << 40)) for i in range(3)]
    data = request(*mixed)
    assert fast.write(data) == general.write(data)
    assert fast.dev.read() == general.dev.read()
    # the header, before slices 1 and 2; the general path's before and after its hold
    assert fast.applied == 10 + 4 and held == [False] * (1 + 2 + 2)
    device.checkpointing = lambda: False             # in process: one hold, no checkpoint
    held.clear()
    data = request(*(upd(INSERT, route(ids, (0xE0 + i) << 40)) for i in range(10)))
    assert fast.write(data) == general.write(data)
    assert fast.applied == 10 + 4 + 10 and held == []
    assert fast.dev.views() == general.dev.views()


def test_a_pipeline_set_between_two_slices_aborts_the_rest(tmp_path):
    """On the port loop a pipeline set at a checkpoint between two slices ends the
    batch there: the updates after it are ABORTED, and none goes to the new pipeline."""
    fast, old, new = _fast_and_a_new_pipeline(tmp_path)
    ids, device = fast.dev.ids, fast.dev.device
    seen: list[int] = []

    def set_pipeline_before_the_second_slice() -> None:
        seen.append(1)
        if len(seen) == 3:            # after the header, before slice 1, before slice 2
            device.current = new
    device.checkpointing = lambda: True
    device.checkpoint = set_pipeline_before_the_second_slice
    data = request(*(upd(INSERT, route(ids, (0xF0 + i) << 40)) for i in range(10)))
    response, code, details, trailing = fast.write(data)
    assert fast.applied == 4 and code == grpc.StatusCode.UNKNOWN, details
    errors = [e.canonical_code for e in p4errors.details_in(trailing)]
    assert errors == [grpc.StatusCode.OK.value[0]] * 4 + [grpc.StatusCode.ABORTED.value[0]] * 6
    assert len(old.runtime.tables._records[ids["I.route"]]) == 4    # noqa: SLF001
    assert not new.runtime.tables._records[ids["I.route"]]         # noqa: SLF001


def test_primary_spans_reads_only_the_common_header():
    mod = entrywire.native()
    assert mod is not None
    one = upd(INSERT, p4runtime_pb2.TableEntry(table_id=1)).SerializeToString()
    data = request(Update.FromString(one))
    high, low = ELECTION >> 64, ELECTION & ((1 << 64) - 1)
    spans = mod.primary_spans(data, 0, high, low, 1)
    assert spans is not None and len(spans) == 1
    start, end = spans[0]
    assert data[start:end] == one
    assert mod.primary_spans(data, 0, high, low + 1, 1) is None
    assert mod.primary_spans(data, 1, high, low, 1) is None
    two = request(Update.FromString(one), Update.FromString(one))
    assert mod.primary_spans(two, 0, high, low, 1) is None
    assert len(mod.primary_spans(two, 0, high, low, 2)) == 2
    for bad in (b"", b"\x00", b"\x08", b"\xff" * 11, data[:-1], data + b"\x22\x05ab",
                b"\x07" + data):
        assert mod.primary_spans(bad, 0, high, low, 1) is None, bad


def test_fast_path_freezes_what_it_adds_as_the_general_path_does(targets):
    """With the server's reclaimer, a Write's new objects go to the collector's
    permanent generation (runtime._collector_paused): passes never walk them."""
    ids = targets[0].dev.ids
    data = request(upd(INSERT, route(ids, 0x400000000000)))
    for target in targets:
        device = target.dev.device
        device.start_reclaimer()
        try:
            assert target.write(data)[1] == grpc.StatusCode.OK
        finally:
            device.stop_reclaimer()
        (record,) = device.current.runtime.tables._records[ids["I.route"]].values()
        tracked = {id(o) for generation in range(3) for o in gc.get_objects(generation)}
        assert gc.is_tracked(record) and id(record) not in tracked, target
    assert targets[0].taken == 1 and targets[1].taken == 0


def test_fast_path_follows_the_primary_as_streams_come_and_go(targets):
    fast, _ = targets
    arbiter = fast.dev.device.arbiter
    ids = fast.dev.ids
    entries = iter(route(ids, (0x50 + i) << 40) for i in range(8))

    def write(election: int) -> grpc.StatusCode:
        return fast.write(request(upd(INSERT, next(entries)), election=election))[1]

    def arbitrate(conn: Connection, election: int) -> None:
        update = p4runtime_pb2.MasterArbitrationUpdate(device_id=0)
        update.election_id.high, update.election_id.low = election >> 64, election & (
            (1 << 64) - 1)
        arbiter.arbitrate(conn, update)

    def primary_is(election: int | None) -> None:
        primary = arbiter.primary("")
        assert arbiter.default_election == (None if primary is None
                                             else primary.election_id) == election

    primary_is(ELECTION)
    newer = Connection(send=lambda message: None)
    arbitrate(newer, ELECTION + 10)
    primary_is(ELECTION + 10)
    assert write(ELECTION) == grpc.StatusCode.PERMISSION_DENIED
    taken = fast.taken
    assert write(ELECTION + 10) == grpc.StatusCode.OK and fast.taken == taken + 1
    arbitrate(newer, ELECTION + 20)                  # the same stream, a new id
    primary_is(ELECTION + 20)
    assert write(ELECTION + 10) == grpc.StatusCode.PERMISSION_DENIED
    arbiter.disconnect(newer)
    primary_is(ELECTION)
    assert write(ELECTION) == grpc.StatusCode.OK and fast.taken == taken + 2
    for conn in [c for state in arbiter._roles.values() for c in state.connections]:
        arbiter.disconnect(conn)
    primary_is(None)
    assert write(ELECTION) == grpc.StatusCode.PERMISSION_DENIED
    assert fast.taken == taken + 2
