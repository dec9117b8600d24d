"""P4Runtime over real gRPC against a real compiled pipeline: pipeline configs, table
entries (incl. defaults and const tables), atomicity, counters, registers, meters,
replication, packet I/O, and the error codes of each."""

from __future__ import annotations

import pathlib
import queue
import time
from collections.abc import Iterator

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from programs import CONTROLLER_HEADERS, P4RT_NAMES, PACKET_IN_EGRESS, v1model_program

from softswitch.daemon import idle_timeouts
from softswitch.daemon.device import Device
from softswitch.daemon.rpc.server import serve
from softswitch.devtools.p4runtime_client import StreamClient
from softswitch.p4runtime import errors, pipeline

Update = p4runtime_pb2.Update
SetReq = p4runtime_pb2.SetForwardingPipelineConfigRequest
CPU = 255

PROGRAM = v1model_program(
    types=CONTROLLER_HEADERS + """
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
header tag_t { bit<8> value; }
""",
    headers="packet_out_t packet_out; packet_in_t packet_in; ethernet_t eth; tag_t tag;",
    declarations="struct learn_t { bit<48> src; bit<9> port; }",
    parser="""
    value_set<bit<16>>(4) tagged_types;
    state start {
        transition select(sm.ingress_port) { 255: parse_po; default: parse_eth; }
    }
    state parse_po { pkt.extract(hdr.packet_out); transition parse_eth; }
    state parse_eth {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) { tagged_types: parse_tag; default: accept; }
    }
    state parse_tag { pkt.extract(hdr.tag); transition accept; }
""",
    ingress="""
    counter(8, CounterType.packets_and_bytes) ctr;
    register<bit<32>>(16) reg;
    meter(4, MeterType.packets) mtr;
    direct_counter(CounterType.packets_and_bytes) fwd_ctr;
    action drop() { mark_to_drop(sm); }
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action to_cpu() { sm.egress_spec = 255; }
    action mcast(bit<16> grp) { sm.mcast_grp = grp; }
    action clone_to(bit<32> session, bit<9> port) {
        sm.egress_spec = port;
        clone(CloneType.I2E, session);
    }
    action miss() { mark_to_drop(sm); }
    table fwd_table {
        key = { hdr.eth.dst : exact; }
        actions = { fwd; to_cpu; mcast; clone_to; drop; @defaultonly miss; }
        default_action = drop();
        counters = fwd_ctr;
        support_timeout = true;
    }
    table acl {
        key = { hdr.eth.etype : ternary; hdr.eth.src : ternary; }
        actions = { drop; NoAction; }
        default_action = NoAction();
    }
    table fixed {
        key = { hdr.eth.etype : exact; }
        actions = { drop; NoAction; }
        const entries = { 0x9999 : drop(); }
        const default_action = NoAction();
    }
    apply {
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            exit;
        }
        ctr.count((bit<32>) sm.ingress_port);
        reg.write(0, (bit<32>) hdr.eth.etype);
        if (hdr.eth.etype == 0x7777) {
            digest<learn_t>(1, { hdr.eth.src, sm.ingress_port });
        }
        fwd_table.apply();
        acl.apply();
        fixed.apply();
        if (hdr.tag.isValid()) { sm.egress_spec = (bit<9>) hdr.tag.value; }
    }
""",
    egress=PACKET_IN_EGRESS,
    emit=["hdr.packet_in", "hdr.eth", "hdr.tag"], names=P4RT_NAMES)


@pytest.fixture(scope="module")
def compiled_p4info(tmp_path_factory):
    path = tmp_path_factory.mktemp("prog") / "prog.p4"
    path.write_text(PROGRAM)
    return pipeline.compile_file(str(path), {}).p4info


class Rig:
    """A live server with a primary controller and the program loaded."""

    def __init__(self, p4info):
        self.device = Device(device_id=0, cpu_port=CPU)
        self.sent: list[tuple[int, bytes]] = []
        self.device.transmit = lambda port, data: self.sent.append((port, data))
        self.server, port = serve(self.device, "127.0.0.1:0")
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.stream = StreamClient(self.channel)
        self.stream.arbitrate(1)
        assert self.stream.next().arbitration.status.code == code_pb2.OK
        self.p4info = p4info
        self.ids = {o.preamble.name: o.preamble.id
                    for kind in ("tables", "actions", "counters", "registers", "meters",
                                 "direct_counters", "controller_packet_metadata",
                                 "digests", "value_sets")
                    for o in getattr(p4info, kind)}

    def set_pipeline(self, action=SetReq.VERIFY_AND_COMMIT, source=PROGRAM, p4info=None,
                     cookie=0):
        req = SetReq(device_id=0, action=action)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(p4info if p4info is not None else self.p4info)
        req.config.p4_device_config = source.encode()
        req.config.cookie.cookie = cookie
        return self.stub.SetForwardingPipelineConfig(req)

    def write(self, *updates, atomicity=p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR):
        req = p4runtime_pb2.WriteRequest(device_id=0, atomicity=atomicity)
        req.election_id.low = 1
        req.updates.extend(updates)
        return self.stub.Write(req)

    def write_error(self, *updates, **kw) -> list[p4runtime_pb2.Error]:
        with pytest.raises(grpc.RpcError) as exc:
            self.write(*updates, **kw)
        assert exc.value.code() == grpc.StatusCode.UNKNOWN
        return errors.details_of(exc.value)

    def read(self, *entities) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=0)
        req.entities.extend(entities)
        return [e for resp in self.stub.Read(req) for e in resp.entities]

    def close(self):
        self.stream.close()
        self.channel.close()
        self.server.stop(0).wait()


def profile_rig(path: pathlib.Path, source: str) -> Iterator[Rig]:
    """A rig with ``source`` (written to ``path``) loaded, its action profiles named too."""
    path.write_text(source)
    info = pipeline.compile_file(str(path), {}).p4info
    r = Rig(info)
    r.ids.update({o.preamble.name: o.preamble.id for o in info.action_profiles})
    r.set_pipeline(source=source)
    yield r
    r.close()


@pytest.fixture()
def rig(compiled_p4info):
    r = Rig(compiled_p4info)
    r.set_pipeline()
    yield r
    r.close()


def fwd_entry(rig, dst: bytes, port: int, action="I.fwd") -> p4runtime_pb2.TableEntry:
    te = p4runtime_pb2.TableEntry(table_id=rig.ids["I.fwd_table"])
    te.match.add(field_id=1).exact.value = dst
    te.action.action.action_id = rig.ids[action]
    if action == "I.fwd":
        te.action.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return te


def upd(kind, **entity) -> p4runtime_pb2.Update:
    return Update(type=kind, entity=p4runtime_pb2.Entity(**entity))


def frame(dst: int, etype: int = 0x0800, payload: bytes = b"") -> bytes:
    return dst.to_bytes(6, "big") + bytes.fromhex("020000000001") + etype.to_bytes(2, "big") \
        + payload.ljust(46, b"\0")


# ---------------------------------------------------------------------- pipeline config
def test_get_pipeline_config_all_response_types(rig):
    rig.set_pipeline(cookie=42)
    get = p4runtime_pb2.GetForwardingPipelineConfigRequest
    full = rig.stub.GetForwardingPipelineConfig(get(device_id=0)).config
    assert full.p4info == rig.p4info and full.p4_device_config == PROGRAM.encode()
    assert full.cookie.cookie == 42
    only = rig.stub.GetForwardingPipelineConfig(get(response_type=get.COOKIE_ONLY)).config
    assert only.cookie.cookie == 42 and not only.HasField("p4info") and not only.p4_device_config
    info = rig.stub.GetForwardingPipelineConfig(get(response_type=get.P4INFO_AND_COOKIE)).config
    assert info.HasField("p4info") and not info.p4_device_config
    dev = rig.stub.GetForwardingPipelineConfig(
        get(response_type=get.DEVICE_CONFIG_AND_COOKIE)).config
    assert dev.p4_device_config and not dev.HasField("p4info")


def test_p4info_mismatch_and_compile_errors(rig):
    other = type(rig.p4info)()
    other.CopyFrom(rig.p4info)
    other.tables[0].match_fields[0].bitwidth += 1
    with pytest.raises(grpc.RpcError) as exc:
        rig.set_pipeline(p4info=other)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "does not match" in exc.value.details()
    with pytest.raises(grpc.RpcError) as exc:
        rig.set_pipeline(source=PROGRAM.replace("V1Switch(", "V1Switchh("))
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "does not compile" in exc.value.details()


def test_verify_save_commit(rig):
    rig.write(upd(Update.INSERT, table_entry=fwd_entry(rig, b"\x01", 1)))
    rig.set_pipeline(action=SetReq.VERIFY)                  # changes nothing
    assert len(rig.read(p4runtime_pb2.Entity(table_entry=fwd_entry(rig, b"\x01", 0)))) == 1
    rig.set_pipeline(action=SetReq.VERIFY_AND_SAVE, cookie=7)
    assert len(rig.read(p4runtime_pb2.Entity(table_entry=fwd_entry(rig, b"\x01", 0)))) == 1
    req = SetReq(device_id=0, action=SetReq.COMMIT)
    req.election_id.low = 1
    rig.stub.SetForwardingPipelineConfig(req)               # the saved, empty pipeline
    assert rig.read(p4runtime_pb2.Entity(table_entry=fwd_entry(rig, b"\x01", 0))) == []
    get = p4runtime_pb2.GetForwardingPipelineConfigRequest(response_type=1)
    assert rig.stub.GetForwardingPipelineConfig(get).config.cookie.cookie == 7


def test_reconcile_keeps_forwarding_state(rig):
    rig.write(upd(Update.INSERT, table_entry=fwd_entry(rig, b"\x01", 3)))
    rig.set_pipeline(action=SetReq.RECONCILE_AND_COMMIT, source=PROGRAM + "\n// v2\n")
    got = rig.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=rig.ids["I.fwd_table"])))
    assert len(got) == 1
    rig.device.receive(1, frame(1))
    assert rig.sent[-1][0] == 3


def test_set_pipeline_needs_primary(rig):
    req = SetReq(device_id=0, action=SetReq.VERIFY_AND_COMMIT)
    req.election_id.low = 5
    with pytest.raises(grpc.RpcError) as exc:
        rig.stub.SetForwardingPipelineConfig(req)
    assert exc.value.code() == grpc.StatusCode.PERMISSION_DENIED


# ---------------------------------------------------------------------- table entries
def test_insert_read_modify_delete_and_forwarding(rig):
    rig.write(upd(Update.INSERT, table_entry=fwd_entry(rig, b"\x0a", 2)))
    rig.device.receive(1, frame(0x0A))
    assert [p for p, _ in rig.sent] == [2]
    got = rig.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
    assert [e.table_entry.match[0].exact.value for e in got
            if e.table_entry.table_id == rig.ids["I.fwd_table"]] == [b"\x0a"]
    assert got[0].table_entry.action.action.params[0].value == b"\x02"   # canonical
    rig.write(upd(Update.MODIFY, table_entry=fwd_entry(rig, b"\x0a", 4)))
    rig.device.receive(1, frame(0x0A))
    assert rig.sent[-1][0] == 4
    rig.write(upd(Update.DELETE, table_entry=fwd_entry(rig, b"\x0a", 0)))
    assert rig.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=rig.ids["I.fwd_table"]))) == []


def test_padded_and_canonical_are_the_same_key(rig):
    rig.write(upd(Update.INSERT, table_entry=fwd_entry(rig, b"\x00\x00\x00\x00\x00\x0b", 1)))
    details = rig.write_error(upd(Update.INSERT, table_entry=fwd_entry(rig, b"\x0b", 1)))
    assert [d.canonical_code for d in details] == [code_pb2.ALREADY_EXISTS]


@pytest.mark.parametrize("mutate, code", [
    # a value wider than its field: OUT_OF_RANGE (P4Runtime 1.4 §8.3)
    (lambda te: setattr(te.match[0].exact, "value", b"\x01" * 7), code_pb2.OUT_OF_RANGE),
    (lambda te: setattr(te, "priority", 5), code_pb2.INVALID_ARGUMENT),
    (lambda te: setattr(te, "table_id", 12345), code_pb2.INVALID_ARGUMENT),
    (lambda te: setattr(te.match[0], "field_id", 9), code_pb2.INVALID_ARGUMENT),
    (lambda te: te.ClearField("match"), code_pb2.INVALID_ARGUMENT),
    (lambda te: te.action.action.ClearField("params"), code_pb2.INVALID_ARGUMENT),
    (lambda te: setattr(te.action.action.params[0], "value", b"\x02\x00"),
     code_pb2.OUT_OF_RANGE),
    (lambda te: setattr(te.action.action, "action_id", 99), code_pb2.INVALID_ARGUMENT),
])
def test_bad_entries_are_refused_with_the_spec_code(rig, mutate, code):
    te = fwd_entry(rig, b"\x0c", 1)
    mutate(te)
    details = rig.write_error(upd(Update.INSERT, table_entry=te))
    assert details[0].canonical_code == code, details[0].message


def test_defaultonly_action_and_missing_entries(rig):
    te = fwd_entry(rig, b"\x0d", 0, action="I.miss")
    assert rig.write_error(upd(Update.INSERT, table_entry=te))[0].canonical_code == \
        code_pb2.PERMISSION_DENIED                  # PI's code for a @defaultonly action
    te = fwd_entry(rig, b"\x0d", 1)
    for kind in (Update.MODIFY, Update.DELETE):
        assert rig.write_error(upd(kind, table_entry=te))[0].canonical_code == \
            code_pb2.NOT_FOUND


def test_ternary_priority_and_masks(rig):
    te = p4runtime_pb2.TableEntry(table_id=rig.ids["I.acl"])
    fm = te.match.add(field_id=1)
    fm.ternary.value, fm.ternary.mask = b"\x08\x00", b"\xff\xff"
    te.action.action.action_id = rig.ids["I.drop"]
    assert rig.write_error(upd(Update.INSERT, table_entry=te))[0].canonical_code == \
        code_pb2.INVALID_ARGUMENT                       # no priority
    te.priority = 10
    rig.write(upd(Update.INSERT, table_entry=te))
    bad = p4runtime_pb2.TableEntry()
    bad.CopyFrom(te)
    bad.match[0].ternary.value = b"\x08\x01"
    bad.match[0].ternary.mask = b"\xff\x00"            # value bits outside the mask
    assert rig.write_error(upd(Update.INSERT, table_entry=bad))[0].canonical_code == \
        code_pb2.INVALID_ARGUMENT
    rig.device.receive(1, frame(0x0E, etype=0x0800))
    rig.sent.clear()
    assert rig.read(p4runtime_pb2.Entity(table_entry=te))[0].table_entry.priority == 10


def test_default_entries(rig):
    tid = rig.ids["I.fwd_table"]
    te = p4runtime_pb2.TableEntry(table_id=tid, is_default_action=True)
    (got,) = rig.read(p4runtime_pb2.Entity(table_entry=te))
    assert got.table_entry.action.action.action_id == rig.ids["I.drop"]
    te.action.action.action_id = rig.ids["I.fwd"]
    te.action.action.params.add(param_id=1, value=b"\x06")
    rig.write(upd(Update.MODIFY, table_entry=te))
    rig.device.receive(1, frame(0x77))
    assert rig.sent[-1][0] == 6
    assert rig.write_error(upd(Update.INSERT, table_entry=te))[0].canonical_code == \
        code_pb2.INVALID_ARGUMENT
    reset = p4runtime_pb2.TableEntry(table_id=tid, is_default_action=True)
    rig.write(upd(Update.MODIFY, table_entry=reset))   # no action: back to the program's
    (got,) = rig.read(p4runtime_pb2.Entity(table_entry=reset))
    assert got.table_entry.action.action.action_id == rig.ids["I.drop"]
    const = p4runtime_pb2.TableEntry(table_id=rig.ids["I.fixed"], is_default_action=True)
    const.action.action.action_id = rig.ids["I.drop"]
    assert rig.write_error(upd(Update.MODIFY, table_entry=const))[0].canonical_code == \
        code_pb2.PERMISSION_DENIED


def test_const_table(rig):
    tid = rig.ids["I.fixed"]
    (got,) = rig.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=tid)))
    assert got.table_entry.is_const and got.table_entry.match[0].exact.value == b"\x99\x99"
    te = p4runtime_pb2.TableEntry(table_id=tid)
    te.match.add(field_id=1).exact.value = b"\x12\x34"
    te.action.action.action_id = rig.ids["I.drop"]
    assert rig.write_error(upd(Update.INSERT, table_entry=te))[0].canonical_code == \
        code_pb2.PERMISSION_DENIED


# ---------------------------------------------------------------------- atomicity
def test_continue_on_error_applies_the_rest(rig):
    details = rig.write_error(
        upd(Update.INSERT, table_entry=fwd_entry(rig, b"\x21", 1)),
        upd(Update.INSERT, table_entry=fwd_entry(rig, b"\x21", 1)),
        upd(Update.INSERT, table_entry=fwd_entry(rig, b"\x22", 1)))
    assert [d.canonical_code for d in details] == [code_pb2.OK, code_pb2.ALREADY_EXISTS,
                                                   code_pb2.OK]
    got = rig.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=rig.ids["I.fwd_table"])))
    assert len(got) == 2


def test_rollback_on_error_applies_nothing(rig):
    rig.write(upd(Update.INSERT, table_entry=fwd_entry(rig, b"\x30", 1)))
    details = rig.write_error(
        upd(Update.INSERT, table_entry=fwd_entry(rig, b"\x31", 1)),
        upd(Update.MODIFY, table_entry=fwd_entry(rig, b"\x30", 9)),
        upd(Update.DELETE, table_entry=fwd_entry(rig, b"\x30", 0)),
        upd(Update.INSERT, table_entry=fwd_entry(rig, b"\x32", 1)),
        upd(Update.DELETE, table_entry=fwd_entry(rig, b"\x99", 0)),
        atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
    assert details[4].canonical_code == code_pb2.NOT_FOUND
    assert all(d.canonical_code == code_pb2.ABORTED for d in details[:4])
    got = rig.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=rig.ids["I.fwd_table"])))
    assert [(e.table_entry.match[0].exact.value,
             e.table_entry.action.action.params[0].value) for e in got] == [(b"\x30", b"\x01")]
    rig.device.receive(1, frame(0x30))
    assert rig.sent[-1][0] == 1


# ---------------------------------------------------------------------- counters etc.
def test_counters_and_direct_counters(rig):
    rig.write(upd(Update.INSERT, table_entry=fwd_entry(rig, b"\x40", 2)))
    for _ in range(3):
        rig.device.receive(5, frame(0x40))
    cid = rig.ids["I.ctr"]
    one = p4runtime_pb2.CounterEntry(counter_id=cid)
    one.index.index = 5
    (got,) = rig.read(p4runtime_pb2.Entity(counter_entry=one))
    assert got.counter_entry.data.packet_count == 3
    assert got.counter_entry.data.byte_count == 3 * 60
    every = rig.read(p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry()))
    assert len(every) == 8
    one.data.packet_count, one.data.byte_count = 100, 1000
    rig.write(upd(Update.MODIFY, counter_entry=one))
    (got,) = rig.read(p4runtime_pb2.Entity(counter_entry=one))
    assert got.counter_entry.data.packet_count == 100
    direct = p4runtime_pb2.DirectCounterEntry(table_entry=fwd_entry(rig, b"\x40", 0))
    (got,) = rig.read(p4runtime_pb2.Entity(direct_counter_entry=direct))
    assert got.direct_counter_entry.data.packet_count == 3
    te = fwd_entry(rig, b"\x40", 0)
    te.counter_data.SetInParent()
    (got,) = rig.read(p4runtime_pb2.Entity(table_entry=te))
    assert got.table_entry.counter_data.byte_count == 180
    one.index.index = 8
    assert rig.write_error(upd(Update.MODIFY, counter_entry=one))[0].canonical_code == \
        code_pb2.OUT_OF_RANGE
    assert rig.write_error(upd(Update.INSERT, counter_entry=one))[0].canonical_code == \
        code_pb2.INVALID_ARGUMENT


def test_registers(rig):
    rid = rig.ids["I.reg"]
    rig.device.receive(1, frame(0x41, etype=0x1234))
    entry = p4runtime_pb2.RegisterEntry(register_id=rid)
    entry.index.index = 0
    (got,) = rig.read(p4runtime_pb2.Entity(register_entry=entry))
    assert got.register_entry.data.bitstring == b"\x12\x34"
    entry.index.index = 3
    entry.data.bitstring = b"\x00\x00\xbe\xef"
    rig.write(upd(Update.MODIFY, register_entry=entry))
    (got,) = rig.read(p4runtime_pb2.Entity(register_entry=entry))
    assert got.register_entry.data.bitstring == b"\xbe\xef"
    entry.data.bitstring = b"\x01\x00\x00\x00\x00"      # wider than the cell: §8.3
    assert rig.write_error(upd(Update.MODIFY, register_entry=entry))[0].canonical_code == \
        code_pb2.OUT_OF_RANGE


def test_meters(rig):
    entry = p4runtime_pb2.MeterEntry(meter_id=rig.ids["I.mtr"])
    entry.index.index = 1
    entry.config.cir, entry.config.cburst = 100, 10
    entry.config.pir, entry.config.pburst = 200, 20
    rig.write(upd(Update.MODIFY, meter_entry=entry))
    (got,) = rig.read(p4runtime_pb2.Entity(meter_entry=entry))
    assert got.meter_entry.config == entry.config
    entry.config.cir = 500          # above PIR: BMv2's refusal, in PI's code and words
    refused = rig.write_error(upd(Update.MODIFY, meter_entry=entry))[0]
    assert (refused.canonical_code, refused.message) == (
        code_pb2.UNKNOWN, "Error when writing meter spec")


# ---------------------------------------------------------------------- replication
def test_multicast_group(rig):
    group = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=5)
    group.replicas.add(egress_port=1, instance=1)
    group.replicas.add(egress_port=2, instance=1)
    group.replicas.add(egress_port=3, instance=2)
    pre = p4runtime_pb2.PacketReplicationEngineEntry(multicast_group_entry=group)
    rig.write(upd(Update.INSERT, packet_replication_engine_entry=pre))
    (got,) = rig.read(p4runtime_pb2.Entity(packet_replication_engine_entry=pre))
    assert got.packet_replication_engine_entry.multicast_group_entry == group
    details = rig.write_error(upd(Update.INSERT, packet_replication_engine_entry=pre))
    assert details[0].canonical_code == code_pb2.ALREADY_EXISTS
    te = fwd_entry(rig, b"\x50", 0, action="I.mcast")
    te.action.action.params.add(param_id=1, value=b"\x05")
    rig.write(upd(Update.INSERT, table_entry=te))
    rig.device.receive(9, frame(0x50))
    assert sorted(p for p, _ in rig.sent) == [1, 2, 3]


def test_clone_session(rig):
    session = p4runtime_pb2.CloneSessionEntry(session_id=7)
    session.replicas.add(egress_port=4, instance=0)
    pre = p4runtime_pb2.PacketReplicationEngineEntry(clone_session_entry=session)
    rig.write(upd(Update.INSERT, packet_replication_engine_entry=pre))
    (got,) = rig.read(p4runtime_pb2.Entity(packet_replication_engine_entry=pre))
    assert got.packet_replication_engine_entry.clone_session_entry == session
    te = fwd_entry(rig, b"\x51", 0, action="I.clone_to")
    te.action.action.params.add(param_id=1, value=b"\x07")
    te.action.action.params.add(param_id=2, value=b"\x02")
    rig.write(upd(Update.INSERT, table_entry=te))
    rig.device.receive(9, frame(0x51))
    assert sorted(p for p, _ in rig.sent) == [2, 4]


# ---------------------------------------------------------------------- packet I/O
def test_packet_out_and_packet_in(rig):
    out = p4runtime_pb2.PacketOut(payload=frame(0x60))
    out.metadata.add(metadata_id=1, value=b"\x03")
    rig.stream.send(p4runtime_pb2.StreamMessageRequest(packet=out))
    deadline = time.monotonic() + 5
    while not rig.sent and time.monotonic() < deadline:
        time.sleep(0.01)
    assert rig.sent == [(3, frame(0x60))]
    rig.write(upd(Update.INSERT, table_entry=fwd_entry(rig, b"\x61", 0, action="I.to_cpu")))
    rig.device.receive(6, frame(0x61))
    msg = rig.stream.next()
    assert msg.WhichOneof("update") == "packet"
    assert msg.packet.payload == frame(0x61)
    assert [(m.metadata_id, m.value) for m in msg.packet.metadata] == [(1, b"\x06"),
                                                                       (2, b"\x00")]
    bad = p4runtime_pb2.PacketOut(payload=b"x")
    bad.metadata.add(metadata_id=9, value=b"\x01")
    rig.stream.send(p4runtime_pb2.StreamMessageRequest(packet=bad))
    err = rig.stream.next()
    assert err.error.canonical_code == code_pb2.INVALID_ARGUMENT


# ---------------------------------------------------------------------- LPM (l3_basic)
L3_BASIC = pathlib.Path(__file__).resolve().parents[1] / "p4src" / "samples" / "l3_basic.p4"


@pytest.fixture()
def l3rig():
    compiled = pipeline.compile_file(str(L3_BASIC), {})
    r = Rig(compiled.p4info)
    r.set_pipeline(source=L3_BASIC.read_text())
    yield r
    r.close()


def lpm_entry(rig, value: bytes, plen: int, port: int = 1) -> p4runtime_pb2.TableEntry:
    te = p4runtime_pb2.TableEntry(table_id=rig.ids["L3Ingress.ipv4_lpm"])
    fm = te.match.add(field_id=1)
    fm.lpm.value, fm.lpm.prefix_len = value, plen
    te.action.action.action_id = rig.ids["L3Ingress.set_next_hop"]
    for pid, v in ((1, port.to_bytes(2, "big")), (2, b"\x02" * 6), (3, b"\x04" * 6)):
        te.action.action.params.add(param_id=pid, value=v)
    return te


def test_lpm_prefix_rules(l3rig):
    l3rig.write(upd(Update.INSERT, table_entry=lpm_entry(l3rig, b"\x0a\x00\x00\x00", 8)))
    for value, plen in ((b"\x0a\x00\x00\x01", 8),    # host bits set past the prefix
                        (b"\x0a\x00\x00\x00", 33),   # longer than the field
                        (b"\x0a\x00\x00\x00", 0)):   # /0 must be omitted
        details = l3rig.write_error(upd(Update.INSERT, table_entry=lpm_entry(l3rig, value, plen)))
        assert details[0].canonical_code == code_pb2.INVALID_ARGUMENT, (value, plen)
    details = l3rig.write_error(upd(Update.INSERT,
                                    table_entry=lpm_entry(l3rig, b"\x0a\x00\x00\x00", 8)))
    assert details[0].canonical_code == code_pb2.ALREADY_EXISTS
    (got,) = l3rig.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=l3rig.ids["L3Ingress.ipv4_lpm"])))
    assert got.table_entry.match[0].lpm.value == b"\x0a\x00\x00\x00"
    assert got.table_entry.match[0].lpm.prefix_len == 8


def test_reconcile_refuses_state_that_does_not_fit(rig, tmp_path):
    rig.write(upd(Update.INSERT, table_entry=fwd_entry(rig, b"\xff" * 6, 3)))
    smaller = PROGRAM.replace("bit<48> dst;", "bit<40> dst;")
    (tmp_path / "small.p4").write_text(smaller)
    small_info = pipeline.compile_file(str(tmp_path / "small.p4"), {}).p4info
    with pytest.raises(grpc.RpcError) as exc:
        rig.set_pipeline(action=SetReq.RECONCILE_AND_COMMIT, source=smaller,
                         p4info=small_info)
    assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    rig.device.receive(1, frame(0xFFFFFFFFFFFF))      # the old pipeline still runs
    assert rig.sent[-1][0] == 3


# ---------------------------------------------------------------------- value sets, digests
def test_value_set(rig):
    vid = rig.ids["P.tagged_types"]
    entry = p4runtime_pb2.ValueSetEntry(value_set_id=vid)
    entry.members.add().match.add(field_id=1).exact.value = b"\x88\xb6"
    rig.write(upd(Update.MODIFY, value_set_entry=entry))
    (got,) = rig.read(p4runtime_pb2.Entity(value_set_entry=p4runtime_pb2.ValueSetEntry(
        value_set_id=vid)))
    assert [m.match[0].exact.value for m in got.value_set_entry.members] == [b"\x88\xb6"]
    rig.device.receive(1, frame(0x01, etype=0x88B6, payload=b"\x05"))
    assert rig.sent[-1][0] == 5                 # the parser took the value-set branch
    assert rig.write_error(upd(Update.INSERT, value_set_entry=entry))[0].canonical_code == \
        code_pb2.INVALID_ARGUMENT
    for _ in range(4):
        entry.members.add().match.add(field_id=1).exact.value = b"\x01"
    assert rig.write_error(upd(Update.MODIFY, value_set_entry=entry))[0].canonical_code == \
        code_pb2.RESOURCE_EXHAUSTED


def test_digests_flow_once_configured_and_acks(rig):
    did = rig.ids[next(n for n in rig.ids if "learn" in n)]
    rig.device.receive(3, frame(0x02, etype=0x7777))     # not configured: nothing sent
    config = p4runtime_pb2.DigestEntry(digest_id=did)
    config.config.max_list_size = 1
    config.config.ack_timeout_ns = 10_000_000_000
    rig.write(upd(Update.INSERT, digest_entry=config))
    assert rig.write_error(upd(Update.INSERT, digest_entry=config))[0].canonical_code == \
        code_pb2.ALREADY_EXISTS
    (got,) = rig.read(p4runtime_pb2.Entity(digest_entry=p4runtime_pb2.DigestEntry()))
    assert got.digest_entry.config.max_list_size == 1
    rig.device.receive(3, frame(0x02, etype=0x7777))
    msg = rig.stream.next()
    assert msg.WhichOneof("update") == "digest" and msg.digest.digest_id == did
    members = msg.digest.data[0].struct.members
    assert [m.bitstring for m in members] == [bytes.fromhex("020000000001"), b"\x03"]
    rig.device.receive(3, frame(0x02, etype=0x7777))     # same data, not acked: suppressed
    with pytest.raises(queue.Empty):
        rig.stream.next(timeout=0.3)
    ack = p4runtime_pb2.DigestListAck(digest_id=did, list_id=msg.digest.list_id)
    rig.stream.send(p4runtime_pb2.StreamMessageRequest(digest_ack=ack))
    again = None                                          # acked: sent again (the ack
    deadline = time.monotonic() + 5                       # is handled asynchronously)
    while again is None and time.monotonic() < deadline:
        rig.device.receive(3, frame(0x02, etype=0x7777))
        try:
            again = rig.stream.next(timeout=0.2)
        except queue.Empty:
            continue
    assert again is not None and again.digest.list_id > msg.digest.list_id
    rig.write(upd(Update.DELETE, digest_entry=config))
    rig.device.receive(3, frame(0x02, etype=0x7777))
    with pytest.raises(queue.Empty):
        rig.stream.next(timeout=0.3)


# ---------------------------------------------------------------------- idle timeouts
def test_idle_timeout_only_where_supported(rig):
    te = fwd_entry(rig, b"\x70", 1)
    te.idle_timeout_ns = 50_000_000
    rig.write(upd(Update.INSERT, table_entry=te))
    (got,) = rig.read(p4runtime_pb2.Entity(table_entry=fwd_entry(rig, b"\x70", 0)))
    assert got.table_entry.idle_timeout_ns == 50_000_000
    acl = p4runtime_pb2.TableEntry(table_id=rig.ids["I.acl"], priority=1,
                                   idle_timeout_ns=1000)
    fm = acl.match.add(field_id=1)
    fm.ternary.value, fm.ternary.mask = b"\x01", b"\xff"
    acl.action.action.action_id = rig.ids["I.drop"]
    assert rig.write_error(upd(Update.INSERT, table_entry=acl))[0].canonical_code == \
        code_pb2.INVALID_ARGUMENT


def test_idle_timeout_notification(rig):
    te = fwd_entry(rig, b"\x71", 1)
    te.idle_timeout_ns = 20_000_000
    rig.write(upd(Update.INSERT, table_entry=te))
    assert idle_timeouts.sweep(rig.device) == 0
    time.sleep(0.05)
    assert idle_timeouts.sweep(rig.device) == 1
    msg = rig.stream.next()
    (entry,) = msg.idle_timeout_notification.table_entry
    assert entry.match[0].exact.value == b"\x71"
    assert idle_timeouts.sweep(rig.device) == 0             # once per expiry
    rig.device.receive(1, frame(0x71))             # a hit re-arms it
    assert idle_timeouts.sweep(rig.device) == 0
    time.sleep(0.05)
    assert idle_timeouts.sweep(rig.device) == 1


def test_idle_sweep_visits_only_entries_with_a_timeout(rig):
    """The sweeper looks at entries that have a timeout, kept as they are inserted,
    modified (timeout added or dropped), deleted and rolled back, not the whole table."""
    tables = rig.device.current.runtime.tables
    tid = rig.ids["I.fwd_table"]

    def timed() -> set[bytes]:
        return {r.entry.match[0].exact.value for r in tables.timed_records(tid)}

    entries = {v: fwd_entry(rig, bytes([v]), 1) for v in (0x81, 0x82, 0x83)}
    entries[0x81].idle_timeout_ns = 20_000_000
    rig.write(*[upd(Update.INSERT, table_entry=te) for te in entries.values()])
    assert timed() == {b"\x81"}
    entries[0x82].idle_timeout_ns = 20_000_000
    entries[0x81].idle_timeout_ns = 0
    rig.write(*[upd(Update.MODIFY, table_entry=entries[v]) for v in (0x81, 0x82)])
    assert timed() == {b"\x82"}
    failing = rig.write_error(upd(Update.DELETE, table_entry=entries[0x82]),
                              upd(Update.MODIFY, table_entry=entries[0x81]),
                              upd(Update.DELETE, table_entry=fwd_entry(rig, b"\x8f", 1)),
                              atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
    assert failing[-1].canonical_code == code_pb2.NOT_FOUND
    assert timed() == {b"\x82"}                     # the rolled-back delete put it back
    rig.write(upd(Update.DELETE, table_entry=entries[0x82]))
    assert timed() == set()
    time.sleep(0.03)
    assert idle_timeouts.sweep(rig.device) == 0


def test_time_since_last_hit(rig):
    te = fwd_entry(rig, b"\x72", 1)
    te.idle_timeout_ns = 10_000_000_000
    rig.write(upd(Update.INSERT, table_entry=te))
    time.sleep(0.06)
    req = fwd_entry(rig, b"\x72", 0)
    req.ClearField("action")
    req.time_since_last_hit.SetInParent()

    def elapsed_ns() -> int:
        (got,) = rig.read(p4runtime_pb2.Entity(table_entry=req))
        return got.table_entry.time_since_last_hit.elapsed_ns

    assert elapsed_ns() >= 50_000_000             # since the insert: never hit
    rig.device.receive(1, frame(0x72))
    assert elapsed_ns() < 50_000_000              # the hit restarted it
    (plain,) = rig.read(p4runtime_pb2.Entity(table_entry=fwd_entry(rig, b"\x72", 0)))
    assert not plain.table_entry.HasField("time_since_last_hit")


def test_replication_modify_and_delete(rig):
    """MODIFY/DELETE of groups and sessions take switch objects apart: done when the
    switch can (BMv2's mc_*_destroy / mirroring_delete), UNIMPLEMENTED and untouched
    when it cannot."""
    group = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=6)
    group.replicas.add(egress_port=1, instance=1)
    pre = p4runtime_pb2.PacketReplicationEngineEntry(multicast_group_entry=group)
    rig.write(upd(Update.INSERT, packet_replication_engine_entry=pre))
    # (the constructor copied ``group``: change the copy the request carries)
    pre.multicast_group_entry.replicas.add(egress_port=2, instance=1)
    switch = rig.device.current.switch
    can = all(hasattr(switch, m) for m in ("mc_node_dissociate", "mc_node_destroy",
                                             "mc_mgrp_destroy", "mirroring_delete"))
    if not can:
        details = rig.write_error(upd(Update.MODIFY, packet_replication_engine_entry=pre))
        assert details[0].canonical_code == code_pb2.UNIMPLEMENTED
        (got,) = rig.read(p4runtime_pb2.Entity(packet_replication_engine_entry=pre))
        assert len(got.packet_replication_engine_entry.multicast_group_entry.replicas) == 1
        details = rig.write_error(upd(Update.INSERT, packet_replication_engine_entry=pre),
                                  atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
        assert details[0].canonical_code == code_pb2.UNIMPLEMENTED
        return
    rig.write(upd(Update.MODIFY, packet_replication_engine_entry=pre))
    te = fwd_entry(rig, b"\x52", 0, action="I.mcast")
    te.action.action.params.add(param_id=1, value=b"\x06")
    rig.write(upd(Update.INSERT, table_entry=te))
    rig.device.receive(9, frame(0x52))
    assert sorted(p for p, _ in rig.sent) == [1, 2]
    rig.write(upd(Update.DELETE, packet_replication_engine_entry=pre))
    assert rig.read(p4runtime_pb2.Entity(
        packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry())) == []


def test_replication_rollback(rig):
    """A ROLLBACK_ON_ERROR batch that changes a group and a clone session, then fails,
    leaves both as they were, in the server and in the switch."""
    group = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=8)
    group.replicas.add(egress_port=1, instance=1)
    session = p4runtime_pb2.CloneSessionEntry(session_id=9)
    session.replicas.add(egress_port=4, instance=0)
    pre_g = p4runtime_pb2.PacketReplicationEngineEntry(multicast_group_entry=group)
    pre_s = p4runtime_pb2.PacketReplicationEngineEntry(clone_session_entry=session)
    rig.write(upd(Update.INSERT, packet_replication_engine_entry=pre_g),
              upd(Update.INSERT, packet_replication_engine_entry=pre_s))
    new_g = p4runtime_pb2.PacketReplicationEngineEntry()
    new_g.CopyFrom(pre_g)
    new_g.multicast_group_entry.replicas.add(egress_port=2, instance=2)
    new_s = p4runtime_pb2.PacketReplicationEngineEntry()
    new_s.CopyFrom(pre_s)
    new_s.clone_session_entry.replicas.add(egress_port=5, instance=1)
    missing = p4runtime_pb2.PacketReplicationEngineEntry(
        multicast_group_entry=p4runtime_pb2.MulticastGroupEntry(multicast_group_id=77))
    details = rig.write_error(
        upd(Update.MODIFY, packet_replication_engine_entry=new_g),
        upd(Update.MODIFY, packet_replication_engine_entry=new_s),
        upd(Update.DELETE, packet_replication_engine_entry=pre_g),
        upd(Update.DELETE, packet_replication_engine_entry=missing),
        atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
    assert [d.canonical_code for d in details] == [code_pb2.ABORTED] * 3 + [
        code_pb2.NOT_FOUND]
    got = rig.read(p4runtime_pb2.Entity(
        packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry()))
    assert [e.packet_replication_engine_entry for e in got] == [pre_g, pre_s]
    te = fwd_entry(rig, b"\x53", 0, action="I.mcast")
    te.action.action.params.add(param_id=1, value=b"\x08")
    rig.write(upd(Update.INSERT, table_entry=te))
    rig.device.receive(9, frame(0x53))
    assert sorted(p for p, _ in rig.sent) == [1]
    switch = rig.device.current.switch
    assert switch.mirror[9] == ("port", 4)
