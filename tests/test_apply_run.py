"""Runs of C-checked updates applied in one C call agree with the Python path (issue 11).

Outside atomic batches, ``TableEntries.apply_run`` hands a run of checked plain updates
of one table to ``entrywire.apply``, which adds, modifies and deletes the server's
records and the switch's deferred rows itself, stopping at the first update it does not
take (which then goes through ``write_plain`` or the general path). Here two devices
with the same program take the same random batches — valid and invalid inserts,
modifies and deletes on an LPM and a ternary/range table, idle timeouts, metadata,
updates that are not plain, now and then a view that makes the switch build its
entries — once with the C runs and once with them turned off: per-update codes and
messages, the handles behind every key, the deferred rows, Read, the interpreter's
views and the packets the C tables forward must be the same throughout.
"""

from __future__ import annotations

import random

import pytest
from p4.v1 import p4runtime_pb2
from test_p4runtime_plain_writes import PROGRAM, Dev, acl, route, upd

from softswitch.memory import reclaim
from softswitch.p4runtime import entrywire

WriteRequest = p4runtime_pb2.WriteRequest
Update = p4runtime_pb2.Update
INSERT, MODIFY, DELETE = Update.INSERT, Update.MODIFY, Update.DELETE


class Counted(Dev):
    """A device whose C runs are counted, or turned off (every update one by one)."""

    def __init__(self, path: str, runs: bool) -> None:
        super().__init__(path)
        self.applied = 0
        tables = self.device.current.runtime.tables
        run = tables.apply_run

        def counted(items: list, start: int) -> int:
            end = run(items, start) if runs else start
            self.applied += end - start
            return end
        tables.apply_run = counted

    def handles(self) -> dict:
        """Per table, the handle behind every key, and the switch's deferred rows
        (handle -> match, action name, args, priority, order)."""
        runtime = self.device.current.runtime
        switch = self.device.current.switch
        out = {}
        for name in ("I.route", "I.acl"):
            tid = self.ids[name]
            state = switch.table_state(name)
            rows = {h: (r[1], r[2].name, tuple(r[3]), r[4], r[5])
                    for h, r in state._rows.items()}
            records = runtime.tables._records[tid]
            out[name] = ({k: (r.handle, r.stored, r.plain, r.idle_timeout_ns, r.call.name,
                              tuple(r.call.args)) for k, r in records.items()},
                         rows, state._next_handle, state._order,
                         sorted(repr(r.key) for r in runtime.tables._timed[tid].values()))
        return out

    def forwards(self, dsts: list[int]) -> list:
        """What the C pipeline does with a frame to each destination MAC."""
        switch = self.device.current.switch
        return [sorted(switch.inject_raw(1, d.to_bytes(6, "big") + bytes(6) + b"\x08\x00"
                                         + bytes(46))) for d in dsts]


@pytest.fixture
def pair(tmp_path):
    path = tmp_path / "plain.p4"
    path.write_text(PROGRAM)
    return Counted(str(path), runs=True), Counted(str(path), runs=False)


def _entry(ids: dict, rng: random.Random, n: int) -> p4runtime_pb2.TableEntry:
    """Entry ``n`` of a small pool (so that keys collide), with a random action."""
    version = rng.randrange(1, 400)
    if n % 3:
        params = None
        action = "I.fwd"
        pick = rng.random()
        if pick < 0.1:
            action, params = "I.drop", []
        elif pick < 0.15:
            action, params = "I.miss", []                # @defaultonly: refused
        elif pick < 0.2:
            params = [(1, b"\x7f\xff")]                  # 9-bit port too wide, no mac
        te = route(ids, (n << 24) | (rng.randrange(2) << 40), plen=rng.choice((24, 24, 32)),
                   port=version % 512, action=action, params=params,
                   idle=rng.choice((0, 0, 0, 5_000_000)))
    else:
        te = acl(ids, 0x0800 + n % 4, src=(n << 8, 0xFFFF00),
                 dst=rng.choice((None, (n, n + 7))), tag=rng.choice((None, n % 7)),
                 priority=rng.choice((n + 1, n + 2)), t=version % 4096)
    if rng.random() < 0.05:
        te.controller_metadata = version                 # kept as written
    if rng.random() < 0.03:
        te.table_id = 0x0FFFFFFF                         # not plain: the general path
    return te


@pytest.mark.parametrize("held", [False, True])
def test_c_runs_agree_with_the_python_path(pair, held):
    """``held``: the fast device writes as the unary lane does, what each batch drops
    kept until it is over (reclaim.held)."""
    fast, slow = pair
    if held:
        write = fast.write

        def write_held(*args):
            with reclaim.holding() as later:
                got = write(*args)
                assert later                     # at least the batch's decoded slice
            return got
        fast.write = write_held
    assert entrywire.native() is not None, "the C decoder must build here"
    ids = fast.ids
    rng = random.Random(2026)
    dsts = [(n << 24) | (hi << 40) for n in range(1, 60) for hi in (0, 1)]
    for step in range(160):
        atomicity = (WriteRequest.ROLLBACK_ON_ERROR if rng.random() < 0.1
                     else WriteRequest.CONTINUE_ON_ERROR)
        batch = []
        for _ in range(rng.choice((1, 5, 30, 120))):
            te = _entry(ids, rng, rng.randrange(1, 60))
            kind = rng.choices((INSERT, MODIFY, DELETE), (5, 2, 2))[0]
            if kind == DELETE and rng.random() < 0.3:
                te.ClearField("action")                  # a DELETE needs the key only
            batch.append(upd(kind, te))
        got = fast.write(batch, True, atomicity)
        assert got == slow.write(batch, True, atomicity), f"batch {step}"
        assert fast.handles() == slow.handles(), f"after batch {step}"
        assert fast.read() == slow.read(), f"after batch {step}"
        if step % 10 == 9:
            assert fast.forwards(dsts) == slow.forwards(dsts), f"after batch {step}"
        if step == 120:                  # the switch builds its entries: C runs stop
            assert fast.views() == slow.views()
    assert fast.views() == slow.views()
    assert fast.forwards(dsts) == slow.forwards(dsts)
    assert fast.applied > 500 and slow.applied == 0


def test_a_run_stops_at_what_it_does_not_take(pair):
    """Within one batch: the C run stops at a duplicate, the general path reports it,
    and the next run picks up after it."""
    fast, slow = pair
    ids = fast.ids
    batch = [upd(INSERT, route(ids, n << 24)) for n in range(1, 6)]
    batch.insert(3, upd(INSERT, route(ids, 2 << 24)))             # ALREADY_EXISTS
    batch.append(upd(DELETE, route(ids, 9 << 24)))               # NOT_FOUND
    batch.append(upd(MODIFY, route(ids, 1 << 24, port=44)))
    got = fast.write(batch, True)
    assert got == slow.write(batch, True)
    assert [r if r is None else r[0].name for r in got] == \
        [None] * 3 + ["ALREADY_EXISTS"] + [None] * 2 + ["NOT_FOUND", None]
    assert fast.applied == 6 and fast.handles() == slow.handles()
    assert fast.read() == slow.read()
    assert fast.forwards([1 << 24, 5 << 24]) == slow.forwards([1 << 24, 5 << 24])


def test_dropped_objects_wait_for_the_reply(pair):
    """Under reclaim.holding, what a C run drops — a deleted entry's record and row, a
    modified entry's old action call, row and stored bytes — is kept in the list (the
    lane frees it once the reply is sent), and only there: results, handles and Read
    are those of the Python path; without it nothing is kept."""
    fast, slow = pair
    ids = fast.ids
    dsts = [n << 24 for n in range(1, 41)]
    inserts = [upd(INSERT, route(ids, d)) for d in dsts]
    assert reclaim.held() is None
    assert fast.write(inserts, True) == slow.write(inserts, True) == [None] * 40
    tid = ids["I.route"]
    records = fast.device.current.runtime.tables._records[tid]
    state = fast.device.current.switch.table_state("I.route")
    before = {k: (r, r.call, r.stored, state._rows[r.handle]) for k, r in records.items()}
    modifies = [upd(MODIFY, route(ids, d, port=7)) for d in dsts]
    with reclaim.holding() as later:
        assert fast.write(modifies, True) == slow.write(modifies, True) == [None] * 40
        kept = {id(x) for x in later}
        for record, call, stored, row in before.values():
            assert record.call is not call and record.stored is not stored
            assert {id(call), id(stored), id(row)} <= kept
            assert id(record) not in kept           # still in the table
    assert not later                               # the block's end lets go
    assert fast.handles() == slow.handles() and fast.read() == slow.read()
    deletes = [upd(DELETE, route(ids, d)) for d in dsts]
    rows = {r.handle: state._rows[r.handle] for r in records.values()}
    with reclaim.holding() as later:
        assert fast.write(deletes, True) == slow.write(deletes, True) == [None] * 40
        kept = {id(x) for x in later}
        assert all(id(r) in kept for r, *_ in before.values())
        assert all(id(row) in kept for row in rows.values())
    assert not records and fast.handles() == slow.handles()
    assert fast.read() == slow.read()
    assert fast.applied == 120


def test_rows_share_objects_with_their_records(pair):
    """An entry a C run adds keeps fewer objects: the row's arguments are its action
    call's list, its order is its handle's int when both count alike, and the key's
    values are the switch match's ints (one object each, not two)."""
    fast, _ = pair
    ids = fast.ids
    switch = fast.device.current.switch
    for name in ("I.route", "I.acl"):        # past CPython's cached small ints
        state = switch.table_state(name)
        state._next_handle = state._order = 1000
    batch = [upd(INSERT, route(ids, 5 << 24)), upd(INSERT, route(ids, 6 << 24)),
             upd(INSERT, acl(ids, 0x0800, src=(0x020000000000, 0xFF0000000000),
                             dst=(5000, 90000)))]
    assert fast.write(batch, True) == [None] * 3 and fast.applied == 3
    tables = fast.device.current.runtime.tables
    routes = switch.table_state("I.route")._rows.values()
    masks = [row[1][0][1] for row in routes]      # one /24 mask object for both
    assert masks == [0xFFFFFF000000] * 2 and masks[0] is masks[1]
    for name in ("I.route", "I.acl"):
        record = list(tables._records[ids[name]].values())[0]
        row = switch.table_state(name)._rows[record.handle]
        assert row[3] is record.call.args and row[3] == record.call.args
        assert row[0] == 1000 and row[5] is row[0]
        fields = record.key[0]
        if name == "I.route":
            (_, (kind, value, plen)), = fields
            assert kind == "lpm" and plen == 24 and row[1][0][0] is value
        else:
            norms = {fid: norm for fid, norm in fields}
            _, value, mask = norms[2]                   # ternary: value and mask
            assert row[1][1][0] is value and row[1][1][1] is mask
            _, low, high = norms[3]                     # range: low and high
            assert row[1][2][1] is low and row[1][2][2] is high


def test_a_big_batch_frees_as_it_goes(pair, monkeypatch):
    """A batch of more than reclaim.HOLD_UPDATES updates keeps nothing it drops for
    after the reply (its peak memory would grow by as much): same results."""
    fast, slow = pair
    ids = fast.ids
    monkeypatch.setattr(reclaim, "HOLD_UPDATES", 10)
    dsts = [n << 24 for n in range(1, 21)]
    for kind, size in ((INSERT, 20), (MODIFY, 20), (DELETE, 10), (DELETE, 11)):
        batch = [upd(kind, route(ids, d, port=9 if kind == MODIFY else 3))
                 for d in dsts[:size]]
        with reclaim.holding() as later:
            assert fast.write(batch, True) == slow.write(batch, True)
            assert (len(later) > 0) == (size <= 10), (kind, size)
        assert fast.handles() == slow.handles() and fast.read() == slow.read()


def test_records_are_built_whole_and_other_types_called(pair, monkeypatch):
    """entrywire builds a Record (a slotted dataclass with the generated __init__) by
    filling its slots: every field is set as the Python path sets it. A type whose
    construction does more (here a __post_init__) is called instead."""
    import dataclasses

    from softswitch.p4runtime import tables as tables_mod

    fast, slow = pair
    ids = fast.ids
    batch = [upd(INSERT, route(ids, n << 24, idle=5_000_000 if n % 2 else 0))
             for n in range(1, 5)]
    assert fast.write(batch, True) == slow.write(batch, True) == [None] * 4
    assert fast.applied == 4
    built = fast.device.current.runtime.tables._records[ids["I.route"]]
    called = slow.device.current.runtime.tables._records[ids["I.route"]]
    for key, record in built.items():
        assert type(record) is tables_mod.Record
        assert dataclasses.astuple(record) == dataclasses.astuple(called[key])

    made = []

    @dataclasses.dataclass(slots=True)
    class Checked(tables_mod.Record):
        def __post_init__(self) -> None:
            made.append(self.handle)

    monkeypatch.setattr(tables_mod, "Record", Checked)
    more = [upd(INSERT, route(ids, n << 24)) for n in range(10, 13)]
    assert fast.write(more, True) == [None] * 3 and fast.applied == 7
    records = fast.device.current.runtime.tables._records[ids["I.route"]]
    assert sorted(made) == sorted(r.handle for r in records.values() if type(r) is Checked)
    assert len(made) == 3
