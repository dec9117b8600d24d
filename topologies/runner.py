"""Bring a topology up, program its switches, check it, and always tear it down.

Two backends build the same network: Mininet (hosts in Mininet's namespaces, links via
``TCLink``, one :class:`~topologies.p4switch.P4Switch` per switch) and plain network
namespaces (``ip netns`` + veth pairs), which needs nothing but iproute2 and is what CI
uses when Mininet is missing. In both, switch ports are root-namespace interfaces named
like Mininet's (``s1-eth1``) and each switch is one process bound to them.

After the switches answer on gRPC the runner programs them, in this order: the
topology's ``intent`` through ``tailcc apply`` (addresses taken from the topology, so a
test can move ports), each switch's ``runtime_json`` through ``tailcc load``
(p4lang/tutorials files), each switch's ``cli_commands`` through ``softswitch cli`` or
``simple_switch_CLI``. Every step that fails stops the run with its output; teardown
runs in a ``finally`` and also removes what an earlier, killed run left behind.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from softswitch import local_port
from softswitch.devtools import reference_tools
from topologies.p4switch import (
    PRIORITIES,
    REALTIME_PRIORITY,
    SwitchProcess,
    SwitchStartError,
    host_offloads_off,
    port_in_use,
    realtime_unbounded,
    softswitch_command,
    tool_command,
)
from topologies.schema import PROJECT_ROOT, LinkSpec, Topology

BACKENDS = ("mininet", "netns")
NETNS_PREFIX = "tcc-"


class RunnerError(Exception):
    """The topology could not be brought up or programmed (message says where/why)."""


@dataclass
class PingResult:
    src: str
    dst: str
    dst_ip: str
    sent: int
    received: int
    rtt_min: float | None = None
    rtt_avg: float | None = None
    rtt_max: float | None = None

    @property
    def ok(self) -> bool:
        return self.received == self.sent and self.sent > 0

    def line(self) -> str:
        rtt = (f"rtt min/avg/max {self.rtt_min:.3f}/{self.rtt_avg:.3f}/{self.rtt_max:.3f} ms"
               if self.rtt_avg is not None else "no replies")
        return f"{self.src} -> {self.dst} ({self.dst_ip}): {self.received}/{self.sent}, {rtt}"


@dataclass
class TcpResult:
    src: str
    dst: str
    sent: int
    received: int
    seconds: float

    @property
    def mbps(self) -> float:
        return self.received * 8 / self.seconds / 1e6 if self.seconds > 0 else 0.0

    def line(self) -> str:
        return (f"{self.src} -> {self.dst}: TCP {self.received} bytes in {self.seconds:.2f} s "
                f"= {self.mbps:.1f} Mb/s (sent {self.sent})")


# Receiver/sender run inside the hosts with this interpreter: one connection, counted.
_TCP_SERVER = """
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1); s.settimeout(60)
print("listening", flush=True)
c, _ = s.accept(); c.settimeout(60); n = 0
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    n += len(b)
print(n, flush=True)
"""
_TCP_CLIENT = """
import socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
buf = bytes(1 << 16); n = 0; t0 = time.monotonic(); end = t0 + float(sys.argv[3])
while time.monotonic() < end:
    c.sendall(buf); n += len(buf)
c.shutdown(socket.SHUT_WR); c.recv(1); c.close()
print(n, time.monotonic() - t0, flush=True)
"""

_RTT_RE = re.compile(r"= ([\d.]+)/([\d.]+)/([\d.]+)/")
_COUNT_RE = re.compile(r"(\d+) packets transmitted, (\d+) received")


def parse_ping(src: str, dst: str, dst_ip: str, output: str) -> PingResult:
    """Counts and RTTs from iputils ``ping`` output (no replies: RTTs are None)."""
    counts = _COUNT_RE.search(output)
    sent, received = (int(counts.group(1)), int(counts.group(2))) if counts else (0, 0)
    rtt = _RTT_RE.search(output)
    if rtt:
        return PingResult(src, dst, dst_ip, sent, received,
                          *(float(rtt.group(i)) for i in (1, 2, 3)))
    return PingResult(src, dst, dst_ip, sent, received)


def default_backend() -> str:
    """Mininet where Debian's mininet module imports (and mnexec exists), else netns."""
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        return "netns"
    return "mininet" if shutil.which("mnexec") else "netns"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30,
                          check=False)
    if check and done.returncode != 0:
        raise RunnerError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def link_exists(name: str) -> bool:
    return _ip("link", "show", "dev", name, check=False).returncode == 0


def netns_exists(name: str) -> bool:
    return Path("/run/netns", name).exists()


def kernel_has_netem() -> bool:
    """Whether ``tc`` can attach netem (link ``delay``/``loss``): many VM kernels lack
    sch_netem, and Mininet would only log an error and build the link without delay."""
    ns = f"{NETNS_PREFIX}netem-probe"
    _ip("netns", "add", ns, check=False)
    try:
        _ip("-n", ns, "link", "add", "p0", "type", "veth", "peer", "name", "p1", check=False)
        done = subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "p0",
                               "root", "netem", "delay", "1ms"], capture_output=True,
                              timeout=30, check=False)
        return done.returncode == 0
    finally:
        _ip("netns", "del", ns, check=False)


# ------------------------------------------------------------------------ backends
class NetnsNetwork:
    """Hosts as named network namespaces (``tcc-h1``), links as veth pairs."""

    def __init__(self, topo: Topology, prefix: str = NETNS_PREFIX) -> None:
        self.topo = topo
        self.prefix = prefix
        self.created_ns: list[str] = []
        self.created_links: list[str] = []

    def ns(self, host: str) -> str:
        return f"{self.prefix}{host}"

    def build(self) -> None:
        for host in self.topo.hosts:
            _ip("netns", "add", self.ns(host.name))
            self.created_ns.append(self.ns(host.name))
            self.host_run(host.name, ["ip", "link", "set", "lo", "up"])
        for i, link in enumerate(self.topo.links):
            self._link(i, link)

    def _link(self, index: int, link: LinkSpec) -> None:
        names = [self._intf_name(e.node, e.port) for e in (link.a, link.b)]
        tmp = [f"tcc{index}{x}{int(time.time() * 1000) % 100000}" for x in "ab"]
        _ip("link", "add", tmp[0], "type", "veth", "peer", "name", tmp[1])
        self.created_links.append(tmp[0])
        for end, name, t in zip((link.a, link.b), names, tmp, strict=True):
            if end.port is None:          # host end: moved into the host's namespace
                _ip("link", "set", t, "netns", self.ns(end.node), "name", name)
                host = self.topo.host(end.node)
                self.host_run(end.node, ["ip", "link", "set", name, "address", host.mac])
            else:
                _ip("link", "set", t, "name", name)
                self.created_links.append(name)
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1"],
                               capture_output=True, check=False)
                _ip("link", "set", name, "up")
                host_offloads_off(_run_root, name)
        self.created_links.remove(tmp[0])
        for end, name in zip((link.a, link.b), names, strict=True):
            self._shape(end.node if end.port is None else None, name, link)

    def _intf_name(self, node: str, port: int | None) -> str:
        return self.topo.host_intf(node) if port is None else self.topo.switch(node).intf(port)

    def _shape(self, host: str | None, intf: str, link: LinkSpec) -> None:
        """``tc`` as Mininet's TCLink does it: HTB for bw, netem below it for delay/loss."""
        run = (lambda argv: self.host_run(host, argv)) if host else _run_root_checked
        parent = ["root"]
        if link.bw is not None:
            run(["tc", "qdisc", "add", "dev", intf, "root", "handle", "5:0", "htb",
                 "default", "1"])
            run(["tc", "class", "add", "dev", intf, "parent", "5:0", "classid", "5:1",
                 "htb", "rate", f"{link.bw}Mbit", "burst", "15k"])
            parent = ["parent", "5:1"]
        netem = []
        if link.delay:
            netem += ["delay", link.delay]
        if link.loss:
            netem += ["loss", f"{link.loss}%"]
        if link.max_queue_size:
            netem += ["limit", str(link.max_queue_size)]
        if netem:
            run(["tc", "qdisc", "add", "dev", intf, *parent, "handle", "10:", "netem", *netem])

    def host_run(self, host: str, argv: list[str], timeout: float = 30,
                 check: bool = True) -> tuple[int, str]:
        done = subprocess.run(["ip", "netns", "exec", self.ns(host), *argv],
                              capture_output=True, text=True, timeout=timeout, check=False)
        out = done.stdout + done.stderr
        if check and done.returncode != 0:
            raise RunnerError(f"{host}: {' '.join(argv)}: {out.strip()}")
        return done.returncode, out

    def host_popen(self, host: str, argv: list[str]) -> subprocess.Popen[str]:
        return subprocess.Popen(["ip", "netns", "exec", self.ns(host), *argv],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def add_switch_processes(self, make: Callable[[str, dict[int, str]], SwitchProcess],
                             procs: list[SwitchProcess]) -> None:
        """Start one process per switch, each listed in ``procs`` before it starts so a
        failure of a later one still stops the earlier ones."""
        for sw in self.topo.switches:
            ports = {e.port: sw.intf(e.port) for lk in self.topo.links
                     for e in (lk.a, lk.b) if e.node == sw.name and e.port is not None}
            proc = make(sw.name, ports)
            procs.append(proc)
            proc.start()

    def interactive(self) -> None:
        print("netns backend: enter a host with", file=sys.stderr)
        for host in self.topo.hosts:
            print(f"    ip netns exec {self.ns(host.name)} bash", file=sys.stderr)
        print("Ctrl-C tears the topology down.", file=sys.stderr, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)

    def stop(self) -> None:
        for ns in self.created_ns:
            _ip("netns", "del", ns, check=False)
        for name in self.created_links:
            if link_exists(name):
                _ip("link", "del", name, check=False)
        self.created_ns.clear()
        self.created_links.clear()


def _run_root(argv: list[str]) -> None:
    subprocess.run(argv, capture_output=True, timeout=30, check=False)


def _run_root_checked(argv: list[str]) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    if done.returncode != 0:
        raise RunnerError(f"{' '.join(argv)}: {done.stderr.strip()}")


class _DropHtbQuantum(logging.Filter):
    """tc's "quantum of class … is big" is advice, which Mininet logs as an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "quantum of class" not in record.getMessage()


def _quiet_htb_quantum() -> None:
    from mininet.log import lg

    if not any(isinstance(f, _DropHtbQuantum) for f in lg.filters):
        lg.addFilter(_DropHtbQuantum())


class MininetNetwork:
    """The same network built by Mininet with one P4Switch per switch."""

    def __init__(self, topo: Topology, kind: str, run_dir: Path) -> None:
        from mininet.link import TCLink
        from mininet.log import setLogLevel
        from mininet.net import Mininet

        from topologies.p4switch import P4Switch

        setLogLevel("warning")
        _quiet_htb_quantum()
        self.topo = topo
        self.net = Mininet(controller=None, link=TCLink, build=False, autoSetMacs=False,
                           autoStaticArp=False, waitConnected=False)
        self.started = False
        for host in topo.hosts:
            self.net.addHost(host.name, ip=str(host.ip), mac=host.mac)
        for sw in topo.switches:
            self.net.addSwitch(sw.name, cls=P4Switch, spec=sw, kind=kind, run_dir=run_dir)
        for link in topo.links:
            opts: dict[str, Any] = {}
            if link.bw is not None:
                opts["bw"] = link.bw
            if link.delay:
                opts["delay"] = link.delay
            if link.loss:
                opts["loss"] = link.loss
            if link.max_queue_size:
                opts["max_queue_size"] = link.max_queue_size
            ends = []
            for end in (link.a, link.b):
                ends.append((end.node, 0 if end.port is None else end.port))
            self.net.addLink(ends[0][0], ends[1][0], port1=ends[0][1], port2=ends[1][1],
                             **opts)

    def build(self) -> None:
        self.net.build()
        for host in self.topo.hosts:
            if self.topo.host_eth0:           # as tutorials' P4Host.config does
                self.net.get(host.name).defaultIntf().rename(self.topo.host_intf(host.name))
            self.host_run(host.name, ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
                          check=False)

    def add_switch_processes(self, make: Callable[[str, dict[int, str]], SwitchProcess],
                             procs: list[SwitchProcess]) -> None:
        """Mininet starts the switches (P4Switch.start); its stop() stops them."""
        del make                        # P4Switch makes its own in start()
        self.started = True
        self.net.start()
        procs.extend(sw.process for sw in self.net.switches if sw.process is not None)

    def host_run(self, host: str, argv: list[str], timeout: float = 30,
                 check: bool = True) -> tuple[int, str]:
        node = self.net.get(host)
        proc = node.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        text = out.decode(errors="replace")
        if check and proc.returncode != 0:
            raise RunnerError(f"{host}: {' '.join(argv)}: {text.strip()}")
        return proc.returncode, text

    def host_popen(self, host: str, argv: list[str]) -> subprocess.Popen[str]:
        return self.net.get(host).popen(argv, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)

    def interactive(self) -> None:
        from mininet.cli import CLI
        from mininet.log import setLogLevel

        setLogLevel("output")           # the CLI's command output is logged at this level
        CLI(self.net)

    def stop(self) -> None:
        self.net.stop()


# -------------------------------------------------------------------------- runner
class Runner:
    """One run of a topology: ``with Runner(topo) as r: r.pingall()``."""

    def __init__(self, topo: Topology, switch_kind: str = "softswitch",
                 backend: str | None = None, run_dir: Path | None = None,
                 start_timeout: float = 120.0, log: Callable[[str], None] | None = None,
                 allow_partial: bool | None = None, switch_priority: str = "normal",
                 prepare: Callable[[Path], None] | None = None) -> None:
        self.topo = topo
        # called with the run directory once the pre-flight checks pass, before anything
        # is built (the tutorials runner compiles the exercise's programs there)
        self.prepare = prepare
        if switch_priority not in PRIORITIES:
            raise RunnerError(f"unknown switch priority {switch_priority!r} (one of: "
                              f"{', '.join(PRIORITIES)})")
        # realtime: the switches' threads run SCHED_FIFO once programmed, ahead of the
        # hosts' processes on the shared cores (SwitchProcess.run_realtime says why)
        self.switch_priority = switch_priority
        # What the target cannot take of the intent's schedulers (BMv2: DWRR weights,
        # link rates, PFC): None = skipped with a printed warning on BMv2 (the shipped
        # intents carry softswitch's extensions), False = refused (apply fails).
        self.allow_partial = (switch_kind == "bmv2") if allow_partial is None \
            else allow_partial
        self.kind = switch_kind
        self.backend = backend or default_backend()
        if self.backend not in BACKENDS:
            raise RunnerError(f"unknown backend {self.backend!r} (one of: "
                              f"{', '.join(BACKENDS)})")
        self.run_dir = (run_dir or PROJECT_ROOT / "out" / "topologies" / topo.name).resolve()
        self.start_timeout = start_timeout
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.net: NetnsNetwork | MininetNetwork | None = None
        self.processes: list[SwitchProcess] = []
        self._created = False       # past the pre-flight: what exists now is ours

    # --- lifecycle -------------------------------------------------------------------
    def __enter__(self) -> Runner:
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    def up(self) -> None:
        """Build, start and program everything; on any failure tear down and raise."""
        try:
            self._up()
        except BaseException:
            self.down()
            raise

    def _up(self) -> None:
        self._preflight()
        self._created = True
        self.run_dir.mkdir(parents=True, exist_ok=True)
        if self.prepare is not None:
            self.prepare(self.run_dir)
        t0 = time.monotonic()
        if self.backend == "mininet":
            self.net = MininetNetwork(self.topo, self.kind, self.run_dir)
        else:
            self.net = NetnsNetwork(self.topo)
        self.net.build()
        self._configure_hosts()
        self.net.add_switch_processes(self._make_process, self.processes)
        deadline = time.monotonic() + self.start_timeout
        try:
            for proc in self.processes:
                proc.wait_ready(deadline)
        except SwitchStartError as exc:
            raise RunnerError(str(exc)) from None
        self.log(f"{self.topo.name}: {len(self.topo.switches)} {self.kind} switch(es), "
                 f"{len(self.topo.hosts)} host(s) up on {self.backend} in "
                 f"{time.monotonic() - t0:.1f} s (logs: {self.run_dir})")
        self._program()
        if self.switch_priority == "realtime":
            self._run_switches_realtime()

    def _run_switches_realtime(self) -> None:
        """After programming (a loaded pipeline has all its packet threads), so set-up
        (softswitch compiling tailcc.p4) never holds a core ahead of everything else."""
        unbounded = realtime_unbounded()
        if unbounded:
            raise RunnerError(f"{self.topo.name}: switches not moved to real-time "
                              f"priority: {unbounded}; use switch priority normal")
        try:
            threads = sum(proc.run_realtime() for proc in self.processes)
        except SwitchStartError as exc:
            raise RunnerError(str(exc)) from None
        self.log(f"{self.topo.name}: {threads} switch threads at real-time priority "
                 f"(SCHED_FIFO {REALTIME_PRIORITY}), ahead of the hosts' processes")

    def _make_process(self, name: str, ports: dict[int, str]) -> SwitchProcess:
        return SwitchProcess(self.topo.switch(name), self.kind, self.run_dir, ports)

    def down(self) -> None:
        """Stop switches, remove namespaces and links; idempotent, never raises."""
        for proc in self.processes:
            with contextlib.suppress(Exception):
                proc.stop()
        net, self.net = self.net, None
        if net is not None:
            with contextlib.suppress(Exception):
                net.stop()
        self.processes = []
        if self._created:           # never remove what a refused start found in place
            cleanup(self.topo, self.run_dir, quiet=True, mininet_shells=False)
        self._created = False

    # --- checks before creating anything ---------------------------------------------
    def _preflight(self) -> None:
        leftovers = leftovers_of(self.topo, self.run_dir)
        if leftovers:
            default_dir = PROJECT_ROOT / "out" / "topologies" / self.topo.name
            where = "" if self.run_dir == default_dir.resolve() else \
                f" --run-dir {self.run_dir}"
            raise RunnerError(f"{self.topo.name}: left over from an earlier run: "
                              f"{', '.join(leftovers)} (run: python -m topologies "
                              f"{self.topo.path} --clean{where})")
        for i, sw in enumerate(self.topo.switches):
            if port_in_use(sw.grpc_port):
                raise RunnerError(f"switches[{i}] ({sw.name}): gRPC port {sw.grpc_port} is "
                                  "already in use")
        if self.backend == "mininet" and shutil.which("mnexec") is None:
            raise RunnerError("backend mininet: mnexec not found (apt-get install mininet), "
                              "or use --backend netns")
        if shutil.which("ping") is None:
            self.log("warning: ping is not installed (apt-get install iputils-ping)")
        if self.topo.intent is not None:      # the user's file and lines, before set-up
            done = subprocess.run([*tool_command("tailcc"), "validate", str(self.topo.intent)],
                                  capture_output=True, text=True, timeout=120, check=False)
            if done.returncode != 0:
                raise RunnerError(f"intent {self.topo.intent} is invalid:\n"
                                  f"{(done.stdout + done.stderr).strip()}")
        if any(lk.delay or lk.loss or lk.max_queue_size for lk in self.topo.links) \
                and not kernel_has_netem():
            raise RunnerError("links with delay/loss/max_queue_size need the kernel's netem "
                              "qdisc (sch_netem), which this kernel does not have: remove "
                              "them or run on a kernel with netem")

    # --- host set-up -----------------------------------------------------------------
    def _configure_hosts(self) -> None:
        assert self.net is not None
        run = self.net.host_run
        for host in self.topo.hosts:
            intf = self.topo.host_intf(host.name)
            if isinstance(self.net, NetnsNetwork):
                run(host.name, ["ip", "addr", "add", str(host.ip), "dev", intf])
                run(host.name, ["ip", "link", "set", intf, "up"])
                run(host.name, ["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"],
                    check=False)
            host_offloads_off(lambda argv, h=host.name: run(h, argv, check=False), intf)
            if host.gateway is not None:
                run(host.name, ["ip", "route", "replace", "default", "via",
                                str(host.gateway), "dev", intf])
                if host.gateway_mac:
                    run(host.name, ["ip", "neigh", "replace", str(host.gateway), "lladdr",
                                    host.gateway_mac, "dev", intf, "nud", "permanent"])
            for command in host.commands:
                code, out = run(host.name, ["sh", "-c", command], check=False)
                if code != 0:
                    raise RunnerError(f"{host.name}: command {command!r} failed "
                                      f"({code}): {out.strip()}")

    # --- programming -----------------------------------------------------------------
    def _program(self) -> None:
        if self.topo.intent is not None:
            self._apply_intent()
        for sw in self.topo.switches:
            if sw.runtime_json is not None:
                self._tool(sw.name, [*tool_command("tailcc"), "load", str(sw.runtime_json),
                                     *self._pipeline_args(sw), "-a",
                                     f"127.0.0.1:{sw.grpc_port}", "--device-id",
                                     str(sw.device_id)], "load")
            if sw.cli_commands is not None:
                self._cli_commands(sw)

    def _p4info(self, sw: Any) -> Path:
        """The switch program's P4Info (same names on BMv2 and softswitch): beside a
        compiled program (``build/basic.json`` + ``build/basic.p4info.txtpb``), else
        compiled from its source into the run directory."""
        beside = sw.program.with_suffix(".p4info.txtpb")
        if sw.program.suffix == ".json" and beside.exists():
            return beside
        out = self.run_dir / f"{sw.name}.p4info.txtpb"
        if not out.exists() or out.stat().st_mtime < sw.program.stat().st_mtime:
            if sw.program.suffix != ".p4":
                raise RunnerError(f"{sw.name}: runtime_json needs the P4 source of "
                                  f"{sw.program.name} for its P4Info")
            self._tool(sw.name, [*softswitch_command(), "compile", str(sw.program),
                                 "--p4runtime-files", str(out)], "p4info")
        return out

    def _pipeline_args(self, sw: Any) -> list[str]:
        """How ``tailcc load`` finds the P4Info: softswitch loaded the program from its
        command line, so entries only; simple_switch_grpc started from a JSON has no
        P4Info yet, so the pipeline (JSON + P4Info from p4c) is set first."""
        if self.kind == "bmv2":
            if sw.program.suffix == ".json":      # p4c's own output: build/basic.json
                json_path = sw.program
                p4info = sw.program.with_suffix(".p4info.txtpb")
            else:
                json_path = self.run_dir / f"{sw.name}.json"
                p4info = self.run_dir / f"{sw.name}.p4info.txtpb"
            if not (json_path.exists() and p4info.exists()):
                raise RunnerError(f"{sw.name}: programming BMv2 needs the P4Info of its "
                                  f"program ({p4info} not found): give the switch its .p4 "
                                  "source, or put p4c's P4Info next to the JSON")
            return ["--pipeline", str(json_path), "--p4info", str(p4info)]
        return ["--no-pipeline", "--p4info", str(self._p4info(sw))]

    def _apply_intent(self) -> None:
        assert self.topo.intent is not None
        derived = self.run_dir / "intent.yaml"
        derived.write_text(derive_intent(self.topo, self.kind), encoding="utf-8")
        programs = {sw.program for sw in self.topo.switches}
        argv = [*tool_command("tailcc"), "apply", str(derived), "--quiet"]
        if self.allow_partial:
            argv.append("--allow-partial")
        if len(programs) == 1 and self.kind == "bmv2":
            argv += self._pipeline_args(self.topo.switches[0])
        elif len(programs) == 1:
            argv += ["--pipeline", str(next(iter(programs)))]
        self._tool("intent", argv, "apply")

    def _cli_commands(self, sw: Any) -> None:
        assert sw.cli_commands is not None
        if self.kind == "bmv2":
            tools = reference_tools.find()
            if tools is None:
                raise RunnerError(f"{sw.name}: cli_commands need simple_switch_CLI: "
                                  f"{reference_tools.missing_reason()}")
            argv = tools.cli_command(sw.thrift_port)   # under a Python that has thrift
            lines = sw.cli_commands.read_text(encoding="utf-8").splitlines()
            # simple_switch_CLI has no comments; softswitch cli skips them.
            commands = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
            self._tool(sw.name, argv, "cli", stdin="\n".join(commands) + "\n")
            return
        if not _wait_port(sw.thrift_port, 10.0):
            raise RunnerError(f"{sw.name}: cli_commands: softswitch does not answer on its "
                              f"runtime port {sw.thrift_port} (--thrift-port): this "
                              "softswitch version may not serve the runtime channel; use "
                              "runtime_json or an intent instead")
        self._tool(sw.name, [*softswitch_command(), "cli", "--port", str(sw.thrift_port),
                             str(sw.cli_commands)], "cli")

    def _tool(self, who: str, argv: list[str], what: str, stdin: str | None = None) -> str:
        """Run a project tool; its output (logged to the run directory) is returned."""
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300,
                              input=stdin, cwd=PROJECT_ROOT, check=False)
        with open(self.run_dir / f"{who}.{what}.log", "w", encoding="utf-8") as f:
            f.write(" ".join(argv) + "\n" + done.stdout + done.stderr)
        if done.returncode != 0:
            raise RunnerError(f"{who}: {what} failed (exit {done.returncode}): "
                              f"{(done.stdout + done.stderr).strip()}")
        lines = done.stdout.strip().splitlines()
        for i, line in enumerate(lines):       # the tail, and every warning before it
            if i >= len(lines) - 8 or "warning" in line:
                self.log(f"  {line}")
        return done.stdout

    # --- checks ----------------------------------------------------------------------
    def ping(self, src: str, dst: str, count: int = 3, interval: float = 0.2,
             timeout: float = 2.0) -> PingResult:
        assert self.net is not None
        ip = str(self.topo.host(dst).ip.ip)
        _, out = self.net.host_run(src, ["ping", "-n", "-q", "-c", str(count), "-i",
                                         str(interval), "-W", str(timeout), ip],
                                   timeout=count * (interval + timeout) + 10, check=False)
        return parse_ping(src, dst, ip, out)

    def pingall(self, count: int = 3) -> list[PingResult]:
        """Every ordered host pair: like Mininet's ``pingall``, with RTTs."""
        return [self.ping(a.name, b.name, count)
                for a, b in itertools.permutations(self.topo.hosts, 2)]

    def tcp_throughput(self, src: str, dst: str, seconds: float = 3.0,
                       port: int = 5001) -> TcpResult:
        """Bulk TCP from ``src`` to ``dst`` for ``seconds`` (iperf is not on Debian by
        default; Python is): what the receiver counted, so lost data cannot pass."""
        assert self.net is not None
        ip = str(self.topo.host(dst).ip.ip)
        server = self.net.host_popen(dst, [sys.executable, "-c", _TCP_SERVER, ip, str(port)])
        try:
            assert server.stdout is not None
            if server.stdout.readline().strip() != "listening":
                raise RunnerError(f"{dst}: TCP receiver did not start")
            code, out = self.net.host_run(src, [sys.executable, "-c", _TCP_CLIENT, ip,
                                                str(port), str(seconds)],
                                          timeout=seconds + 60, check=False)
            if code != 0:
                raise RunnerError(f"{src} -> {dst}: TCP sender failed: {out.strip()}")
            received_text, _ = server.communicate(timeout=seconds + 30)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait(10)
        sent, elapsed = out.split()[:2]
        received = int(received_text.split()[0]) if received_text.split() else 0
        return TcpResult(src, dst, int(sent), received, float(elapsed))

    def host_run(self, host: str, argv: list[str], timeout: float = 30) -> tuple[int, str]:
        assert self.net is not None
        return self.net.host_run(host, argv, timeout=timeout, check=False)

    def interactive(self) -> None:
        assert self.net is not None
        self.net.interactive()


def _wait_port(port: int, seconds: float) -> bool:
    return local_port.await_listening(port, seconds, interval=0.2) is None


def derive_intent(topo: Topology, kind: str = "softswitch") -> str:
    """The topology's intent with each switch's address/device id from the topology.

    The topology is the one place ports are chosen (a test may move them); the
    intent's ``base`` is made absolute because the derived copy lives elsewhere. Each
    switch's ``runtime_address`` is its process's ``--thrift-port`` (softswitch's runtime
    channel, BMv2's Thrift server), so the intent's schedulers are applied. On BMv2
    (``kind``) the switches are ``target: bmv2``, so that address is spoken to with
    BMv2's Thrift API.
    """
    assert topo.intent is not None
    try:
        data = yaml.safe_load(topo.intent.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise RunnerError(f"{topo.intent}: cannot read the intent: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("switches") or [], list):
        raise RunnerError(f"{topo.intent}: not a mapping (run tailcc validate on it)")
    base = data.get("base")
    if isinstance(base, str) and (topo.intent.parent / base).is_file():
        data["base"] = str((topo.intent.parent / base).resolve())
    names = {sw.name for sw in topo.switches}
    devices = [(f"switches[{i}]", e) for i, e in enumerate(data.get("switches") or [])]
    devices += [(f"nics[{i}]", e) for i, e in enumerate(data.get("nics") or [])]
    for where, entry in devices:
        name = entry.get("name") if isinstance(entry, dict) else None
        if name not in names:
            raise RunnerError(f"{topo.intent}: {where}: {name!r} is not a switch of "
                              f"topology {topo.name} (switches: {', '.join(sorted(names))})")
        sw = topo.switch(name)
        entry["address"] = f"127.0.0.1:{sw.grpc_port}"
        entry["device_id"] = sw.device_id
        entry["cpu_port"] = sw.cpu_port
        # always: the runner started the process with this --thrift-port, and without
        # it `tailcc apply` would skip the schedulers (DWRR, rates, link rates, PFC)
        entry["runtime_address"] = f"127.0.0.1:{sw.thrift_port}"
        if kind == "bmv2":
            entry["target"] = "bmv2"
    return yaml.safe_dump(data, sort_keys=False)


# ------------------------------------------------------------------------- cleanup
def _mininet_host_pids(topo: Topology) -> list[int]:
    """Shells Mininet left for this topology's hosts (``bash … mininet:h1``)."""
    wanted = {f"mininet:{h.name}" for h in topo.hosts} | \
             {f"mininet:{s.name}" for s in topo.switches}
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if args and args[0].endswith(b"bash") and any(
                a.decode(errors="replace") in wanted for a in args):
            pids.append(int(proc.name))
    return pids


def _switch_pids(run_dir: Path, topo: Topology) -> list[int]:
    """Switch processes recorded in the run directory that are still this switch."""
    pids = []
    for sw in topo.switches:
        pidfile = run_dir / f"{sw.name}.pid"
        try:
            pid = int(pidfile.read_text().strip())
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (OSError, ValueError):
            pidfile.unlink(missing_ok=True)
            continue
        if f"127.0.0.1:{sw.grpc_port}".encode() in cmd:
            pids.append(pid)
        else:
            pidfile.unlink(missing_ok=True)
    return pids


def leftovers_of(topo: Topology, run_dir: Path | None = None) -> list[str]:
    """What of this topology exists now: interfaces, namespaces, processes."""
    run_dir = run_dir or PROJECT_ROOT / "out" / "topologies" / topo.name
    out = [i for i in topo.root_interfaces() if link_exists(i)]
    out += [f"{h.name}-eth0" for h in topo.hosts if link_exists(f"{h.name}-eth0")]
    out += [f"netns {NETNS_PREFIX}{h.name}" for h in topo.hosts
            if netns_exists(f"{NETNS_PREFIX}{h.name}")]
    out += [f"pid {p}" for p in _switch_pids(run_dir, topo) + _mininet_host_pids(topo)]
    return out


def cleanup(topo: Topology, run_dir: Path | None = None, quiet: bool = False,
            mininet_shells: bool = True) -> list[str]:
    """``mn -c`` for one topology: only its own interfaces, namespaces and processes.

    Switch processes are found by the pid files of the run directory (and checked to
    still be that switch); ``mininet_shells`` also ends Mininet host shells named after
    this topology's nodes, which only a run killed before Mininet's own stop leaves.
    """
    run_dir = run_dir or PROJECT_ROOT / "out" / "topologies" / topo.name
    removed = []
    shells = _mininet_host_pids(topo) if mininet_shells else []
    for pid in _switch_pids(run_dir, topo) + shells:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            removed.append(f"pid {pid}")
    for sw in topo.switches:
        (run_dir / f"{sw.name}.pid").unlink(missing_ok=True)
    for host in topo.hosts:
        ns = f"{NETNS_PREFIX}{host.name}"
        if netns_exists(ns):
            _ip("netns", "del", ns, check=False)
            removed.append(f"netns {ns}")
    for name in topo.root_interfaces() + [f"{h.name}-eth0" for h in topo.hosts]:
        if link_exists(name):
            _ip("link", "del", name, check=False)
            removed.append(name)
    if removed and not quiet:
        print(f"{topo.name}: removed {', '.join(removed)}", file=sys.stderr)
    return removed


@contextlib.contextmanager
def terminate_on_sigterm() -> Iterator[None]:
    """SIGTERM/SIGHUP end the run through ``finally`` (teardown), like Ctrl-C does."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
