"""``softswitch run`` starts gRPC with its server settings (softswitch.p4runtime.grpc_env),
and the installed grpcio knows them: a renamed or finalised experiment would make gRPC
log ``Unknown experiment`` (and the setting would do nothing)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch.p4runtime import grpc_env


def test_configure_sets_the_server_experiments_once():
    env: dict[str, str] = {}
    assert grpc_env.configure(env)
    assert env["GRPC_EXPERIMENTS"] == "-event_engine_listener"
    assert not grpc_env.configure(env)


def test_a_users_setting_is_kept():
    env = {"GRPC_EXPERIMENTS": ""}
    assert not grpc_env.configure(env)
    assert env == {"GRPC_EXPERIMENTS": ""}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _environ(pid: int) -> dict[str, str]:
    raw = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
    return dict(item.decode().partition("=")[::2] for item in raw if item)


def test_softswitch_run_serves_with_the_settings_and_grpc_knows_them():
    addr = f"127.0.0.1:{_free_port()}"
    env = {k: v for k, v in os.environ.items() if k != "GRPC_EXPERIMENTS"}
    proc = subprocess.Popen([sys.executable, "-m", "softswitch", "run", "--no-p4", "--",
                             "--grpc-server-addr", addr], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        channel = grpc.insecure_channel(addr)
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.communicate()
            try:
                caps = stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=2)
                break
            except grpc.RpcError:
                assert time.monotonic() < deadline, "server did not come up"
                time.sleep(0.2)
        assert caps.p4runtime_api_version
        # the lane (Capabilities) and grpcio's own server (GetForwardingPipelineConfig)
        got = stub.GetForwardingPipelineConfig(
            p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=0))
        assert not got.HasField("config")
        assert _environ(proc.pid)["GRPC_EXPERIMENTS"] == "-event_engine_listener"
        channel.close()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    assert "Unknown experiment" not in err, err
