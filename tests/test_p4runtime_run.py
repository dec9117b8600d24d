"""``softswitch run``: the simple_switch_grpc command line, and a live process that
serves P4Runtime on a veth port and stops cleanly on SIGTERM/SIGINT."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from polling import receive_ipv4

from softswitch.daemon.main import DEFAULT_GRPC_ADDR, parse_args
from softswitch.devtools.p4runtime_client import StreamClient
from softswitch.local_port import free_port as _free_port
from softswitch.memory import allocator


def test_bmv2_command_line():
    opts = parse_args(["--no-p4", "-i", "1@veth0", "-i", "2@veth2", "--pcap", "/tmp/p",
                       "--nanolog", "ipc:///tmp/bm-0-log.ipc", "--device-id", "3",
                       "--log-console", "--thrift-port", "9090", "--log-flush",
                       "--max-port-count", "512", "--",
                       "--grpc-server-addr", "0.0.0.0:50051", "--cpu-port", "255",
                       "--enable-swap"])
    assert opts.no_p4 and opts.interfaces == {1: "veth0", 2: "veth2"}
    assert opts.pcap_dir == "/tmp/p" and opts.device_id == 3 and opts.log_console
    assert opts.grpc_addr == "0.0.0.0:50051" and opts.cpu_port == 255
    assert opts.drop_port == 511


def test_defaults_and_program():
    opts = parse_args(["prog.p4", "-D", "X=2", "-D", "Y"])
    assert opts.program == "prog.p4" and opts.grpc_addr == DEFAULT_GRPC_ADDR
    assert opts.defines == {"X": "2", "Y": "1"} and opts.cpu_port is None


@pytest.mark.parametrize("argv, message", [
    ([], "no program"),
    (["p.p4", "--no-p4"], "not both"),
    (["--no-p4", "-i", "veth0"], "PORT@IFACE"),
    (["--no-p4", "-i", "1@a", "-i", "1@b"], "port 1 is given twice"),
    (["--no-p4", "-i", "1@a", "-i", "2@a"], "given twice"),
    (["--no-p4", "--", "--cpu-port", "600"], "ports are 0..511"),
    (["--no-p4", "-i", "255@a", "--", "--cpu-port", "255"], "also an interface"),
    (["--no-p4", "--", "--bogus"], "unrecognized"),
])
def test_usage_errors_exit_1(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 1
    assert message in capsys.readouterr().err


def _start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "softswitch", "run", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@contextmanager
def _running(args: list[str]) -> Iterator[subprocess.Popen]:
    """``softswitch run ARGS``, killed on the way out if a test left it running."""
    proc = _start(args)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> str:
    """Signal the switch and wait for it; its stderr."""
    proc.send_signal(sig)
    return proc.communicate(timeout=15)[1]


def _primary(addr: str, proc: subprocess.Popen) -> tuple[
        grpc.Channel, p4runtime_pb2_grpc.P4RuntimeStub, StreamClient,
        p4runtime_pb2.ForwardingPipelineConfig]:
    """Connect to device 0 as its primary (election id 1): channel, stub, stream, pipeline."""
    channel = _wait_ready(addr, proc)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    stream = StreamClient(channel)
    stream.arbitrate(1)
    stream.next()
    config = stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=0)).config
    return channel, stub, stream, config


def _wait_ready(addr: str, proc: subprocess.Popen) -> grpc.Channel:
    channel = grpc.insecure_channel(addr)
    # one readiness future, waited on in slices; a future left polling would raise in
    # its thread once the test closes the channel
    ready = grpc.channel_ready_future(channel)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.communicate()
            try:
                ready.result(timeout=0.5)
                return channel
            except grpc.FutureTimeoutError:
                continue
    finally:
        ready.cancel()
    raise AssertionError("server did not come up")


def test_serves_with_its_grpc_settings_and_grpc_knows_them():
    """softswitch.daemon.rpc.settings: set in the server's environment, and no ``Unknown
    experiment`` from the installed grpcio (a renamed or finalised experiment)."""
    addr = f"127.0.0.1:{_free_port()}"
    with _running(["--no-p4", "--", "--grpc-server-addr", addr]) as proc:
        channel = _wait_ready(addr, proc)
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        assert stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version
        environ = open(f"/proc/{proc.pid}/environ", "rb").read().split(b"\0")
        assert b"GRPC_EXPERIMENTS=-event_engine_listener" in environ \
            or "GRPC_EXPERIMENTS" in os.environ
        maps = open(f"/proc/{proc.pid}/maps").read()
        channel.close()
        err = _stop(proc)
    assert proc.returncode == 0, err
    assert "Unknown experiment" not in err, err
    # the server runs on jemalloc where it is installed (softswitch.memory.allocator)
    if allocator.jemalloc_path() is not None and "PYTHONMALLOC" not in os.environ:
        assert "libjemalloc" in maps


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for veth/AF_PACKET")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_no_p4_serves_and_stops_cleanly(sig, tmp_path):
    veth = f"vr{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "link", "add", veth, "type", "veth", "peer", "name", veth + "p"],
                   check=True)
    try:
        subprocess.run(["ip", "link", "set", veth, "up"], check=True)
        addr = f"127.0.0.1:{_free_port()}"
        proc = _start(["--no-p4", "-i", f"1@{veth}", "--pcap", str(tmp_path), "--device-id",
                       "2", "--", "--grpc-server-addr", addr, "--cpu-port", "255"])
        try:
            channel = _wait_ready(addr, proc)
            stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
            caps = stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
            assert caps.p4runtime_api_version
            got = stub.GetForwardingPipelineConfig(
                p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=2))
            assert not got.HasField("config")          # no pipeline yet: OK, unset
            channel.close()
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, err
        assert "Traceback" not in err
        assert (tmp_path / f"{veth}_in.pcap").exists()
    finally:
        subprocess.run(["ip", "link", "del", veth], capture_output=True)


def test_missing_program_is_a_user_error():
    proc = _start(["/nonexistent/prog.p4"])
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert "no such file" in err and "Traceback" not in err


def test_address_in_use_is_a_user_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        addr = f"127.0.0.1:{s.getsockname()[1]}"
        proc = _start(["--no-p4", "--", "--grpc-server-addr", addr])
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1, err
    assert "cannot listen" in err and "Traceback" not in err


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for veth/AF_PACKET")
def test_program_forwards_between_veths(tmp_path):
    """l3_basic under ``softswitch run``: a route written over P4Runtime (with the
    P4Info read back from the switch) forwards a frame from one veth to another."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    from scapy.utils import rdpcap

    from softswitch.daemon.ports.afpacket import RawPort

    tag = uuid.uuid4().hex[:5]
    pairs = [(f"sw1{tag}", f"h1{tag}"), (f"sw2{tag}", f"h2{tag}")]
    for sw, host in pairs:
        subprocess.run(["ip", "link", "add", sw, "type", "veth", "peer", "name", host],
                       check=True)
        for name in (sw, host):
            subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1"],
                           capture_output=True)
            subprocess.run(["ip", "link", "set", name, "up"], check=True)
    program = os.path.join(os.path.dirname(__file__), "..", "p4src", "samples", "l3_basic.p4")
    addr = f"127.0.0.1:{_free_port()}"
    proc = _start([program, "-i", f"1@{pairs[0][0]}", "-i", f"2@{pairs[1][0]}", "--pcap",
                   str(tmp_path), "--", "--grpc-server-addr", addr, "--cpu-port", "255"])
    h1 = h2 = None
    try:
        channel, stub, stream, config = _primary(addr, proc)
        ids = {o.preamble.name: o.preamble.id
               for o in (*config.p4info.tables, *config.p4info.actions)}
        te = p4runtime_pb2.TableEntry(table_id=ids["L3Ingress.ipv4_lpm"])
        fm = te.match.add(field_id=1)
        fm.lpm.value, fm.lpm.prefix_len = bytes([10, 0, 2, 0]), 24
        te.action.action.action_id = ids["L3Ingress.set_next_hop"]
        for pid, value in ((1, b"\x02"), (2, bytes.fromhex("0200000000aa")),
                           (3, bytes.fromhex("0200000000bb"))):
            te.action.action.params.add(param_id=pid, value=value)
        write = p4runtime_pb2.WriteRequest(device_id=0)
        write.election_id.low = 1
        write.updates.add(type=p4runtime_pb2.Update.INSERT).entity.table_entry.CopyFrom(te)
        stub.Write(write)

        h1, h2 = RawPort(pairs[0][1]), RawPort(pairs[1][1])
        sent = bytes(Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:99")
                     / IP(src="10.0.1.1", dst="10.0.2.7", ttl=9) / UDP(dport=9) / (b"x" * 20))
        assert h1.send(sent)
        got = receive_ipv4(h2)
        assert got is not None, "the routed frame did not arrive"
        pkt = Ether(got)
        assert pkt.dst == "02:00:00:00:00:bb" and pkt.src == "02:00:00:00:00:aa"
        assert pkt[IP].ttl == 8 and pkt[IP].dst == "10.0.2.7"
        stream.close()
        channel.close()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
        assert proc.returncode == 0 and "Traceback" not in err, err
        ins = [bytes(p) for p in rdpcap(str(tmp_path / f"{pairs[0][0]}_in.pcap"))]
        outs = [bytes(p) for p in rdpcap(str(tmp_path / f"{pairs[1][0]}_out.pcap"))]
        assert sent in ins and got in outs
    finally:
        for port in (h1, h2):
            if port is not None:
                port.close()
        if proc.poll() is None:
            proc.kill()
        for sw, _ in pairs:
            subprocess.run(["ip", "link", "del", sw], capture_output=True)


def test_artifact_program_serves_its_pipeline(tmp_path):
    from softswitch.p4runtime import pipeline

    l3 = os.path.join(os.path.dirname(__file__), "..", "p4src", "samples", "l3_basic.p4")
    artifact = tmp_path / "l3_basic.json"
    artifact.write_bytes(pipeline.make_artifact(l3).to_bytes())
    addr = f"127.0.0.1:{_free_port()}"
    with _running([str(artifact), "--", "--grpc-server-addr", addr]) as proc:
        channel = _wait_ready(addr, proc)
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        config = stub.GetForwardingPipelineConfig(
            p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=0)).config
        assert config.p4_device_config == artifact.read_bytes()
        assert any(t.preamble.name == "L3Ingress.ipv4_lpm" for t in config.p4info.tables)
        channel.close()
        err = _stop(proc, signal.SIGINT)
    assert proc.returncode == 0, err


@pytest.mark.parametrize("content, message", [
    ('{"program": "x.p4", "pipelines": []}', "not a BMv2 JSON document"),
    ("control c() {", "error"),
])
def test_bad_programs_are_user_errors(tmp_path, content, message):
    path = tmp_path / ("prog.json" if content.startswith("{") else "prog.p4")
    path.write_text(content)
    proc = _start([str(path)])
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    assert message in err and "Traceback" not in err
