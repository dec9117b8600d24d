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

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch.run import DEFAULT_GRPC_ADDR, parse_args


def test_bmv2_command_line():
    opts = parse_args(["--no-p4", "-i", "1@veth0", "-i", "2@veth2", "--pcap", "/tmp/p",
                       "--nanolog", "ipc:///tmp/bm-0-log.ipc", "--device-id", "3",
                       "--log-console", "--thrift-port", "9090", "--",
                       "--grpc-server-addr", "0.0.0.0:50051", "--cpu-port", "255"])
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "softswitch", "run", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_ready(addr: str, proc: subprocess.Popen) -> grpc.Channel:
    channel = grpc.insecure_channel(addr)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        try:
            grpc.channel_ready_future(channel).result(timeout=0.5)
            return channel
        except grpc.FutureTimeoutError:
            continue
    raise AssertionError("server did not come up")


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
            with pytest.raises(grpc.RpcError) as exc:
                stub.GetForwardingPipelineConfig(
                    p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=2))
            assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
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
