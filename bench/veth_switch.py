"""A switch under test on veth pairs: ``softswitch run`` or BMv2 ``simple_switch_grpc``.

The veth benchmarks (``veth_pps.py``, ``urgent_latency.py``) start either target the
way users start it, with the same interfaces, ``--priority-queues 8`` and a
``simple_switch_CLI``-language channel (softswitch's runtime channel, BMv2's Thrift) that
installs routes and queue settings, so one list of CLI lines configures both. BMv2 gets
the JSON that the real ``p4c-bm2-ss`` compiles from the same source and defines.

Both also serve P4Runtime (:meth:`RunningSwitch.p4runtime`, a controller's client):
softswitch for the program it runs; BMv2, started from its JSON, knows no P4Info, so
:meth:`RunningSwitch.arm_p4runtime` pushes the same JSON with the P4Info ``p4c-bm2-ss``
wrote beside it (SetForwardingPipelineConfig) before anything is configured.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from softswitch import local_port
from softswitch.devtools import reference_tools
from softswitch.local_port import free_port

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("softswitch", "bmv2")


@dataclass
class RunningSwitch:
    """A started switch: its process and how to talk to its CLI channel."""

    target: str
    proc: subprocess.Popen
    cli_command: list[str]
    cli_env: dict[str, str] | None
    grpc_address: str = ""
    # BMv2: its JSON and the P4Info compiled with it (SetForwardingPipelineConfig)
    pipeline: tuple[Path, Path] | None = None

    def configure(self, lines: list[str]) -> None:
        """Run CLI lines; SystemExit naming the target when one fails."""
        cli = subprocess.run(self.cli_command, input="\n".join(lines) + "\n", text=True,
                             capture_output=True, timeout=120, env=self.cli_env)
        failed = [line for line in cli.stdout.splitlines()
                  if "Error" in line or "error" in line or "Invalid" in line]
        if cli.returncode != 0 or failed:
            raise SystemExit(f"{self.target}: configuring failed: "
                             f"{(failed or [cli.stderr.strip()])[:3]}")

    def kernel_drops(self) -> tuple[int, int] | None:
        """Frames the kernel dropped on the switch's ports so far because the switch fell
        behind and a receive ring (socket) filled, as (urgent socket, the others):
        softswitch's ``show_ports``. None for BMv2: its ports (libpcap) do not say."""
        if self.target != "softswitch":
            return None
        cli = subprocess.run(self.cli_command, input="show_ports\n", text=True,
                             capture_output=True, timeout=60, env=self.cli_env)
        counts = re.findall(r"\b(urgent_kernel_drops|kernel_drops)=(\d+)", cli.stdout)
        urgent = sum(int(n) for key, n in counts if key == "urgent_kernel_drops")
        other = sum(int(n) for key, n in counts if key == "kernel_drops")
        if cli.returncode != 0:
            raise SystemExit(f"{self.target}: show_ports failed: {cli.stderr.strip()[:200]}")
        return urgent, other

    def p4runtime(self, election_id: int = 1) -> Any:
        """A P4Runtime client of the switch (``controlplane.p4rt.client.Client``),
        connected as primary with ``election_id``; the caller closes it. SystemExit
        naming the target when it cannot connect."""
        from controlplane.p4rt.client import Client
        from controlplane.p4rt.errors import P4RuntimeClientError

        client = Client(self.grpc_address, 0, election_id=election_id)
        try:
            client.connect(retries=3)
        except P4RuntimeClientError as exc:
            raise SystemExit(f"{self.target}: P4Runtime: {exc}") from None
        return client

    def arm_p4runtime(self) -> None:
        """Make the switch take P4Runtime writes for its program: BMv2 gets its JSON
        and P4Info through SetForwardingPipelineConfig (which empties its tables: call
        it before :meth:`configure`); softswitch serves its program's already."""
        if self.pipeline is None:
            return
        from google.protobuf import text_format
        from p4.config.v1 import p4info_pb2

        from controlplane.p4rt.errors import P4RuntimeClientError

        json_path, info_path = self.pipeline
        info = text_format.Parse(info_path.read_text(), p4info_pb2.P4Info())
        client = self.p4runtime()
        try:
            client.set_pipeline(info, json_path.read_bytes())
        except P4RuntimeClientError as exc:
            raise SystemExit(f"{self.target}: setting its pipeline failed: {exc}") from None
        finally:
            client.close()

    def cli_process(self) -> subprocess.Popen:
        """A CLI process reading commands from a pipe (a controller writing entries)."""
        return subprocess.Popen(self.cli_command, stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                text=True, env=self.cli_env)


def lacks_root(script: str) -> bool:
    """True, having said so on stderr, when this process is not root (veth pairs and
    AF_PACKET sockets need it)."""
    if os.geteuid() == 0:
        return False
    print(f"{script} needs root (veth pairs, AF_PACKET)", file=sys.stderr)
    return True


def available(target: str) -> str | None:
    """None when ``target`` can run here, else why not."""
    if target == "bmv2" and reference_tools.find() is None:
        return reference_tools.missing_reason()
    return None


@contextmanager
def running(target: str, program: Path, interfaces: dict[int, str],
            defines: dict[str, str] | None = None,
            softswitch_args: tuple[str, ...] = ()) -> Iterator[RunningSwitch]:
    """Start ``target`` on ``interfaces`` (port -> interface) and stop it afterwards;
    ``softswitch_args``: target options only softswitch has (its extensions)."""
    defines = defines or {}
    dflags = [f"-D{k}={v}" for k, v in defines.items()]
    ifaces = [arg for port, iface in sorted(interfaces.items())
              for arg in ("-i", f"{port}@{iface}")]
    cli_port = free_port()
    grpc_address = f"127.0.0.1:{free_port()}"
    grpc = ["--", "--grpc-server-addr", grpc_address, "--priority-queues", "8"]
    pipeline: tuple[Path, Path] | None = None
    with tempfile.TemporaryDirectory(prefix=f"veth-{target}-") as tmp:
        work = Path(tmp)
        env: dict[str, str] | None = None
        if target == "softswitch":
            cmd = [sys.executable, "-m", "softswitch", "run", str(program), *dflags, *ifaces,
                   "--thrift-port", str(cli_port), *grpc, *softswitch_args]
            cli = [sys.executable, "-m", "softswitch", "cli", "--port", str(cli_port)]
        else:
            tools = reference_tools.find()
            if tools is None:
                raise SystemExit(reference_tools.missing_reason())
            out_json, out_info = work / "prog.json", work / "prog.p4info.txtpb"
            comp = subprocess.run([tools.p4c, *dflags, "--p4runtime-files", str(out_info),
                                   "-o", str(out_json), str(program)],
                                  capture_output=True, text=True)
            pipeline = (out_json, out_info)
            if comp.returncode != 0:
                raise SystemExit(f"p4c-bm2-ss {program}: {comp.stderr.strip()[:2000]}")
            cmd = [tools.simple_switch_grpc, str(out_json), *ifaces, "--thrift-port",
                   str(cli_port), "--log-level", "off", "--notifications-addr",
                   f"ipc://{work}/notifications.ipc", *grpc]
            cli = tools.cli_command(cli_port)
            env = {**os.environ, **tools.env()}
        log = open(work / "switch.log", "w")  # noqa: SIM115 - closed with the process
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        try:
            _wait(cli_port, proc, work / "switch.log", target)
            yield RunningSwitch(target, proc, cli, env, grpc_address, pipeline)
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait(port: int, proc: subprocess.Popen, log: Path, target: str,
          seconds: float = 120) -> None:
    why = local_port.await_listening(port, seconds, proc)
    if why == "exited":
        raise SystemExit(f"{target} exited: {log.read_text()[-2000:]}")
    if why == "timeout":
        raise SystemExit(f"{target} did not come up in {seconds:.0f} s")
    time.sleep(0.2)
