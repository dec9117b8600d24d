"""Test helpers: real ``simple_switch_grpc`` processes and p4c builds, and a canonical
read of everything a switch holds.

Each switch gets free TCP ports (bound to port 0 first), a device id and a nanomsg
notifications socket of its own (the machine is shared: two BMv2 processes with one
device id would share ``ipc:///tmp/bmv2-<id>-notifications.ipc``), and is always
stopped by its own pid.
"""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from p4.v1 import p4runtime_pb2

from controlplane.p4rt import Client, P4InfoIndex
from controlplane.p4rt.describe import entity_text
from controlplane.p4rt.errors import P4RuntimeClientError
from softswitch import local_port
from softswitch.local_port import free_port


def wait_for_port(port: int, proc: subprocess.Popen, seconds: float = 30.0) -> None:
    why = local_port.await_listening(port, seconds, proc, interval=0.05)
    if why == "exited":
        raise AssertionError(f"switch exited ({proc.returncode}) before opening {port}")
    if why == "timeout":
        raise AssertionError(f"port {port} did not open in {seconds} s")


@dataclass
class Bmv2:
    proc: subprocess.Popen
    grpc_port: int
    thrift_port: int
    device_id: int
    log: Path
    notifications: Path

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def thrift_address(self) -> str:
        return f"127.0.0.1:{self.thrift_port}"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.notifications.unlink(missing_ok=True)


def start_bmv2(tools, log_dir: Path, interfaces: dict[int, str] | None = None,
               priority_queues: int = 8) -> Bmv2:
    """``simple_switch_grpc --no-p4`` with 8 priority queues, CPU port 255."""
    grpc_port, thrift_port = free_port(), free_port()
    device_id = random.randrange(10_000, 2**30)
    notifications = Path(f"/tmp/tailcc-test-bmv2-{os.getpid()}-{device_id}.ipc")
    log = log_dir / f"bmv2-{device_id}.log"
    argv = [tools.simple_switch_grpc, "--no-p4", "--device-id", str(device_id),
            "--thrift-port", str(thrift_port), "--notifications-addr",
            f"ipc://{notifications}", "--log-file", str(log_dir / f"bmv2-{device_id}"),
            "--log-level", "warn"]
    for port, name in sorted((interfaces or {}).items()):
        argv += ["-i", f"{port}@{name}"]
    argv += ["--", "--grpc-server-addr", f"127.0.0.1:{grpc_port}", "--cpu-port", "255",
             "--priority-queues", str(priority_queues)]
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    sw = Bmv2(proc, grpc_port, thrift_port, device_id, log, notifications)
    try:
        wait_for_port(grpc_port, proc)
        wait_for_port(thrift_port, proc)
    except BaseException:
        sw.stop()
        raise
    return sw


@contextmanager
def bmv2_switches(tools, log_dir: Path, count: int = 1) -> Iterator[list[Bmv2]]:
    started: list[Bmv2] = []
    try:
        for _ in range(count):
            started.append(start_bmv2(tools, log_dir))
        yield started
    finally:
        for sw in started:
            sw.stop()


def compile_bmv2(tools, program: Path, out_dir: Path, name: str | None = None,
                 defines: dict[str, str] | None = None) -> tuple[Path, Path]:
    """p4c-bm2-ss: (BMv2 JSON, P4Info) named like the tutorials' build/ does."""
    name = name or program.stem
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / f"{name}.json"
    p4info = out_dir / f"{name}.p4.p4info.txtpb"
    argv = [tools.p4c, "--arch", "v1model", "-o", str(json_path), "--p4runtime-files",
            str(p4info)]
    for key, value in (defines or {}).items():
        argv.append(f"-D{key}={value}")
    done = subprocess.run([*argv, str(program)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json_path, p4info


# --- reading a whole switch --------------------------------------------------------------
def read_everything(client: Client, index: P4InfoIndex) -> list[str]:
    """Every table entry, every table's default action, action profile members and
    groups, clone sessions and multicast groups, as sorted text (names, not ids)."""
    entities: list = list(client.read([p4runtime_pb2.TableEntry()]))
    for table in index.all("tables"):
        if table.implementation_id:
            continue        # action-profile tables: no default action on BMv2
        try:
            entities += client.read([p4runtime_pb2.TableEntry(
                table_id=table.preamble.id, is_default_action=True)])
        except P4RuntimeClientError:
            pass
    for prof in index.all("action_profiles"):
        entities += client.read([p4runtime_pb2.ActionProfileMember(
            action_profile_id=prof.preamble.id)])
        entities += client.read([p4runtime_pb2.ActionProfileGroup(
            action_profile_id=prof.preamble.id)])
    for kind in ("clone_session_entry", "multicast_group_entry"):
        pre = p4runtime_pb2.PacketReplicationEngineEntry()
        getattr(pre, kind).SetInParent()
        entities += client.read([pre])
    out = []
    for e in entities:
        if e.WhichOneof("entity") == "action_profile_group":
            members = sorted(e.action_profile_group.members, key=lambda m: m.member_id)
            del e.action_profile_group.members[:]
            e.action_profile_group.members.extend(members)
        if e.WhichOneof("entity") == "packet_replication_engine_entry":
            pre = e.packet_replication_engine_entry
            which = pre.WhichOneof("type")
            replicas = sorted(getattr(pre, which).replicas,
                              key=lambda r: (r.egress_port, r.instance))
            del getattr(pre, which).replicas[:]
            getattr(pre, which).replicas.extend(replicas)
        out.append(entity_text(index, e))
    return sorted(out)
