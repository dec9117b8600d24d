"""The real ``simple_switch_CLI`` against BMv2 and softswitch on the same p4c JSON: whole
register arrays, meter rates (indirect and direct), entry TTLs, parser value sets,
multicast and ``reset_state`` print the same on both; and what the Thrift API changes is
seen over P4Runtime on softswitch."""

import random
import re
import subprocess
import sys
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


def _normalised(out: str) -> str:
    """The CLI's output less what depends on timing: an entry's time since its last hit."""
    return re.sub(r"Life: \d+ms since hit", "Life: Nms since hit", out)


@pytest.fixture(scope="module")
def state_json(tmp_path_factory) -> Path:
    p4c = P4LANG / "bin" / "p4c-bm2-ss"
    if not p4c.exists():
        pytest.skip("no reference p4c")
    where = tmp_path_factory.mktemp("state")
    (where / "state.p4").write_text(STATE_P4)
    subprocess.run([str(p4c), str(where / "state.p4"), "-o", str(where / "state.json")],
                   check=True, capture_output=True, timeout=60)
    return where / "state.json"


@needs_cli
@pytest.mark.skipif(not (P4LANG / "bin" / "simple_switch").exists(), reason="no BMv2")
def test_registers_meters_ttls_value_sets_and_reset_print_the_same_on_both(state_json,
                                                                           tmp_path):
    port, device_id = free_port(), random.randrange(10_000, 2**30)
    bmv2 = _cli_against([str(P4LANG / "bin" / "simple_switch"), "--device-id",
                         str(device_id), "--thrift-port", str(port), "--notifications-addr",
                         f"ipc://{tmp_path}/notify-{device_id}.ipc", str(state_json)],
                        port, STATE_COMMANDS)
    assert bmv2.count("RuntimeCmd:") == STATE_COMMANDS.count("\n") + 1
    assert "seen= 0, 0, 42, 0" in bmv2 and "seen= 0, 0, 0, 0" in bmv2
    assert "Life: " in bmv2 and "0088b6" in bmv2
    assert _normalised(_softswitch_cli_run(state_json, STATE_COMMANDS)) == _normalised(bmv2)


def _read(addr: str, entity: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
    with grpc.insecure_channel(addr) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        request = p4runtime_pb2.ReadRequest(device_id=0, entities=[entity])
        return [e for reply in stub.Read(request, timeout=30) for e in reply.entities]


@needs_cli
def test_value_sets_ttls_and_reset_through_thrift_are_p4runtime_state(state_json):
    """What the Thrift API changes (without ``--runtime-writes``) P4Runtime reads back."""
    port, grpc_addr = free_port(), f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "softswitch", "run", str(state_json),
                             "--thrift-port", str(port), "--", "--grpc-server-addr",
                             grpc_addr], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_port(port, proc)
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
    finally:
        proc.terminate()
        proc.communicate(timeout=15)
