"""Action selector groups end to end over P4Runtime: table entries pointing to a group
or carrying a one-shot action set, per-packet member choice as BMv2 makes it (the
selector's hash of the ``selector`` fields, ``hash % members`` over the members in
target-handle order; ``outputWidth`` plays no part), MODIFY/DELETE/READ, rollback."""

from __future__ import annotations

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from programs import P4RT_NAMES, v1model_program
from test_p4runtime_entities import profile_rig, upd

from softswitch.core import hashes

Update = p4runtime_pb2.Update
ROLLBACK = p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR

# dst picks the entry; (src, sport, dport) is the flow the selector hashes. crc16 with
# outputWidth 14 checks that the width is ignored, as BMv2 ignores it.
PROGRAM = v1model_program(
    types="""
header flow_t { bit<8> dst; bit<32> src; bit<16> sport; bit<16> dport; bit<8> mark; }
""",
    headers="flow_t f;", extract=["hdr.f"],
    ingress="""
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action tag(bit<9> port, bit<8> mark) { sm.egress_spec = port; hdr.f.mark = mark; }
    action drop() { mark_to_drop(sm); }
    action_selector(HashAlgorithm.crc16, 32w128, 32w14) sel;
    table lb {
        key = { hdr.f.dst : exact; hdr.f.src : selector; hdr.f.sport : selector;
                hdr.f.dport : selector; }
        actions = { fwd; tag; @defaultonly drop; }
        const default_action = drop();
        implementation = sel;
    }
    apply { lb.apply(); }
""",
    emit=["hdr.f"], names=P4RT_NAMES)


@pytest.fixture()
def rig(tmp_path):
    yield from profile_rig(tmp_path / "sel.p4", PROGRAM)


def member(rig, mid: int, port: int, mark: int | None = None
           ) -> p4runtime_pb2.ActionProfileMember:
    m = p4runtime_pb2.ActionProfileMember(action_profile_id=rig.ids["I.sel"], member_id=mid)
    m.action.CopyFrom(action(rig, port, mark))
    return m


def action(rig, port: int, mark: int | None = None) -> p4runtime_pb2.Action:
    a = p4runtime_pb2.Action(action_id=rig.ids["I.fwd" if mark is None else "I.tag"])
    a.params.add(param_id=1, value=port.to_bytes(2, "big"))
    if mark is not None:
        a.params.add(param_id=2, value=bytes([mark]))
    return a


def group(rig, gid: int, members: dict[int, int]) -> p4runtime_pb2.ActionProfileGroup:
    """A group of ``{member id: weight}``."""
    g = p4runtime_pb2.ActionProfileGroup(action_profile_id=rig.ids["I.sel"], group_id=gid)
    for mid, weight in members.items():
        g.members.add(member_id=mid, weight=weight)
    return g


def entry(rig, dst: int, gid: int | None = None) -> p4runtime_pb2.TableEntry:
    te = p4runtime_pb2.TableEntry(table_id=rig.ids["I.lb"])
    te.match.add(field_id=1).exact.value = bytes([dst])
    if gid is not None:
        te.action.action_profile_group_id = gid
    return te


def flow_bytes(n: int) -> bytes:
    """The selector fields (src, sport, dport) of flow ``n``."""
    return (0x0A000000 + n).to_bytes(4, "big") + (1000 + n).to_bytes(2, "big") + \
        (4791).to_bytes(2, "big")


def send(rig, dst: int, n: int) -> tuple[int, int] | None:
    """(egress port, mark) of flow ``n`` to ``dst``; None when dropped."""
    rig.sent.clear()
    rig.device.receive(1, bytes([dst]) + flow_bytes(n) + b"\x00")
    if not rig.sent:
        return None
    ((port, data),) = rig.sent
    return port, data[-1]


def expected(n: int, slots: list[int]) -> int:
    """BMv2's choice: the full crc16 of the selector fields, modulo the member count."""
    return slots[hashes.crc16(flow_bytes(n)) % len(slots)]


FLOWS = range(64)


def test_group_entry_spreads_flows_exactly_as_bmv2(rig):
    # members created 30, 10, 20: BMv2 member handles 0, 1, 2, and a group is kept in
    # handle order, so the n-th member is 30, 10, 20 (not member-id order)
    for mid, port in ((30, 3), (10, 1), (20, 2)):
        rig.write(upd(Update.INSERT, action_profile_member=member(rig, mid, port)))
    rig.write(upd(Update.INSERT, action_profile_group=group(rig, 7, {10: 1, 20: 1, 30: 1})))
    rig.write(upd(Update.INSERT, table_entry=entry(rig, 5, 7)))
    ports = [send(rig, 5, n) for n in FLOWS]
    assert [p for p, _ in ports] == [expected(n, [3, 1, 2]) for n in FLOWS]
    assert {p for p, _ in ports} == {1, 2, 3}                 # spread over all members
    assert [send(rig, 5, n) for n in FLOWS] == ports          # a flow keeps its member
    assert send(rig, 6, 0) is None                            # miss: default drop
    (got,) = rig.read(p4runtime_pb2.Entity(table_entry=entry(rig, 5)))
    assert got.table_entry.action.action_profile_group_id == 7


def test_weights_repeat_members_in_handle_order(rig):
    rig.write(upd(Update.INSERT, action_profile_member=member(rig, 1, 1)),
              upd(Update.INSERT, action_profile_member=member(rig, 2, 2)))
    # weight 3: member 1 gets two more handles (2, 3) after member 2's (1), when the
    # group is written (as PI does), so member 3, created next, gets handle 4
    rig.write(upd(Update.INSERT, action_profile_group=group(rig, 1, {1: 3, 2: 1})))
    rig.write(upd(Update.INSERT, action_profile_member=member(rig, 3, 3)))
    rig.write(upd(Update.INSERT, table_entry=entry(rig, 5, 1)))
    ports = [send(rig, 5, n)[0] for n in FLOWS]
    assert ports == [expected(n, [1, 2, 1, 1]) for n in FLOWS]
    assert set(ports) == {1, 2}
    rig.write(upd(Update.MODIFY, action_profile_group=group(rig, 1, {1: 3, 2: 1, 3: 1})))
    ports = [send(rig, 5, n)[0] for n in FLOWS]
    assert ports == [expected(n, [1, 2, 1, 1, 3]) for n in FLOWS]
    assert set(ports) == {1, 2, 3}


def test_group_and_member_changes_reach_entries_and_roll_back(rig):
    for mid in (1, 2, 3):
        rig.write(upd(Update.INSERT, action_profile_member=member(rig, mid, mid)))
    rig.write(upd(Update.INSERT, action_profile_group=group(rig, 4, {1: 1, 2: 1, 3: 1})))
    rig.write(upd(Update.INSERT, table_entry=entry(rig, 5, 4)),
              upd(Update.INSERT, table_entry=entry(rig, 6, 4)))
    before = [send(rig, 5, n) for n in FLOWS]
    # a failing batch: group shrunk, member 1 retargeted, then a bad update
    details = rig.write_error(
        upd(Update.MODIFY, action_profile_group=group(rig, 4, {2: 1, 3: 1})),
        upd(Update.MODIFY, action_profile_member=member(rig, 2, 9, mark=0x77)),
        upd(Update.DELETE, table_entry=entry(rig, 5, 4)),
        upd(Update.INSERT, table_entry=entry(rig, 9, 99)),          # no group 99
        atomicity=ROLLBACK)
    assert [d.canonical_code for d in details] == [code_pb2.ABORTED] * 3 + [
        code_pb2.INVALID_ARGUMENT]
    assert [send(rig, 5, n) for n in FLOWS] == before
    # the same changes for real: both entries follow the group, then the member
    rig.write(upd(Update.MODIFY, action_profile_group=group(rig, 4, {2: 1, 3: 1})))
    for dst in (5, 6):
        assert [send(rig, dst, n)[0] for n in FLOWS] == [expected(n, [2, 3]) for n in FLOWS]
    rig.write(upd(Update.MODIFY, action_profile_member=member(rig, 2, 9, mark=0x77)))
    got = [send(rig, 6, n) for n in FLOWS]
    assert got == [(9, 0x77) if expected(n, [2, 3]) == 2 else (3, 0) for n in FLOWS]
    # an entry can move from a group to a member and back
    member_entry = entry(rig, 5)
    member_entry.action.action_profile_member_id = 1
    rig.write(upd(Update.MODIFY, table_entry=member_entry))
    assert {send(rig, 5, n)[0] for n in FLOWS} == {1}
    rig.write(upd(Update.MODIFY, table_entry=entry(rig, 5, 4)))
    assert {send(rig, 5, n)[0] for n in FLOWS} == {3, 9}
    # groups in use cannot go; entries first
    assert rig.write_error(upd(Update.DELETE, action_profile_group=group(rig, 4, {})))[0] \
        .canonical_code == code_pb2.FAILED_PRECONDITION
    rig.write(upd(Update.DELETE, table_entry=entry(rig, 5)),
              upd(Update.DELETE, table_entry=entry(rig, 6)))
    assert send(rig, 5, 0) is None
    rig.write(upd(Update.DELETE, action_profile_group=group(rig, 4, {})))


def test_deleted_group_entry_comes_back_on_rollback(rig):
    for mid in (1, 2):
        rig.write(upd(Update.INSERT, action_profile_member=member(rig, mid, mid)))
    rig.write(upd(Update.INSERT, action_profile_group=group(rig, 4, {1: 1, 2: 1})))
    rig.write(upd(Update.INSERT, table_entry=entry(rig, 5, 4)))
    before = [send(rig, 5, n) for n in FLOWS]
    rig.write_error(upd(Update.DELETE, table_entry=entry(rig, 5)),
                    upd(Update.DELETE, table_entry=entry(rig, 5)),      # now missing
                    atomicity=ROLLBACK)
    assert [send(rig, 5, n) for n in FLOWS] == before
    (got,) = rig.read(p4runtime_pb2.Entity(table_entry=entry(rig, 5)))
    assert got.table_entry.action.action_profile_group_id == 4


def test_empty_group_hits_and_runs_nothing(rig):
    """BMv2: a hit on an empty group runs no action (not the default drop)."""
    rig.write(upd(Update.INSERT, action_profile_group=group(rig, 2, {})))
    rig.write(upd(Update.INSERT, table_entry=entry(rig, 5, 2)))
    assert send(rig, 5, 1) == (0, 0)
    rig.write(upd(Update.INSERT, action_profile_member=member(rig, 1, 4)))
    rig.write(upd(Update.MODIFY, action_profile_group=group(rig, 2, {1: 1})))
    assert send(rig, 5, 1) == (4, 0)


def test_one_shot_action_sets(rig):
    te = entry(rig, 5)
    items = te.action.action_profile_action_set.action_profile_actions
    items.add(weight=1).action.CopyFrom(action(rig, 1))
    a2 = action(rig, 2, mark=0x42)                 # port as b"\0\2": read canonical
    items.add(weight=2).action.CopyFrom(a2)
    rig.write(upd(Update.INSERT, table_entry=te))
    got = [send(rig, 5, n) for n in FLOWS]
    slots = [(1, 0), (2, 0x42), (2, 0x42)]         # weights repeat in the given order
    assert got == [slots[hashes.crc16(flow_bytes(n)) % 3] for n in FLOWS]
    (read,) = rig.read(p4runtime_pb2.Entity(table_entry=entry(rig, 5)))
    acts = read.table_entry.action.action_profile_action_set.action_profile_actions
    assert [a.weight for a in acts] == [1, 2]
    assert acts[1].action.params[0].value == b"\x02"
    bad = entry(rig, 6)
    bad.action.action_profile_action_set.action_profile_actions.add(
        weight=0).action.CopyFrom(action(rig, 1))
    assert rig.write_error(upd(Update.INSERT, table_entry=bad))[0].canonical_code == \
        code_pb2.INVALID_ARGUMENT
    empty = entry(rig, 6)
    empty.action.action_profile_action_set.SetInParent()
    assert rig.write_error(upd(Update.INSERT, table_entry=empty))[0].canonical_code == \
        code_pb2.UNIMPLEMENTED                      # PI's code and words

    rig.write(upd(Update.DELETE, table_entry=entry(rig, 5)))
    assert send(rig, 5, 0) is None


# ---------------------------------------------------------------------- tailcc's ECMP
