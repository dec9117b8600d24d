"""Action profiles over P4Runtime on a compiled pipeline: members shared by entries,
member changes reaching every entry (and rolled back with their batch), groups of a
selector, and the error codes of each."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from programs import P4RT_NAMES, v1model_program
from test_p4runtime_entities import profile_rig, upd

Update = p4runtime_pb2.Update
PROGRAM = v1model_program(
    types="header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }",
    headers="ethernet_t eth;", extract=["hdr.eth"],
    ingress="""
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    action_profile(4) ap;
    action_selector(HashAlgorithm.crc16, 64, 14) sel;
    table t_ap {
        key = { hdr.eth.dst : exact; }
        actions = { fwd; drop; }
        implementation = ap;
    }
    table t_sel {
        key = { hdr.eth.dst : exact; hdr.eth.src : selector; }
        actions = { fwd; drop; }
        implementation = sel;
    }
    apply { t_ap.apply(); t_sel.apply(); }
""",
    emit=["hdr.eth"], names=P4RT_NAMES)


@pytest.fixture()
def rig(tmp_path):
    yield from profile_rig(tmp_path / "ap.p4", PROGRAM)


def member(rig, mid: int, port: int, profile="I.ap") -> p4runtime_pb2.ActionProfileMember:
    m = p4runtime_pb2.ActionProfileMember(action_profile_id=rig.ids[profile], member_id=mid)
    m.action.action_id = rig.ids["I.fwd"]
    m.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return m


def entry(rig, dst: int, mid: int, table="I.t_ap") -> p4runtime_pb2.TableEntry:
    te = p4runtime_pb2.TableEntry(table_id=rig.ids[table])
    te.match.add(field_id=1).exact.value = dst.to_bytes(6, "big")
    te.action.action_profile_member_id = mid
    return te


def frame(dst: int) -> bytes:
    return dst.to_bytes(6, "big") + b"\x02" * 6 + b"\x08\x00" + bytes(46)


def test_member_shared_by_entries_and_modified_once(rig):
    rig.write(upd(Update.INSERT, action_profile_member=member(rig, 1, 3)))
    rig.write(upd(Update.INSERT, table_entry=entry(rig, 0xA, 1)),
              upd(Update.INSERT, table_entry=entry(rig, 0xB, 1)))
    for dst in (0xA, 0xB):
        rig.device.receive(1, frame(dst))
    assert [p for p, _ in rig.sent] == [3, 3]
    rig.write(upd(Update.MODIFY, action_profile_member=member(rig, 1, 6)))
    for dst in (0xA, 0xB):
        rig.device.receive(1, frame(dst))
    assert [p for p, _ in rig.sent[2:]] == [6, 6]
    (got,) = rig.read(p4runtime_pb2.Entity(action_profile_member=member(rig, 1, 0)))
    assert got.action_profile_member.action.params[0].value == b"\x06"
    entries = rig.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=rig.ids["I.t_ap"])))
    assert {e.table_entry.action.action_profile_member_id for e in entries} == {1}


def test_member_errors(rig):
    rig.write(upd(Update.INSERT, action_profile_member=member(rig, 1, 3)))
    assert rig.write_error(upd(Update.INSERT, action_profile_member=member(rig, 1, 3)))[0] \
        .canonical_code == code_pb2.ALREADY_EXISTS
    assert rig.write_error(upd(Update.INSERT, table_entry=entry(rig, 0xC, 9)))[0] \
        .canonical_code == code_pb2.INVALID_ARGUMENT       # no member 9
    rig.write(upd(Update.INSERT, table_entry=entry(rig, 0xC, 1)))
    assert rig.write_error(upd(Update.DELETE, action_profile_member=member(rig, 1, 3)))[0] \
        .canonical_code == code_pb2.FAILED_PRECONDITION     # still used
    rig.write(upd(Update.DELETE, table_entry=entry(rig, 0xC, 1)))
    rig.write(upd(Update.DELETE, action_profile_member=member(rig, 1, 3)))
    assert rig.write_error(upd(Update.MODIFY, action_profile_member=member(rig, 1, 3)))[0] \
        .canonical_code == code_pb2.NOT_FOUND
    direct = p4runtime_pb2.TableEntry(table_id=rig.ids["I.t_ap"])
    direct.match.add(field_id=1).exact.value = b"\x0d"
    direct.action.action.action_id = rig.ids["I.drop"]
    assert rig.write_error(upd(Update.INSERT, table_entry=direct))[0].canonical_code == \
        code_pb2.INVALID_ARGUMENT                         # profile tables take members


def test_member_modify_rolls_back_with_its_batch(rig):
    rig.write(upd(Update.INSERT, action_profile_member=member(rig, 1, 3)))
    rig.write(upd(Update.INSERT, table_entry=entry(rig, 0xA, 1)))
    details = rig.write_error(
        upd(Update.MODIFY, action_profile_member=member(rig, 1, 7)),
        upd(Update.INSERT, table_entry=entry(rig, 0xA, 1)),        # duplicate
        atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
    assert details[1].canonical_code == code_pb2.ALREADY_EXISTS
    rig.device.receive(1, frame(0xA))
    assert rig.sent[-1][0] == 3


def test_selector_groups(rig):
    sel = "I.sel"
    for mid in (1, 2):
        rig.write(upd(Update.INSERT, action_profile_member=member(rig, mid, mid, sel)))
    group = p4runtime_pb2.ActionProfileGroup(action_profile_id=rig.ids[sel], group_id=10)
    group.members.add(member_id=1, weight=1)
    group.members.add(member_id=2, weight=1)
    rig.write(upd(Update.INSERT, action_profile_group=group))
    (got,) = rig.read(p4runtime_pb2.Entity(action_profile_group=group))
    assert [m.member_id for m in got.action_profile_group.members] == [1, 2]
    assert rig.write_error(upd(Update.DELETE, action_profile_member=member(rig, 1, 1, sel)))[0] \
        .canonical_code == code_pb2.FAILED_PRECONDITION     # in a group
    bad = p4runtime_pb2.ActionProfileGroup()
    bad.CopyFrom(group)
    bad.members.add(member_id=5, weight=1)          # no such member: NOT_FOUND (1.4)
    assert rig.write_error(upd(Update.MODIFY, action_profile_group=bad))[0].canonical_code == \
        code_pb2.NOT_FOUND
    te = p4runtime_pb2.TableEntry(table_id=rig.ids["I.t_sel"])
    te.match.add(field_id=1).exact.value = b"\x01"
    te.action.action_profile_group_id = 10
    rig.write(upd(Update.INSERT, table_entry=te))      # (behaviour: test_p4runtime_selector)
    assert rig.write_error(upd(Update.DELETE, action_profile_group=group))[0] \
        .canonical_code == code_pb2.FAILED_PRECONDITION     # an entry points to it
    rig.write(upd(Update.DELETE, table_entry=te))
    rig.write(upd(Update.DELETE, action_profile_group=group))
    rig.write(upd(Update.DELETE, action_profile_member=member(rig, 1, 1, sel)))
    noselector = p4runtime_pb2.ActionProfileGroup(action_profile_id=rig.ids["I.ap"], group_id=1)
    assert rig.write_error(upd(Update.INSERT, action_profile_group=noselector))[0] \
        .canonical_code == code_pb2.INVALID_ARGUMENT


def test_unknown_profile_id(rig):
    m = member(rig, 1, 1)
    m.action_profile_id = 4242
    with pytest.raises(grpc.RpcError):
        rig.write(upd(Update.INSERT, action_profile_member=m))
