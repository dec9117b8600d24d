"""The real ``simple_switch_CLI`` against BMv2 and softswitch on the same p4c JSON: whole
register arrays, meter rates (indirect and direct), entry TTLs, parser value sets,
multicast and ``reset_state`` print the same on both; and what the Thrift API changes is
seen over P4Runtime on softswitch."""

import random
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from test_thrift_runtime import (
    P4LANG,
    _cli_against,
    _softswitch_cli_run,
    _wait_port,
    needs_cli,
    simple_switch_cli,
)

from softswitch.local_port import free_port

STATE_P4 = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t ethernet; }
struct meta_t { bit<32> color; bit<1> known; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) special_types;
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { special_types: mark; default: accept; }
    }
    state mark { meta.known = 1; transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(4) seen;
    meter(8, MeterType.bytes) rate_limit;
    direct_meter<bit<32>>(MeterType.packets) policer;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action police(bit<9> port) { sm.egress_spec = port; policer.read(meta.color); }
    action refuse() { mark_to_drop(sm); }
    action drop() { mark_to_drop(sm); }
    table metered {
        key = { hdr.ethernet.src : exact; }
        actions = { police; refuse; }
        meters = policer;
        default_action = refuse();
    }
    table aged {
        key = { hdr.ethernet.dst : exact; }
        actions = { fwd; drop; }
        support_timeout = true;
        default_action = drop();
    }
    apply {
        aged.apply();
        metered.apply();
        rate_limit.execute_meter(0, meta.color);
        seen.write(1, meta.color);
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
"""

STATE_COMMANDS = """\
register_write seen 2 42
register_read seen
register_read no_such_register
meter_set_rates rate_limit 3 0.5:100 1:200
meter_get_rates rate_limit 3
meter_get_rates rate_limit 4
meter_get_rates rate_limit 99
table_add metered police 00:00:00:00:00:01 => 2
meter_set_rates policer 0 0.001:10 0.002:20
meter_get_rates policer 0
meter_get_rates policer 7
table_add aged fwd 00:00:00:00:00:02 => 3
table_set_timeout aged 0 500
table_set_timeout aged 9 500
table_set_timeout metered 0 500
table_dump aged
table_dump_entry aged 0
pvs_add P.special_types 0x88b5
pvs_get P.special_types
pvs_remove P.special_types 0x88b5
pvs_add P.special_types 0x88b6
pvs_add P.special_types 0x88b6
pvs_get P.special_types
pvs_clear P.special_types
pvs_get P.special_types
pvs_get P.no_such_set
mc_mgrp_create 1
mc_node_create 5 1 2
mc_node_associate 1 0
mc_dump
mirroring_add 4 6
mirroring_get 4
table_set_default metered police 9
reset_state
table_dump metered
table_dump aged
register_read seen
meter_get_rates rate_limit 3
mc_dump
mirroring_get 4
"""


PROFILE_P4 = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t ethernet; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    action_profile(32) nexthops;
    action_selector(HashAlgorithm.crc16, 32, 14) ecmp;
    table direct_nh {
        key = { hdr.ethernet.dst : exact; }
        actions = { fwd; drop; }
        implementation = nexthops;
    }
    table balanced {
        key = { hdr.ethernet.src : exact; hdr.ethernet.ether_type : selector; }
        actions = { fwd; drop; }
        implementation = ecmp;
    }
    apply { direct_nh.apply(); balanced.apply(); }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
"""

PROFILE_COMMANDS = """\
act_prof_create_member nexthops fwd 1
act_prof_create_member nexthops fwd 2
act_prof_create_member nexthops drop
act_prof_dump nexthops
act_prof_dump_member nexthops 1
act_prof_delete_member nexthops 1
act_prof_create_member nexthops fwd 7
act_prof_modify_member nexthops fwd 2 9
act_prof_dump nexthops
table_indirect_add direct_nh 00:00:00:00:00:01 => 0
table_indirect_add direct_nh 00:00:00:00:00:02 => 5
table_indirect_add direct_nh 00:00:00:00:00:02 => 2
table_dump direct_nh
table_dump direct_nh
act_prof_delete_member nexthops 0
table_indirect_delete direct_nh 0
act_prof_delete_member nexthops 0
act_prof_create_member ecmp fwd 3
act_prof_create_member ecmp fwd 4
act_prof_create_group ecmp
act_prof_create_group ecmp
act_prof_add_member_to_group ecmp 0 0
act_prof_add_member_to_group ecmp 1 0
act_prof_add_member_to_group ecmp 1 0
act_prof_add_member_to_group ecmp 0 1
act_prof_dump ecmp
act_prof_dump_group ecmp 0
table_indirect_add_with_group balanced 00:00:00:00:00:03 => 0
table_indirect_add_with_group balanced 00:00:00:00:00:04 => 1
table_dump balanced
act_prof_remove_member_from_group ecmp 0 1
act_prof_delete_group ecmp 0
table_indirect_delete balanced 0
act_prof_delete_group ecmp 0
table_dump balanced
act_prof_dump ecmp
table_dump balanced
"""


def _normalised(out: str) -> str:
    """The CLI's output less what depends on timing: an entry's time since its last hit."""
    return re.sub(r"Life: \d+ms since hit", "Life: Nms since hit", out)


def _p4c_json(tmp_path_factory, name: str, source: str) -> Path:
    p4c = P4LANG / "bin" / "p4c-bm2-ss"
    if not p4c.exists():
        pytest.skip("no reference p4c")
    where = tmp_path_factory.mktemp(name)
    (where / f"{name}.p4").write_text(source)
    subprocess.run([str(p4c), str(where / f"{name}.p4"), "-o", str(where / f"{name}.json")],
                   check=True, capture_output=True, timeout=60)
    return where / f"{name}.json"


@pytest.fixture(scope="module")
def state_json(tmp_path_factory) -> Path:
    return _p4c_json(tmp_path_factory, "state", STATE_P4)


@pytest.fixture(scope="module")
def profile_json(tmp_path_factory) -> Path:
    return _p4c_json(tmp_path_factory, "profile", PROFILE_P4)


def _bmv2_cli_run(program: Path, commands: str, tmp_path: Path) -> str:
    port, device_id = free_port(), random.randrange(10_000, 2**30)
    return _cli_against([str(P4LANG / "bin" / "simple_switch"), "--device-id",
                         str(device_id), "--thrift-port", str(port), "--notifications-addr",
                         f"ipc://{tmp_path}/notify-{device_id}.ipc", str(program)],
                        port, commands)


@needs_cli
@pytest.mark.skipif(not (P4LANG / "bin" / "simple_switch").exists(), reason="no BMv2")
def test_registers_meters_ttls_value_sets_and_reset_print_the_same_on_both(state_json,
                                                                           tmp_path):
    bmv2 = _bmv2_cli_run(state_json, STATE_COMMANDS, tmp_path)
    assert bmv2.count("RuntimeCmd:") == STATE_COMMANDS.count("\n") + 1
    assert "seen= 0, 0, 42, 0" in bmv2 and "seen= 0, 0, 0, 0" in bmv2
    assert "Life: " in bmv2 and "0088b6" in bmv2
    assert _normalised(_softswitch_cli_run(state_json, STATE_COMMANDS)) == _normalised(bmv2)


@needs_cli
@pytest.mark.skipif(not (P4LANG / "bin" / "simple_switch").exists(), reason="no BMv2")
def test_action_profiles_selectors_and_indirect_entries_print_the_same_on_both(profile_json,
                                                                             tmp_path):
    bmv2 = _bmv2_cli_run(profile_json, PROFILE_COMMANDS, tmp_path)
    assert bmv2.count("RuntimeCmd:") == PROFILE_COMMANDS.count("\n") + 1
    for said in ("INVALID_MBR_HANDLE", "MBR_STILL_USED", "MBR_ALREADY_IN_GRP",
                 "GRP_STILL_USED", "Index: group(1)", "Members: [0, 1]"):
        assert said in bmv2
    assert _softswitch_cli_run(profile_json, PROFILE_COMMANDS) == bmv2


def _read(addr: str, entity: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
    with grpc.insecure_channel(addr) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        request = p4runtime_pb2.ReadRequest(device_id=0, entities=[entity])
        return [e for reply in stub.Read(request, timeout=30) for e in reply.entities]


@contextmanager
def _managed_switch(program: Path) -> Iterator[tuple[int, str]]:
    """``softswitch run PROGRAM`` without ``--runtime-writes`` (P4Runtime keeps the state):
    its Thrift port and P4Runtime address."""
    port, grpc_addr = free_port(), f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "softswitch", "run", str(program),
                             "--thrift-port", str(port), "--", "--grpc-server-addr",
                             grpc_addr], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_port(port, proc)
        yield port, grpc_addr
    finally:
        proc.terminate()
        proc.communicate(timeout=15)


@needs_cli
def test_value_sets_ttls_and_reset_through_thrift_are_p4runtime_state(state_json):
    """What the Thrift API changes (without ``--runtime-writes``) P4Runtime reads back."""
    with _managed_switch(state_json) as (port, grpc_addr):
        simple_switch_cli(port, "pvs_add P.special_types 0x88b5\n"
                                "table_add aged fwd 00:00:00:00:00:02 => 3\n"
                                "table_set_timeout aged 0 1500\n")
        (vset,) = _read(grpc_addr, p4runtime_pb2.Entity(
            value_set_entry=p4runtime_pb2.ValueSetEntry()))
        assert [m.match[0].exact.value for m in vset.value_set_entry.members] == [b"\x88\xb5"]
        (entry,) = _read(grpc_addr, p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
        assert entry.table_entry.idle_timeout_ns == 1_500_000_000
        out = simple_switch_cli(port, "reset_state\ntable_num_entries aged\n"
                                      "pvs_get P.special_types\n")
        assert "RuntimeCmd: 0\n" in out and "0088b5" in out      # value sets stay (BMv2)
        assert _read(grpc_addr, p4runtime_pb2.Entity(
            table_entry=p4runtime_pb2.TableEntry())) == []


@needs_cli
def test_members_groups_and_indirect_entries_through_thrift_are_p4runtime_state(profile_json):
    """Thrift's member and group handles are P4Runtime ids less one; reset_state removes
    entries, groups and members."""
    with _managed_switch(profile_json) as (port, grpc_addr):
        simple_switch_cli(port, "act_prof_create_member ecmp fwd 3\n"
                                "act_prof_create_member ecmp fwd 4\n"
                                "act_prof_create_group ecmp\n"
                                "act_prof_add_member_to_group ecmp 1 0\n"
                                "table_indirect_add_with_group balanced 00:00:00:00:00:03 => 0\n")
        members = _read(grpc_addr, p4runtime_pb2.Entity(
            action_profile_member=p4runtime_pb2.ActionProfileMember()))
        assert sorted(m.action_profile_member.member_id for m in members) == [1, 2]
        (group,) = _read(grpc_addr, p4runtime_pb2.Entity(
            action_profile_group=p4runtime_pb2.ActionProfileGroup()))
        assert group.action_profile_group.group_id == 1
        assert [m.member_id for m in group.action_profile_group.members] == [2]
        (entry,) = _read(grpc_addr, p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
        assert entry.table_entry.action.action_profile_group_id == 1
        simple_switch_cli(port, "reset_state\n")
        for empty in (p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()),
                      p4runtime_pb2.Entity(action_profile_group=p4runtime_pb2.ActionProfileGroup()),
                      p4runtime_pb2.Entity(
                          action_profile_member=p4runtime_pb2.ActionProfileMember())):
            assert _read(grpc_addr, empty) == []
