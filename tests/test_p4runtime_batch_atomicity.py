"""Big Write batches stay all-or-nothing, cheaply (P4Runtime 1.4 §12.2 atomicity).

A ROLLBACK_ON_ERROR batch of 10k updates whose last update fails leaves every table
exactly as before (as Read shows it, and as packets through the C fast path see it);
undoing it costs switch operations in proportion to the batch, not to the table;
and no packet ever sees half of a DATAPLANE_ATOMIC batch. The switch runs in process
(the device under the gRPC server), so packets are injected between updates exactly
as the port loop would inject them.
"""

from __future__ import annotations

import pathlib
import struct
import threading
from collections.abc import Iterator

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from softswitch.core.tables import CheckedOps
from softswitch.daemon.device import Device
from softswitch.p4runtime import encoding, pipeline
from softswitch.p4runtime.errors import P4RuntimeError

WriteRequest = p4runtime_pb2.WriteRequest
Update = p4runtime_pb2.Update
BATCH = 10_000
L3_BASIC = pathlib.Path(__file__).resolve().parents[1] / "p4src" / "samples" / "l3_basic.p4"


class L3Switch:
    """l3_basic.p4 (ipv4_lpm sized for the batches) on an in-process device."""

    def __init__(self, tmp_path) -> None:
        program = tmp_path / "l3_basic.p4"
        program.write_text(L3_BASIC.read_text().replace("size = 1024;", "size = 40000;"))
        compiled = pipeline.compile_file(str(program), {})
        self.device = Device()
        config = p4runtime_pb2.ForwardingPipelineConfig(
            p4_device_config=program.read_bytes())
        self.device.start_with(config, compiled)
        info = compiled.p4info
        self.table = next(t.preamble.id for t in info.tables
                          if t.preamble.name.endswith("ipv4_lpm"))
        self.action = next(a.preamble.id for a in info.actions
                           if a.preamble.name.endswith("set_next_hop"))
        self.sent: list[tuple[int, bytes]] = []
        self.device.transmit = lambda port, data: self.sent.append((port, data))

    def route(self, i: int, port: int = 1) -> p4runtime_pb2.TableEntry:
        """10.<i>/24 (i < 2^16) -> ``port``."""
        te = p4runtime_pb2.TableEntry(table_id=self.table)
        fm = te.match.add(field_id=1)
        fm.lpm.value = (0x0A000000 | (i << 8)).to_bytes(4, "big")
        fm.lpm.prefix_len = 24
        te.action.action.action_id = self.action
        for pid, value in ((1, port.to_bytes(2, "big")), (2, b"\x02\0\0\0\0\x01"),
                           (3, i.to_bytes(6, "big"))):
            te.action.action.params.add(param_id=pid, value=value)
        return te

    def write(self, updates: list[tuple[int, p4runtime_pb2.TableEntry]],
              atomicity: int = WriteRequest.CONTINUE_ON_ERROR) -> list[P4RuntimeError | None]:
        """One batch, as the server hands it over (a lazily parsed request)."""
        req = WriteRequest(device_id=0, atomicity=atomicity)
        for kind, entry in updates:
            req.updates.add(type=kind).entity.table_entry.CopyFrom(entry)
        lazy = encoding.LazyRequest(WriteRequest, Update, 4, req.SerializeToString())
        with self.device.lock:
            return self.device.current.runtime.write(lazy)

    def table_state(self) -> list[bytes]:
        """Every entry of ipv4_lpm as Read returns it (sorted: order is not state)."""
        entity = p4runtime_pb2.Entity()
        entity.table_entry.table_id = self.table
        with self.device.lock:
            return sorted(self.device.current.runtime.read_wire([entity]))

    def forwards(self, i: int) -> int | None:
        """The port a packet to 10.<i>.0.1 leaves on, or None (dropped)."""
        self.sent.clear()
        self.device.receive(0, _ipv4_frame(0x0A000001 | (i << 8)))
        return self.sent[0][0] if self.sent else None


def _ipv4_frame(dst: int) -> bytes:
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20, 0, 0, 64, 17, 0,
                         bytes([10, 9, 9, 9]), dst.to_bytes(4, "big"))
    total = sum(struct.unpack("!10H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    header = header[:10] + struct.pack("!H", ~total & 0xFFFF) + header[12:]
    return b"\x00\xaa\0\0\0\x01" + b"\x00\0\0\0\0\x09" + b"\x08\x00" + header


@pytest.fixture()
def l3(tmp_path) -> Iterator[L3Switch]:
    switch = L3Switch(tmp_path)
    yield switch
    switch.device.stop()


def _codes(results: list[P4RuntimeError | None]) -> list[grpc.StatusCode | None]:
    return [None if r is None else r.code for r in results]


def test_rollback_of_a_10k_batch_leaves_the_tables_as_before(l3):
    assert all(r is None for r in l3.write([(Update.INSERT, l3.route(i)) for i in range(100)]))
    before = l3.table_state()
    assert len(before) == 100 and l3.forwards(5) == 1

    # 10k inserts, then one that fails (a duplicate of an entry already there).
    batch = [(Update.INSERT, l3.route(i)) for i in range(100, 100 + BATCH)]
    batch.append((Update.INSERT, l3.route(5)))
    codes = _codes(l3.write(batch, WriteRequest.ROLLBACK_ON_ERROR))
    assert codes[-1] == grpc.StatusCode.ALREADY_EXISTS
    assert set(codes[:-1]) == {grpc.StatusCode.ABORTED}
    assert l3.table_state() == before
    assert l3.forwards(100) is None and l3.forwards(99 + BATCH) is None
    assert l3.forwards(5) == 1

    # Modify and delete every entry, then fail: all of it is undone.
    batch = [(Update.MODIFY, l3.route(i, port=7)) for i in range(100)]
    batch += [(Update.DELETE, l3.route(i)) for i in range(50)]
    batch.append((Update.DELETE, l3.route(60_000)))          # no such entry
    codes = _codes(l3.write(batch, WriteRequest.ROLLBACK_ON_ERROR))
    assert codes[-1] == grpc.StatusCode.NOT_FOUND
    assert set(codes[:-1]) == {grpc.StatusCode.ABORTED}
    assert l3.table_state() == before
    assert l3.forwards(5) == 1 and l3.forwards(70) == 1

    # The same batches succeed once the failing update is gone.
    codes = _codes(l3.write(batch[:-1], WriteRequest.ROLLBACK_ON_ERROR))
    assert codes == [None] * len(batch[:-1])
    assert l3.forwards(5) is None and l3.forwards(70) == 7


def test_rollback_costs_the_batch_not_the_table(l3):
    """Undoing a failed batch runs one switch operation per applied update whatever
    the table holds: no copy, rebuild or scan of the table."""
    l3.write([(Update.INSERT, l3.route(i)) for i in range(20_000)])
    switch = l3.device.current.switch
    calls: dict[str, int] = {}

    def counted(name: str):
        method = getattr(switch, name)
        kind = name.removesuffix("_checked")     # plain writes use the checked calls

        def call(*args, **kwargs):
            calls[kind] = calls.get(kind, 0) + 1
            return method(*args, **kwargs)
        return call

    def counted_ops(table: str) -> CheckedOps:
        # Plain writes call a table's checked operations, bound once (checked_ops).
        ops = CheckedOps.__new__(CheckedOps)
        real = checked_ops(table)
        for op in ("add", "modify", "delete"):
            method = getattr(real, op)

            def call(*args, _op=op, _method=method):
                calls[f"table_{_op}"] = calls.get(f"table_{_op}", 0) + 1
                return _method(*args)
            setattr(ops, op, call)
        ops.bulk = real.bulk
        return ops

    ops = ("table_add", "table_delete", "table_modify", "table_clear", "table_entries",
           "table_add_checked", "table_modify_checked")
    checked_ops = switch.checked_ops
    tables = l3.device.current.runtime.tables
    tables._plain.clear()                 # bound again, through counted_ops
    for name in ops:
        setattr(switch, name, counted(name))
    switch.checked_ops = counted_ops
    try:
        batch = [(Update.INSERT, l3.route(i)) for i in range(20_000, 20_200)]
        batch += [(Update.MODIFY, l3.route(i, port=3)) for i in range(100)]
        batch.append((Update.INSERT, l3.route(0)))            # ALREADY_EXISTS
        codes = _codes(l3.write(batch, WriteRequest.ROLLBACK_ON_ERROR))
    finally:
        for name in ops:
            delattr(switch, name)
        del switch.checked_ops
        tables._plain.clear()
    assert codes[-1] == grpc.StatusCode.ALREADY_EXISTS
    # 200 adds undone by 200 deletes; 100 modifies undone by 100 modifies.
    assert calls == {"table_add": 200, "table_delete": 200, "table_modify": 200}
    assert l3.forwards(0) == 1 and l3.forwards(20_000) is None


class _Prober(threading.Thread):
    """Sends packets to 10.<first> and 10.<last> in turn, recording where each went,
    until stopped (a port loop's view of the switch while a batch is written)."""

    def __init__(self, l3: L3Switch, first: int, last: int) -> None:
        super().__init__(daemon=True)
        self.l3, self.targets = l3, (first, last)
        self.seen: list[tuple[int, bool]] = []     # (target index, forwarded)
        self.stop = threading.Event()
        self.started_probing = threading.Event()

    def run(self) -> None:
        frames = [_ipv4_frame(0x0A000001 | (t << 8)) for t in self.targets]
        sent: list[int] = []
        device = self.l3.device
        device.transmit = lambda port, data: sent.append(port)
        n = 0
        while not self.stop.is_set():
            which = n % 2
            sent.clear()
            device.receive(0, frames[which])
            self.seen.append((which, bool(sent)))
            n += 1
            if n == 40:
                self.started_probing.set()

    def count(self) -> int:
        return len(self.seen)


def _probe_during(l3: L3Switch, batch: list, atomicity: int) -> tuple[list, list]:
    prober = _Prober(l3, 0, BATCH - 1)
    prober.start()
    assert prober.started_probing.wait(30)
    results = l3.write(batch, atomicity)
    after = prober.count()
    while prober.count() < after + 40:
        pass
    prober.stop.set()
    prober.join(10)
    return results, prober.seen


def test_no_packet_sees_half_a_dataplane_atomic_batch(l3):
    batch = [(Update.INSERT, l3.route(i)) for i in range(BATCH)]
    results, seen = _probe_during(l3, batch, WriteRequest.DATAPLANE_ATOMIC)
    assert all(r is None for r in results)
    # Entries are only added: once a packet saw the batch's first entry, every later
    # packet must see its last entry too, and the other way round.
    flip = next(i for i, (_, fwd) in enumerate(seen) if fwd)
    assert all(fwd for _, fwd in seen[flip:]), "a packet saw half of the batch"
    assert not any(fwd for _, fwd in seen[:flip])
    assert 0 < flip < len(seen)


def test_no_packet_sees_a_failed_dataplane_atomic_batch(l3):
    batch = [(Update.INSERT, l3.route(i)) for i in range(BATCH)]
    batch.append((Update.MODIFY, l3.route(60_000)))            # NOT_FOUND: all undone
    results, seen = _probe_during(l3, batch, WriteRequest.DATAPLANE_ATOMIC)
    assert results[-1].code == grpc.StatusCode.NOT_FOUND
    assert len(seen) > 80 and not any(fwd for _, fwd in seen), \
        "a packet was forwarded by an entry of a batch that was rolled back"
    assert l3.table_state() == []


def test_an_internal_error_mid_batch_is_undone_like_a_failure(l3):
    """A softswitch bug hit by one update (here: the switch failing its 3rd add) must
    not leave a ROLLBACK_ON_ERROR batch half-applied: INTERNAL for that update, the
    rest ABORTED, the table as before."""
    switch = l3.device.current.switch
    calls = []

    def failing(add):
        def failing_add(*args, **kwargs):
            calls.append(args)
            if len(calls) == 3:
                raise RuntimeError("injected fault")
            return add(*args, **kwargs)
        return failing_add

    # Every way in: plain writes (entryplan) use the table's
    # checked operations (here without the one-C-call runs, which call no add).
    checked_ops = switch.checked_ops

    def failing_ops(table: str) -> CheckedOps:
        real = checked_ops(table)
        return CheckedOps(failing(real.add), real.modify, real.delete, None)

    tables = l3.device.current.runtime.tables
    tables._plain.clear()
    switch.table_add = failing(switch.table_add)
    switch.table_add_checked = failing(switch.table_add_checked)
    switch.checked_ops = failing_ops
    try:
        batch = [(Update.INSERT, l3.route(i)) for i in range(5)]
        codes = _codes(l3.write(batch, WriteRequest.ROLLBACK_ON_ERROR))
        assert codes == [grpc.StatusCode.ABORTED] * 2 + [grpc.StatusCode.INTERNAL] + \
            [grpc.StatusCode.ABORTED] * 2
        assert l3.table_state() == [] and l3.forwards(0) is None
        calls.clear()
        codes = _codes(l3.write(batch))                      # CONTINUE_ON_ERROR
        assert codes == [None, None, grpc.StatusCode.INTERNAL, None, None]
        assert len(l3.table_state()) == 4 and l3.forwards(2) is None
    finally:
        del switch.table_add, switch.table_add_checked, switch.checked_ops
        tables._plain.clear()
