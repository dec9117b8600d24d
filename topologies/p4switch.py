"""One P4 switch process per topology switch: softswitch or BMv2 ``simple_switch_grpc``.

Users of P4 tooling run Mininet with one BMv2 process per switch, bound to that
switch's interfaces. :class:`SwitchProcess` builds exactly ``simple_switch_grpc``'s
command line (softswitch's ``run`` takes the same one), starts it in the root
namespace with its output in the run directory, waits until its gRPC port answers
(tailcc.p4 takes seconds to compile) and stops it by its own pid — never by name,
since other switches may be running on the machine. :class:`P4Switch` is the Mininet
``Switch`` that wraps it; the plain-namespace backend uses it directly.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from softswitch import local_port
from softswitch.devtools import reference_tools
from topologies.schema import DEFAULT_PROGRAM, PROJECT_ROOT, SwitchSpec

KINDS = ("softswitch", "bmv2")
PRIORITIES = ("normal", "realtime")
# SCHED_FIFO level of a switch's threads under ``realtime``: above every host process
# (all SCHED_OTHER), far below the kernel's own real-time threads (migration, 99)
REALTIME_PRIORITY = 20


class SwitchStartError(Exception):
    """A switch could not be started (the message says which and why)."""


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    """True if something already listens on ``host:port`` (a stale or foreign switch)."""
    return local_port.listening(port, host, timeout=0.2)


def softswitch_command() -> list[str]:
    """``softswitch`` from this interpreter's environment (the project venv)."""
    script = Path(sys.executable).parent / "softswitch"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "softswitch"]


def tool_command(name: str) -> list[str]:
    """A console script of this project (``tailcc``) next to this interpreter."""
    script = Path(sys.executable).parent / name
    if script.exists():
        return [str(script)]
    module = {"tailcc": "controlplane.cli"}.get(name, name)
    return [sys.executable, "-m", module]


def bmv2_program(spec: SwitchSpec, run_dir: Path) -> Path:
    """The BMv2 JSON for ``spec``: the program itself, or compiled with ``p4c``."""
    if spec.program.suffix == ".json":
        return spec.program
    return p4c_compile(spec.program, run_dir / f"{spec.name}.json",
                       run_dir / f"{spec.name}.p4info.txtpb", spec.name)


def p4c_compile(program: Path, out: Path, p4info: Path, who: str) -> Path:
    """``program`` compiled by p4c for BMv2 (v1model) into ``out`` and its P4Info into
    ``p4info``; ``who`` names the switch in errors."""
    tools = reference_tools.find()
    p4c = tools.p4c if tools is not None else (shutil.which("p4c") or shutil.which("p4c-bm2-ss"))
    if p4c is None:
        raise SwitchStartError(f"{who}: --switch bmv2 needs {program.name} compiled to BMv2 "
                               "JSON, and p4c is not installed (give the switch a .json "
                               "program, or use --switch softswitch)")
    argv = [p4c, "--target", "bmv2", "--arch", "v1model", "-o", str(out),
            "--p4runtime-files", str(p4info), str(program)]
    if Path(p4c).name == "p4c":
        argv[argv.index("-o") + 1] = str(out.parent)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise SwitchStartError(f"{who}: p4c failed on {program}:\n"
                               f"{done.stdout}{done.stderr}".rstrip())
    compiled = out.parent / f"{program.stem}.json"
    if compiled.exists() and compiled != out:
        compiled.replace(out)
    return out


def realtime_unbounded(path: str = "/proc/sys/kernel/sched_rt_runtime_us") -> str | None:
    """Why real-time switch threads would be unsafe here, or None. With the kernel's
    real-time throttling off (``sched_rt_runtime_us`` -1) a SCHED_FIFO thread that
    spins never yields a core; on 2 cores two such threads would stop the machine."""
    try:
        runtime = int(Path(path).read_text())
    except (OSError, ValueError):
        return f"{path} cannot be read, so the kernel's real-time throttling is unknown"
    if runtime < 0:
        return (f"the kernel's real-time throttling is off ({path} = -1): a spinning "
                "switch thread would never yield its core")
    return None


def realtime_unavailable() -> str | None:
    """Why switch threads cannot run SCHED_FIFO here, or None when they can: the
    kernel's throttling is off (:func:`realtime_unbounded`), or a process of ours may
    not take the policy (no CAP_SYS_NICE, as in a container without it, or no real-time
    time in its cgroup) — tried with util-linux's ``chrt`` on ``true``."""
    unbounded = realtime_unbounded()
    if unbounded:
        return unbounded
    chrt = shutil.which("chrt")
    if chrt is None:
        return "chrt (util-linux) is not installed, so real-time priority cannot be tried"
    done = subprocess.run([chrt, "--fifo", str(REALTIME_PRIORITY), "true"],
                          capture_output=True, text=True, timeout=10, check=False)
    if done.returncode != 0:
        return f"real-time priority is not permitted here ({done.stderr.strip()})"
    return None


class SwitchProcess:
    """The process of one switch, started in the root namespace on ``ports``."""

    def __init__(self, spec: SwitchSpec, kind: str, run_dir: Path,
                 ports: dict[int, str]) -> None:
        if kind not in KINDS:
            raise SwitchStartError(f"unknown switch kind {kind!r} (one of: "
                                   f"{', '.join(KINDS)})")
        self.spec = spec
        self.kind = kind
        self.run_dir = run_dir
        self.ports = ports
        self.proc: subprocess.Popen[bytes] | None = None
        self.output = run_dir / f"{spec.name}.out"

    def pcap_dir(self) -> Path:
        """Where the switch writes ``<interface>_in.pcap``/``_out.pcap``."""
        return self.spec.pcap_dir or self.run_dir / "pcap" / self.spec.name

    def argv(self) -> list[str]:
        """``simple_switch_grpc``'s command line (softswitch: ``softswitch run`` + same)."""
        spec = self.spec
        if self.kind == "bmv2":
            tools = reference_tools.find()
            exe = tools.simple_switch_grpc if tools is not None else None
            if exe is None:
                raise SwitchStartError("--switch bmv2: simple_switch_grpc is not installed "
                                       f"({reference_tools.missing_reason()}); use --switch "
                                       "softswitch")
            # each process its own notification socket (the default one is per device
            # id, machine-wide), so several topologies and test runs can coexist
            head = [exe, str(bmv2_program(spec, self.run_dir)), "--notifications-addr",
                    f"ipc://{self.run_dir}/{spec.name}-notifications.ipc"]
            log_file = str(self.run_dir / spec.name)          # BMv2 appends ".txt"
        else:
            head = [*softswitch_command(), "run", str(spec.program)]
            log_file = str(self.run_dir / f"{spec.name}.log")
        argv = list(head)
        for port, intf in sorted(self.ports.items()):
            argv += ["-i", f"{port}@{intf}"]
        if spec.is_nic:
            if self.kind == "bmv2":
                raise SwitchStartError(f"{spec.name} is a NIC (a PNA program): BMv2's "
                                       "pna_nic cannot run p4c's generic PNA programs; use "
                                       "--switch softswitch")
            argv += [f"--host-port={p}" for p in spec.host_ports]
            argv += [f"--net-port={p}" for p in spec.net_ports]
            if spec.loopback_port is not None:
                argv += ["--loopback-port", str(spec.loopback_port)]
        argv += ["--device-id", str(spec.device_id), "--thrift-port", str(spec.thrift_port),
                 "--log-file", log_file, "--log-level", spec.log_level]
        if spec.pcap:
            argv += ["--pcap", str(self.pcap_dir())]
        argv += ["--", "--grpc-server-addr", f"127.0.0.1:{spec.grpc_port}",
                 "--cpu-port", str(spec.cpu_port),
                 "--priority-queues", str(spec.priority_queues)]
        return argv

    def start(self) -> None:
        """Start the process (returns at once; :meth:`wait_ready` waits for gRPC)."""
        if port_in_use(self.spec.grpc_port):
            raise SwitchStartError(f"{self.spec.name}: gRPC port {self.spec.grpc_port} is "
                                   "already in use (another switch running? change "
                                   "grpc_port or stop it)")
        argv = self.argv()
        if self.spec.pcap:
            self.pcap_dir().mkdir(parents=True, exist_ok=True)
        with open(self.output, "wb") as out:
            out.write((" ".join(argv) + "\n").encode())
            out.flush()
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        (self.run_dir / f"{self.spec.name}.pid").write_text(f"{self.proc.pid}\n")

    def wait_ready(self, deadline: float) -> None:
        """Block until the gRPC port accepts connections, or raise with the log's tail."""
        assert self.proc is not None
        why = local_port.await_listening(self.spec.grpc_port,
                                         max(0.0, deadline - time.monotonic()), self.proc)
        if why == "exited":
            raise SwitchStartError(f"{self.spec.name}: {self.kind} exited with status "
                                   f"{self.proc.returncode}:\n{self.tail()}")
        if why == "timeout":
            raise SwitchStartError(f"{self.spec.name}: gRPC port {self.spec.grpc_port} "
                                   f"not up in time:\n{self.tail()}")

    def run_realtime(self, priority: int = REALTIME_PRIORITY) -> int:
        """Move every thread of the switch to SCHED_FIFO ``priority``; returns how many.

        In Mininet the switches share the machine's cores with the hosts' senders and
        receivers, and each packet crosses a switch as several thread hand-offs (BMv2:
        receive, ingress, egress, transmit). A woken switch thread that must wait for a
        host process's time slice adds that wait to every hop, which a switch of its own
        never does. Under SCHED_FIFO it runs as soon as a packet wakes it; the kernel's
        real-time throttling (``sched_rt_runtime_us``, 95% of each second by default)
        still leaves the hosts their share if a switch spun. Threads the switch starts
        later inherit the policy. Raises :class:`SwitchStartError` when not permitted.
        The caller checks once that the kernel still throttles real-time time
        (:func:`realtime_unbounded`).
        """
        assert self.proc is not None
        param = os.sched_param(priority)
        moved = 0
        try:
            tids = os.listdir(f"/proc/{self.proc.pid}/task")
        except FileNotFoundError:
            raise SwitchStartError(f"{self.spec.name}: the switch process has exited:\n"
                                   f"{self.tail()}") from None
        for tid in tids:
            try:
                os.sched_setscheduler(int(tid), os.SCHED_FIFO, param)
            except ProcessLookupError:          # a thread that ended meanwhile
                continue
            except PermissionError:
                raise SwitchStartError(f"{self.spec.name}: real-time priority not permitted "
                                       "(needs root or CAP_SYS_NICE, and real-time time in "
                                       "its cgroup); use switch priority normal") from None
            moved += 1
        return moved

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.output.read_text(errors="replace")
        except OSError:
            return "(no output)"
        return "\n".join("    " + ln for ln in text.splitlines()[-lines:])

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM (the switch closes its sockets), SIGKILL after ``grace`` seconds."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(5)
        (self.run_dir / f"{self.spec.name}.pid").unlink(missing_ok=True)


def host_offloads_off(run: object, intf: str) -> None:
    """Checksum/segmentation offloads off, as p4lang/tutorials do: a software switch
    forwards the partial checksums of offloaded TCP unchanged and the receiver drops
    them. ``run`` executes an argv where the interface lives."""
    if shutil.which("ethtool") is None:
        return
    run(["ethtool", "-K", intf, "tx", "off", "rx", "off", "sg", "off"])  # type: ignore


def _mininet_switch_class() -> type:
    from mininet.node import Switch

    class P4Switch(Switch):
        """A Mininet switch backed by one softswitch/simple_switch_grpc process.

        The runner passes a validated ``spec``; a user's own Mininet script passes the
        options p4lang/tutorials' ``P4RuntimeSwitch`` takes instead::

            net.addSwitch("s1", cls=P4Switch, program="p4src/samples/l3_basic.p4",
                          grpc_port=50051, device_id=0)

        and ``start`` then waits until the switch answers on gRPC (``wait``), so the
        script can program it as soon as ``net.start()`` returns.
        """

        def __init__(self, name: str, spec: SwitchSpec | None = None, kind: str = "softswitch",
                     run_dir: Path | None = None, program: str | Path | None = None,
                     grpc_port: int = 9559, thrift_port: int = 9090, device_id: int = 0,
                     cpu_port: int = 255, priority_queues: int = 8, pcap: bool = False,
                     log_level: str = "info", wait: bool | None = None,
                     start_timeout: float = 120.0, **params: object) -> None:
            if spec is None:
                path = Path(program) if program is not None else PROJECT_ROOT / DEFAULT_PROGRAM
                if not path.is_absolute() and not path.exists():
                    path = PROJECT_ROOT / path
                spec = SwitchSpec(name=name, program=path.resolve(), grpc_port=grpc_port,
                                  thrift_port=thrift_port, device_id=device_id,
                                  cpu_port=cpu_port, priority_queues=priority_queues,
                                  pcap=pcap, log_level=log_level)
                wait = True if wait is None else wait
            params.setdefault("dpid", f"{spec.device_id + 1:016x}")
            super().__init__(name, **params)
            self.spec = spec
            self.kind = kind
            self.run_dir = Path(run_dir or PROJECT_ROOT / "out" / "mininet").resolve()
            self.wait = bool(wait)
            self.start_timeout = start_timeout
            self.process: SwitchProcess | None = None

        def start(self, controllers: list) -> None:
            ports = {self.ports[intf]: intf.name for intf in self.intfList()
                     if intf.name != "lo"}
            for intf in ports.values():
                self.cmd(f"sysctl -qw net.ipv6.conf.{intf}.disable_ipv6=1")
                host_offloads_off(lambda argv: self.cmd(" ".join(argv)), intf)
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self.process = SwitchProcess(self.spec, self.kind, self.run_dir, ports)
            self.process.start()
            if self.wait:
                self.process.wait_ready(time.monotonic() + self.start_timeout)

        def stop(self, deleteIntfs: bool = True) -> None:  # noqa: N803 - Mininet's API
            if self.process is not None:
                self.process.stop()
            super().stop(deleteIntfs)

    return P4Switch


def __getattr__(name: str) -> type:
    """``P4Switch`` is built on first use, so this module imports without Mininet."""
    if name == "P4Switch":
        cls = _mininet_switch_class()
        globals()["P4Switch"] = cls
        return cls
    raise AttributeError(name)
