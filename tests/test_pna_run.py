"""A PNA NIC under softswitch's P4Runtime server and ``softswitch run``: host and network
port flags, a pipeline pushed by a controller, table writes and counter reads over
P4Runtime, and the NIC's per-class transmit queues (strict priority, DWRR, rates)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from polling import receive_ipv4
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from test_p4runtime_run import _free_port, _primary

from softswitch.core.control import KeyMatch
from softswitch.daemon.device import Device
from softswitch.daemon.main import RunOptions, _compiler, apply_port_roles, parse_args
from softswitch.daemon.rpc.server import serve
from softswitch.devtools.p4runtime_client import StreamClient
from softswitch.diagnostics import P4Error
from softswitch.p4runtime import pipeline
from softswitch.pna.nic import Nic
from softswitch.tm import TrafficManager

PNA = Path(__file__).resolve().parent / "p4" / "pna"
BASIC = PNA / "pna_basic.p4"
HOST, NET = 0, 1


def _frame(src: str = "10.0.0.9", dst: str = "10.0.0.2", size: int = 10) -> bytes:
    return bytes(Ether() / IP(src=src, dst=dst) / UDP(dport=4791) / (b"x" * size))


# --- command line ---------------------------------------------------------------------------

def test_host_and_net_port_flags():
    opts = parse_args(["nic.p4", "-i", "0@h0", "-i", "1@n0", "--host-port", "0",
                       "--net-port", "1"])
    assert opts.host_ports == {0} and opts.net_ports == {1}


@pytest.mark.parametrize("argv, message", [
    (["nic.p4", "--host-port", "3"], "no -i 3@IFACE"),
    (["nic.p4", "-i", "1@a", "--host-port", "1", "--net-port", "1"], "both --host-port"),
])
def test_port_flag_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 1 and message in capsys.readouterr().err


def test_every_attached_port_needs_a_side():
    opts = RunOptions(interfaces={0: "h", 1: "n"}, host_ports={0})
    with pytest.raises(P4Error, match="port 1 faces neither side"):
        apply_port_roles(opts, Nic.from_file(BASIC))


def test_port_flags_are_refused_for_a_v1model_program():
    l3 = Path(__file__).resolve().parent.parent / "p4src" / "samples" / "l3_basic.p4"
    switch = pipeline.compile_file(str(l3), {}).switch
    with pytest.raises(P4Error, match="for PNA programs"):
        apply_port_roles(RunOptions(interfaces={0: "h"}, host_ports={0}), switch)


# --- P4Runtime ------------------------------------------------------------------------------

def _forward(stub: p4runtime_pb2_grpc.P4RuntimeStub, ids: dict[str, int], address: bytes,
             port: int) -> None:
    """Insert ``forward``'s entry sending ``address`` to ``port`` (election id 1)."""
    te = p4runtime_pb2.TableEntry(table_id=ids["MainControlImpl.forward"])
    te.match.add(field_id=1).exact.value = address
    te.action.action.action_id = ids["MainControlImpl.to_port"]
    te.action.action.params.add(param_id=1, value=bytes([port]))
    write = p4runtime_pb2.WriteRequest(device_id=0)
    write.election_id.low = 1
    write.updates.add(type=p4runtime_pb2.Update.INSERT).entity.table_entry.CopyFrom(te)
    stub.Write(write)


def test_controller_pushes_a_nic_pipeline_and_programs_it():
    opts = RunOptions(interfaces={HOST: "h", NET: "n"}, host_ports={HOST}, net_ports={NET})
    device = Device(device_id=0, compiler=_compiler(opts))
    sent: list[tuple[int, bytes]] = []
    device.transmit = lambda port, data: sent.append((port, data))
    server, port = serve(device, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        stream = StreamClient(channel)
        stream.arbitrate(1)
        stream.next()
        compiled = pipeline.compile_file(str(BASIC), {})
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=0, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(compiled.p4info)
        req.config.p4_device_config = pipeline.make_artifact(str(BASIC)).to_bytes()
        stub.SetForwardingPipelineConfig(req)
        assert compiled.p4info.pkg_info.arch == "pna"
        ids = {o.preamble.name: o.preamble.id for o in (
            *compiled.p4info.tables, *compiled.p4info.actions, *compiled.p4info.counters)}

        _forward(stub, ids, bytes([10, 0, 0, 2]), HOST)

        device.receive(NET, _frame())                  # NET_TO_HOST: keyed by destination
        device.receive(HOST, _frame(src="10.0.0.2"))   # HOST_TO_NET: keyed by source
        assert [p for p, _ in sent] == [HOST, HOST]
        assert Ether(sent[0][1])[IP].ttl == 63

        read = p4runtime_pb2.ReadRequest(device_id=0)
        ce = read.entities.add().counter_entry
        ce.counter_id = ids["MainControlImpl.per_direction"]
        ce.index.index = 0
        (resp,) = list(stub.Read(read))
        assert resp.entities[0].counter_entry.data.packet_count == 1
        stream.close()
    finally:
        channel.close()
        server.stop(0)


# --- transmit queues ------------------------------------------------------------------------

def _queued(link_bps: float = 8e6) -> tuple[Nic, object]:
    nic = Nic.from_file(BASIC)
    nic.set_ports(host=[HOST], net=[NET, 2])
    nic.table_add("forward", [KeyMatch("meta.remote", "exact", 0x0A000002)], "to_port", [2])
    tm = TrafficManager(num_queues=8)
    tm.set_link_rate(link_bps, 2)
    return nic, nic.queued_view(tm)


def _drain(queues, until_us: float = 1e7) -> list[int]:
    """Classes of the packets in departure order (eth src low byte = pre_mark = class)."""
    order, now = [], 0.0
    while now <= until_us:
        for out, _ in queues.transmit_ready(now):
            order.append(out.meta["class_of_service"])
        nxt = queues.next_event_us(now)
        if nxt is None:
            break
        now = max(nxt, now + 1e-3)
    return order


def test_strict_priority_urgent_class_overtakes_bulk():
    """pna_basic marks HOST_TO_NET packets class 2 and NET_TO_HOST ones class 1; both
    queues are strict, so a class-2 packet queued after class-1 bulk for the same port
    leaves as soon as the link is free: after the packet already on the wire."""
    nic, q = _queued()
    for _ in range(5):
        q.receive(NET, _frame(size=1000), 0.0)                  # class 1, to port 2
    on_wire = [out.meta["class_of_service"] for out, _ in q.transmit_ready(0.0)]
    q.receive(HOST, _frame(src="10.0.0.2", dst="10.0.0.5", size=1000), 1.0)  # class 2
    assert on_wire + _drain(q) == [1, 2, 1, 1, 1, 1]


def test_dwrr_shares_by_weight_and_rate_limits_per_queue():
    nic, q = _queued()
    q.configure_class(1, weight=3)
    q.configure_class(2, weight=1)
    for _ in range(40):
        q.receive(NET, _frame(size=1000), 0.0)
        q.receive(HOST, _frame(src="10.0.0.2", dst="10.0.0.5", size=1000), 0.0)
    first = _drain(q)[:40]               # both queues backlogged throughout
    assert 2.5 <= first.count(1) / first.count(2) <= 3.5   # bytes shared 3:1

    nic, q = _queued(link_bps=0)
    q.configure_class(1, rate_pps=1000)                  # one packet per millisecond
    for _ in range(3):
        q.receive(NET, _frame(), 0.0)
    assert len(q.transmit_ready(0.0)) <= 1
    assert len(q.transmit_ready(2500.0)) >= 1


def test_class_configuration_errors_are_p4errors():
    _, q = _queued()
    with pytest.raises(P4Error, match="class 1"):
        q.configure_class(1, rate_pps=-1)


# --- softswitch run ------------------------------------------------------------------------

@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for veth/AF_PACKET")
def test_softswitch_run_nic_between_host_and_network_veths(tmp_path):
    from softswitch.daemon.ports.afpacket import RawPort

    tag = uuid.uuid4().hex[:5]
    pairs = [(f"nh{tag}", f"hh{tag}"), (f"nn{tag}", f"wn{tag}")]
    for a, b in pairs:
        subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
        for name in (a, b):
            subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1"],
                           capture_output=True)
            subprocess.run(["ip", "link", "set", name, "up"], check=True)
    addr = f"127.0.0.1:{_free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "softswitch", "run", str(BASIC),
                             "-i", f"0@{pairs[0][0]}", "-i", f"1@{pairs[1][0]}",
                             "--host-port", "0", "--net-port", "1", "--",
                             "--grpc-server-addr", addr, "--priority-queues", "8"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    ports = []
    try:
        channel, stub, stream, config = _primary(addr, proc)
        p4info = config.p4info
        assert p4info.pkg_info.arch == "pna"
        ids = {o.preamble.name: o.preamble.id for o in (*p4info.tables, *p4info.actions)}
        _forward(stub, ids, bytes([10, 0, 0, 1]), NET)
        host, wire = RawPort(pairs[0][1]), RawPort(pairs[1][1])
        ports = [host, wire]
        assert host.send(_frame(src="10.0.0.1", dst="10.9.9.9"))   # host -> network
        got = receive_ipv4(wire)
        assert got is not None, "the frame from the host side did not reach the network side"
        assert Ether(got)[IP].ttl == 63 and Ether(got).src.endswith(":02")   # HOST_TO_NET
        stream.close()
        channel.close()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
        assert proc.returncode == 0 and "Traceback" not in err, err
    finally:
        for p in ports:
            p.close()
        if proc.poll() is None:
            proc.kill()
        for a, _ in pairs:
            subprocess.run(["ip", "link", "del", a], capture_output=True)
