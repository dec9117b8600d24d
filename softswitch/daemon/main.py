"""``softswitch run``: the switch on real interfaces, ``simple_switch_grpc``-style.

The command line is ``simple_switch_grpc``'s, so Mininet wrappers and scripts that
start BMv2 start softswitch unchanged::

    softswitch run [PROG.p4 | ARTIFACT.json | --no-p4] -i PORT@IFACE ... [--pcap [DIR]]
        [--log-console] [--device-id N] [--thrift-port P] [--role-config FILE]
        -- --grpc-server-addr ADDR --cpu-port N [--priority-queues N] [--drop-port N]

It serves P4Runtime (default 127.0.0.1:9559), moves frames between the interfaces and
the pipeline, and runs until SIGINT/SIGTERM, then closes its sockets and exits 0.
Packets wait between ingress and egress in the traffic manager's ``--priority-queues N``
strict-priority queues (BMv2 semantics). ``--thrift-port P`` serves BMv2's Thrift API
(``daemon/thrift/``) and ``softswitch cli``'s runtime channel on one port. BMv2 options
softswitch does not need (``--nanolog`` …) are accepted and ignored.
Softswitch extensions: ``--ingress-priority-dscp``/``--ingress-priority-max-bytes``
(those frames read first, so a backlog of bulk frames does not delay them:
``ports/ingress_priority.py``), ``--dataplane-cpu N`` (the port loop's own CPU,
``ports/dataplane_cpu.py``), ``--p4runtime-process`` (P4Runtime served from a front end
process, so grpcio's threads never share the switch's GIL: ``p4runtime/frontend.py``).

A PNA program (``main`` a ``PNA_NIC``) runs as a NIC: every ``-i`` port is a
``--host-port N`` or a ``--net-port N`` (the CPU port counts as a host port), and what
the NIC sends waits in per-class transmit queues (``softswitch/pna/tm.py``). The packet
path is compiled C or Python by ``SOFTSWITCH_FASTPATH`` (``softswitch.fastpath``).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from dataclasses import dataclass, field
from types import FrameType
from typing import NoReturn

from p4.v1 import p4runtime_pb2

from softswitch import fastpath
from softswitch.daemon.cli_channel.commands import RuntimeChannel, RuntimeChannelServer, read_token
from softswitch.daemon.cli_channel.control import ManagedControl
from softswitch.daemon.device import Device
from softswitch.daemon.forwarding import Forwarder
from softswitch.daemon.idle_timeouts import Sweeper
from softswitch.daemon.ports import batchio, ingress_priority, realtime
from softswitch.daemon.ports.dataplane import DataPlane
from softswitch.daemon.ports.dataplane_cpu import DataplaneCpu
from softswitch.daemon.ports.ingress_priority import IngressPriority
from softswitch.daemon.process.host import FrontendProcess
from softswitch.daemon.rpc.server import MAX_MESSAGE_BYTES, ServerError, TlsConfig, serve
from softswitch.daemon.thrift import runtime_api
from softswitch.diagnostics import P4Error
from softswitch.frontend import limits as limits_mod
from softswitch.frontend.limits import DEFAULT as DEFAULT_LIMITS
from softswitch.frontend.limits import UNLIMITED, Limits
from softswitch.memory import allocator
from softswitch.p4runtime import entrywire, errors, isolate, pipeline
from softswitch.p4runtime.p4index import P4InfoIndex
from softswitch.p4runtime.roles import RoleTable
from softswitch.tm import TrafficManager

DEFAULT_GRPC_ADDR = "127.0.0.1:9559"
DEFAULT_DROP_PORT = 511
MAX_PORT = 511
# A link rate's frames go on back to back after a wake-up this late (µs): on a busy host
# the port loop wakes late, and a 10 Mb/s link must stay 10 Mb/s (tm.scheduler).
LINK_CATCH_UP_US = 2000.0
# With a CPU of its own (--dataplane-cpu) the port loop polls its ports this long (µs)
# after its last frame before it sleeps: a frame that wakes a sleeping CPU waits for it
# to wake, and polling costs nothing on a CPU no one else may use. A longer gap between
# frames sleeps.
DATAPLANE_BUSY_POLL_US = 1000
MAX_BUSY_POLL_US = 1_000_000
log = logging.getLogger("softswitch.daemon.main")


@dataclass
class RunOptions:
    program: str | None = None
    no_p4: bool = False
    interfaces: dict[int, str] = field(default_factory=dict)
    pcap_dir: str | None = None
    log_console: bool = False
    log_level: str = "info"
    log_file: str | None = None
    device_id: int = 0
    thrift_port: int | None = None
    include_dirs: list[str] = field(default_factory=list)
    defines: dict[str, str] = field(default_factory=dict)
    grpc_addr: str = DEFAULT_GRPC_ADDR
    cpu_port: int | None = None
    drop_port: int = DEFAULT_DROP_PORT
    priority_queues: int = 1
    role_config: str | None = None
    runtime_bind: str = "127.0.0.1"
    runtime_socket: str | None = None
    runtime_token_file: str | None = None
    runtime_writes: bool = False
    grpc_ssl: bool = False
    grpc_cacert: str | None = None
    grpc_cert: str | None = None
    grpc_key: str | None = None
    grpc_client_auth: bool = False
    max_request_bytes: int = MAX_MESSAGE_BYTES
    limits: Limits = DEFAULT_LIMITS
    host_ports: set[int] = field(default_factory=set)   # PNA: ports facing the host
    net_ports: set[int] = field(default_factory=set)    # PNA: ports facing the network
    loopback_port: int | None = None                     # PNA: turns packets around
    ingress_priority: IngressPriority | None = None      # frames each port reads first
    dataplane_cpu: DataplaneCpu | None = None            # the port loop's own CPU
    p4runtime_process: bool = False                      # P4Runtime from a front end
    busy_poll_us: int = 0                                # the port loop polls, then sleeps


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors like the rest of softswitch (exit 1)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(1)


def _switch_parser() -> _Parser:
    p = _Parser(prog="softswitch run", description="Run a P4 program on network interfaces "
                "with a P4Runtime server (simple_switch_grpc command line).")
    p.add_argument("program", nargs="?", help="P4_16 source (.p4), p4c's BMv2 JSON (as "
                   "simple_switch PROG.json) or a softswitch artifact")
    p.add_argument("--no-p4", action="store_true",
                   help="start without a program; a controller sets it over P4Runtime")
    p.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE",
                   help="attach interface IFACE as port PORT (repeatable)")
    p.add_argument("--pcap", nargs="?", const=".", metavar="DIR",
                   help="write <iface>_in.pcap/<iface>_out.pcap traces to DIR (default .)")
    p.add_argument("--log-console", action="store_true", help="log to the console")
    p.add_argument("-L", "--log-level", default="info",
                   choices=["trace", "debug", "info", "warn", "error", "off"])
    p.add_argument("--log-file", metavar="PATH", help="log to PATH")
    p.add_argument("--device-id", type=int, default=0, metavar="N")
    p.add_argument("--thrift-port", type=int, metavar="P",
                   help="serve BMv2's Thrift runtime API (simple_switch_CLI) and the "
                        "runtime channel ('softswitch cli --port P') on TCP port P (of "
                        "--runtime-bind)")
    p.add_argument("--runtime-bind", default="127.0.0.1", metavar="HOST",
                   help="address the --thrift-port channel listens on (127.0.0.1)")
    p.add_argument("--runtime-socket", metavar="PATH",
                   help="(also) serve the runtime channel on this Unix socket, mode 0600, "
                        "for 'softswitch cli --socket PATH'")
    p.add_argument("--runtime-token-file", metavar="FILE",
                   help="require the token in FILE from every runtime-channel client "
                        "('softswitch cli --token-file FILE')")
    p.add_argument("--runtime-writes", action="store_true",
                   help="let the runtime channel change multicast groups, mirroring "
                        "sessions and meters directly (P4Runtime does not see those "
                        "changes); table commands always go through P4Runtime's state")
    p.add_argument("--nanolog", metavar="ADDR", help="accepted for compatibility (ignored)")
    p.add_argument("--notifications-addr", metavar="ADDR",
                   help="accepted for compatibility (ignored)")
    p.add_argument("--debugger", action="store_true", help="accepted for compatibility")
    p.add_argument("--log-flush", action="store_true", help="accepted (logs are unbuffered)")
    p.add_argument("--max-port-count", type=int, default=MAX_PORT + 1, metavar="N",
                   help="accepted for compatibility (ports are 0..511)")
    p.add_argument("--dump-packet-data", type=int, metavar="N",
                   help="accepted for compatibility (ignored)")
    p.add_argument("--role-config", metavar="FILE",
                   help="controller roles and what each may write (YAML/JSON; see "
                        "docs/softswitch.md, Controller roles); the default role always "
                        "has full access")
    p.add_argument("--host-port", action="append", type=int, default=[], metavar="N",
                   help="PNA programs: port N faces the host (repeatable)")
    p.add_argument("--net-port", action="append", type=int, default=[], metavar="N",
                   help="PNA programs: port N faces the network (repeatable)")
    p.add_argument("--loopback-port", type=int, metavar="N",
                   help="PNA programs: packets sent or mirrored to port N (no interface) "
                        "re-enter in the other direction with loopedback set")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="include directory for compiling PROG.p4")
    limits_mod.add_arguments(p, no_limits=False)     # for configs sent by controllers
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VAL]",
                   help="preprocessor define for compiling PROG.p4")
    return p


def _target_parser() -> _Parser:
    p = _Parser(prog="softswitch run ... --", description="target options")
    p.add_argument("--grpc-server-addr", default=DEFAULT_GRPC_ADDR, metavar="ADDR")
    p.add_argument("--grpc-server-ssl", action="store_true",
                   help="serve P4Runtime over TLS (needs --grpc-server-cert/-key)")
    p.add_argument("--grpc-server-cacert", metavar="PEM",
                   help="CA certificate that client certificates must chain to")
    p.add_argument("--grpc-server-cert", metavar="PEM", help="server certificate (chain)")
    p.add_argument("--grpc-server-key", metavar="PEM", help="server private key")
    p.add_argument("--grpc-server-with-client-auth", action="store_true",
                   help="require a client certificate signed by --grpc-server-cacert")
    p.add_argument("--max-request-bytes", type=int, default=MAX_MESSAGE_BYTES, metavar="N",
                   help="largest P4Runtime request accepted; larger ones get "
                        f"RESOURCE_EXHAUSTED (default {MAX_MESSAGE_BYTES})")
    p.add_argument("--cpu-port", type=int, metavar="N")
    p.add_argument("--drop-port", type=int, default=DEFAULT_DROP_PORT, metavar="N")
    p.add_argument("--priority-queues", type=int, default=1, metavar="N")
    p.add_argument("--ingress-priority-dscp", metavar="LIST",
                   help="softswitch extension: each port reads frames of these DSCPs "
                        "(e.g. 46,48,56) first, ahead of a backlog of other frames "
                        "(two sockets per port with kernel packet filters)")
    p.add_argument("--ingress-priority-max-bytes", type=int, metavar="N",
                   help="softswitch extension: frames of at most N bytes are read first too")
    p.add_argument("--dataplane-cpu", type=int, metavar="N",
                   help="softswitch extension: run the port loop on CPU N alone, and the "
                        "other threads (P4Runtime, runtime channel) on the other CPUs")
    p.add_argument("--busy-poll-us", type=int, metavar="N",
                   help="softswitch extension: the port loop polls its ports for up to N "
                        "µs before it sleeps (a sleeping CPU takes tens of µs to wake); "
                        f"default {DATAPLANE_BUSY_POLL_US} with --dataplane-cpu, else 0")
    p.add_argument("--p4runtime-process", action="store_true",
                   help="softswitch extension: serve P4Runtime from a front end process "
                        "of its own, each Write answered on the port loop (no gRPC "
                        "thread shares the switch's GIL with the port loop)")
    p.add_argument("--enable-swap", action="store_true", help="accepted for compatibility")
    p.add_argument("--dp-grpc-server-addr", metavar="ADDR",
                   help="accepted for compatibility (ignored)")
    p.add_argument("--load-modules", metavar="LIST", help="accepted for compatibility")
    return p


def parse_args(argv: list[str]) -> RunOptions:
    """The options of a ``simple_switch_grpc`` command line; usage errors exit 1."""
    split = argv.index("--") if "--" in argv else len(argv)
    main_parser = _switch_parser()
    ns = main_parser.parse_args(argv[:split])
    target = _target_parser().parse_args(argv[split + 1:])
    opts = RunOptions(program=ns.program, no_p4=ns.no_p4, pcap_dir=ns.pcap,
                      log_console=ns.log_console, log_level=ns.log_level,
                      log_file=ns.log_file, device_id=ns.device_id,
                      thrift_port=ns.thrift_port, include_dirs=ns.include_dirs,
                      grpc_addr=target.grpc_server_addr, cpu_port=target.cpu_port,
                      drop_port=target.drop_port, priority_queues=target.priority_queues,
                      role_config=ns.role_config, limits=limits_mod.from_arguments(ns),
                      runtime_bind=ns.runtime_bind, runtime_socket=ns.runtime_socket,
                      runtime_token_file=ns.runtime_token_file,
                      runtime_writes=ns.runtime_writes, grpc_ssl=target.grpc_server_ssl,
                      grpc_cacert=target.grpc_server_cacert,
                      grpc_cert=target.grpc_server_cert, grpc_key=target.grpc_server_key,
                      grpc_client_auth=target.grpc_server_with_client_auth,
                      max_request_bytes=target.max_request_bytes,
                      p4runtime_process=target.p4runtime_process)
    if ns.program is None and ns.pcap and ns.pcap.endswith((".p4", ".json")):
        opts.program, opts.pcap_dir = ns.pcap, "."    # "--pcap PROG.p4": pcap takes no DIR
    if opts.program and ns.no_p4:
        main_parser.error("give either a program or --no-p4, not both")
    if not opts.program and not ns.no_p4:
        main_parser.error("no program: give PROG.p4, a softswitch artifact, or --no-p4")
    for item in ns.interface:
        port, iface = _interface(main_parser, item)
        if port in opts.interfaces:
            main_parser.error(f"port {port} is given twice")
        if iface in opts.interfaces.values():
            main_parser.error(f"interface '{iface}' is given twice")
        opts.interfaces[port] = iface
    _port_roles(main_parser, opts, ns.host_port, ns.net_port)
    if ns.loopback_port is not None:
        if not 0 <= ns.loopback_port <= MAX_PORT or ns.loopback_port in opts.interfaces:
            main_parser.error(f"--loopback-port {ns.loopback_port}: must be a port 0..{MAX_PORT} "
                              "with no interface")
        opts.loopback_port = ns.loopback_port
    for item in ns.defines:
        name, eq, value = item.partition("=")
        if not name:
            main_parser.error(f"-D {item!r}: expected NAME or NAME=VAL")
        opts.defines[name] = value if eq else "1"
    for what, value in (("--cpu-port", opts.cpu_port), ("--drop-port", opts.drop_port)):
        if value is not None and not 0 <= value <= MAX_PORT:
            main_parser.error(f"{what} {value}: ports are 0..{MAX_PORT}")
    if opts.cpu_port is not None and opts.cpu_port in opts.interfaces:
        main_parser.error(f"--cpu-port {opts.cpu_port} is also an interface port")
    if opts.device_id < 0:
        main_parser.error("--device-id must not be negative")
    if not 1 <= opts.priority_queues <= 8:
        main_parser.error("--priority-queues must be 1..8")
    if not 1024 <= opts.max_request_bytes <= 1 << 30:
        main_parser.error("--max-request-bytes must be 1024..2^30")
    try:
        opts.ingress_priority = ingress_priority.parse(target.ingress_priority_dscp,
                                                       target.ingress_priority_max_bytes)
    except P4Error as exc:
        main_parser.error(exc.message)
    if target.dataplane_cpu is not None:
        try:
            opts.dataplane_cpu = DataplaneCpu.plan(target.dataplane_cpu)
        except P4Error as exc:
            main_parser.error(exc.message)
    if target.busy_poll_us is None:
        opts.busy_poll_us = 0 if opts.dataplane_cpu is None else DATAPLANE_BUSY_POLL_US
    elif 0 <= target.busy_poll_us <= MAX_BUSY_POLL_US:
        opts.busy_poll_us = target.busy_poll_us
    else:
        main_parser.error(f"--busy-poll-us {target.busy_poll_us}: expected 0..{MAX_BUSY_POLL_US}")
    tls_files = (opts.grpc_cacert, opts.grpc_cert, opts.grpc_key)
    if not opts.grpc_ssl and (any(tls_files) or opts.grpc_client_auth):
        main_parser.error("--grpc-server-cacert/-cert/-key/-with-client-auth need "
                          "--grpc-server-ssl")
    if opts.grpc_ssl and not (opts.grpc_cert and opts.grpc_key):
        main_parser.error("--grpc-server-ssl needs --grpc-server-cert and --grpc-server-key")
    if opts.grpc_client_auth and not opts.grpc_cacert:
        main_parser.error("--grpc-server-with-client-auth needs --grpc-server-cacert (the CA "
                          "client certificates are checked against)")
    return opts


def _port_roles(parser: _Parser, opts: RunOptions, host: list[int], net: list[int]) -> None:
    """--host-port/--net-port: each port once, on one side, and an attached one."""
    for flag, ports in (("--host-port", host), ("--net-port", net)):
        for port in ports:
            if not 0 <= port <= MAX_PORT:
                parser.error(f"{flag} {port}: ports are 0..{MAX_PORT}")
            if port not in opts.interfaces:
                parser.error(f"{flag} {port}: no -i {port}@IFACE attaches that port")
    both = set(host) & set(net)
    if both:
        parser.error(f"port {min(both)} is given as both --host-port and --net-port")
    opts.host_ports, opts.net_ports = set(host), set(net)


def apply_port_roles(opts: RunOptions, switch: object) -> None:
    """Give a PNA NIC its host and network ports (P4Error when the flags do not cover
    every attached port); a v1model switch must not be given any."""
    set_ports = getattr(switch, "set_ports", None)
    if set_ports is None:
        if opts.host_ports or opts.net_ports or opts.loopback_port is not None:
            raise P4Error("--host-port/--net-port/--loopback-port are for PNA programs "
                          "(main a PNA_NIC); "
                          "this program is a v1model switch")
        return
    missing = sorted(set(opts.interfaces) - opts.host_ports - opts.net_ports)
    if missing:
        raise P4Error(f"PNA program: port {missing[0]} faces neither side; give "
                      f"--host-port {missing[0]} or --net-port {missing[0]} for every -i port")
    host = set(opts.host_ports)
    if opts.cpu_port is not None:
        host.add(opts.cpu_port)       # PacketOut enters as HOST_TO_NET
    set_ports(host=host, net=opts.net_ports, loopback=opts.loopback_port)


def tls_config(opts: RunOptions) -> TlsConfig | None:
    """The TLS settings of the command line, files read (P4Error naming a bad one)."""
    if not opts.grpc_ssl:
        return None
    pems: dict[str, bytes | None] = {}
    for flag, path in (("--grpc-server-cert", opts.grpc_cert),
                       ("--grpc-server-key", opts.grpc_key),
                       ("--grpc-server-cacert", opts.grpc_cacert)):
        if path is None:
            pems[flag] = None
            continue
        try:
            with open(path, "rb") as f:
                data = f.read(1 << 20)
        except OSError as exc:
            raise P4Error(f"{flag} {path}: cannot read: {exc.strerror}") from None
        if b"-----BEGIN " not in data:
            raise P4Error(f"{flag} {path}: not a PEM file")
        pems[flag] = data
    cert, key = pems["--grpc-server-cert"], pems["--grpc-server-key"]
    assert cert is not None and key is not None
    return TlsConfig(cert, key, pems["--grpc-server-cacert"], opts.grpc_client_auth)


def _tls_files(opts: RunOptions) -> tuple[str, str, str | None, bool] | None:
    """The TLS files the front end process reads (checked by tls_config first)."""
    if not opts.grpc_ssl:
        return None
    assert opts.grpc_cert is not None and opts.grpc_key is not None
    return (os.path.abspath(opts.grpc_cert), os.path.abspath(opts.grpc_key),
            os.path.abspath(opts.grpc_cacert) if opts.grpc_cacert else None,
            opts.grpc_client_auth)


def _interface(parser: _Parser, item: str) -> tuple[int, str]:
    port_text, at, iface = item.partition("@")
    if not at or not iface or not port_text.isdigit():
        parser.error(f"-i {item!r}: expected PORT@IFACE, e.g. 1@veth0")
    port = int(port_text)
    if port > MAX_PORT:
        parser.error(f"-i {item!r}: ports are 0..{MAX_PORT}")
    return port, iface


# ---------------------------------------------------------------------- start-up
def load_program(opts: RunOptions) -> tuple[p4runtime_pb2.ForwardingPipelineConfig,
                                             pipeline.Compiled]:
    """Compile the program of the command line (P4Error on any problem with it): P4
    source (``.p4``), or a file that holds what ``p4_device_config`` may (p4c's BMv2
    JSON, as ``simple_switch PROG.json`` takes it, or a softswitch artifact)."""
    assert opts.program is not None
    path = opts.program
    if not os.path.isfile(path):
        raise P4Error(f"{path}: no such file")
    try:
        if path.endswith(".p4") or path.endswith(".p4_16"):
            artifact = pipeline.make_artifact(path, opts.defines)
            compiled = pipeline.compile_file(path, opts.defines, tuple(opts.include_dirs))
            stored = artifact.to_bytes()
        else:
            with open(path, "rb") as f:          # the operator's own file: trusted
                data = f.read()
            artifact = pipeline.parse_device_config(data, UNLIMITED)
            compiled = pipeline.build(artifact, limits=None)
            # p4c's JSON is served back as given, as BMv2 does
            stored = data if artifact.converted_from else artifact.to_bytes()
        apply_port_roles(opts, compiled.switch)
    except errors.P4RuntimeError as exc:
        message = exc.message
        if message.startswith("p4_device_config"):
            raise P4Error(path + message.removeprefix("p4_device_config")) from None
        raise P4Error(f"{path}: {message}") from None
    config = p4runtime_pb2.ForwardingPipelineConfig(p4_device_config=stored)
    return config, compiled


def _compiler(opts: RunOptions) -> pipeline.Compiler:
    """How configs from controllers compile: as always, then a NIC gets its ports."""
    def compile_config(path: str, defines: dict[str, str]) -> pipeline.Compiled:
        compiled = pipeline.compile_file(path, defines)
        try:
            apply_port_roles(opts, compiled.switch)
        except P4Error as exc:
            raise errors.invalid(exc.message) from None
        return compiled
    return compile_config


def _setup_logging(opts: RunOptions) -> None:
    levels = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO,
              "warn": logging.WARNING, "error": logging.ERROR, "off": logging.CRITICAL + 1}
    handlers: list[logging.Handler] = []
    if opts.log_console:
        handlers.append(logging.StreamHandler(sys.stderr))
    if opts.log_file:
        handlers.append(logging.FileHandler(opts.log_file))
    root = logging.getLogger("softswitch")
    root.setLevel(levels[opts.log_level])
    for handler in handlers:
        handler.setFormatter(logging.Formatter("[%(asctime)s] [%(name)s] %(message)s"))
        root.addHandler(handler)


def main(argv: list[str]) -> int:
    """Run the switch until SIGINT/SIGTERM; 0 on a clean stop, 1 on a user error."""
    opts = parse_args(argv)
    if opts.dataplane_cpu is not None:     # before any thread starts: they inherit it
        opts.dataplane_cpu.confine_control()
    _check_fastpath()
    _setup_logging(opts)
    roles = RoleTable.load(opts.role_config) if opts.role_config else None
    loaded = None
    if opts.program is not None:
        loaded = load_program(opts)
        if roles is not None:
            problems = roles.check_names(P4InfoIndex(loaded[1].p4info))
            if problems:
                raise P4Error(f"--role-config {opts.role_config}: {problems[0]}")
    if opts.pcap_dir is not None:
        os.makedirs(opts.pcap_dir, exist_ok=True)
    plane = DataPlane(opts.interfaces, opts.pcap_dir, opts.ingress_priority,
                      opts.busy_poll_us / 1e6)
    try:
        device = Device(opts.device_id, opts.cpu_port, opts.drop_port, roles=roles,
                        limits=opts.limits, compiler=_compiler(opts),
                        transmit=plane.transmit, checkpoints=plane.calls)
        if loaded is not None:
            device.start_with(*loaded)
            log.info("loaded %s", opts.program)
        if opts.ingress_priority:
            log.info("ingress priority: %s read first on every port",
                     opts.ingress_priority.describe())
        if opts.dataplane_cpu is not None:
            log.info("dataplane CPU: %s; it polls its ports for %d µs before it sleeps",
                     opts.dataplane_cpu.describe(), opts.busy_poll_us)
        return _serve(opts, device, plane)
    finally:
        plane.close()


def _serve(opts: RunOptions, device: Device, plane: DataPlane) -> int:
    log.info("memory allocator: %s", allocator.describe())
    for port, iface in sorted(opts.interfaces.items()):
        log.info("Adding interface %s as port %d", iface, port)
    tm = TrafficManager(num_queues=opts.priority_queues, catch_up_us=LINK_CATCH_UP_US)
    scheduler = Forwarder(device, tm, lambda port: _interface_mac(opts.interfaces, port),
                                held_frames=plane.held_frames)
    tls = tls_config(opts)
    channels = _start_runtime_channel(opts, device, tm, plane)
    frontend: FrontendProcess | None = None
    try:
        if opts.p4runtime_process:
            frontend = server = FrontendProcess.start(
                device, opts.grpc_addr, opts.max_request_bytes, _tls_files(opts))
        else:
            server, _ = serve(device, opts.grpc_addr, tls=tls,
                              max_message_bytes=opts.max_request_bytes)
    except ServerError as exc:
        for channel in channels:
            channel.stop()
        raise P4Error(str(exc)) from None
    print(f"softswitch: P4Runtime server listening on {opts.grpc_addr} "
          f"(device id {opts.device_id}{', TLS' if tls else ''}"
          f"{' with client certificates' if tls and tls.client_auth else ''})",
          file=sys.stderr, flush=True)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        plane.stop()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    if frontend is not None:
        frontend.attach(plane, plane.calls.post)
        frontend.watch(lambda: on_signal(signal.SIGTERM, None))
    sweeper = Sweeper(device)
    sweeper.start()
    scheduler.drive(plane.wake)         # departures on the port loop's thread
    realtime.settle()
    if opts.dataplane_cpu is not None:
        opts.dataplane_cpu.enter_loop()
    try:
        if not stop.is_set():
            plane.run_batches(scheduler.deliver_batch, ticker=scheduler)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        # First of all: a long Write batch ends after its current update and frees the
        # device lock that the threads stopped below need; a compile is killed.
        device.stop()
        isolate.cancel_all()
        sweeper.stop()
        scheduler.stop()
        for channel in channels:
            channel.stop()
        server.stop(grace=0.2).wait()
    log.info("stopped: %d frames in (%d bursts, %d through the native loop), %d frames out",
             plane.received, plane.bursts, scheduler.native_frames, plane.sent)
    if truncated := plane.truncated():
        log.warning("%d frames bigger than a receive ring's slot were dropped: their "
                    "full copy did not fit the socket's buffer", truncated)
    for port in plane.port_status():
        if dropped := port.kernel_drops + (port.urgent_kernel_drops or 0):
            log.warning("port %d (%s): the kernel dropped %d frames in: the port loop "
                        "fell behind and the receive ring filled", port.number, port.iface,
                        dropped)
    return 0


def _check_fastpath() -> None:
    """Stop the start on a bad ``SOFTSWITCH_FASTPATH``, and with ``require`` on a C
    helper that cannot be built here (else they are built at first use, and the
    P4Runtime entry decoder's first use is a controller's Write)."""
    if fastpath.mode() == "require":
        batchio.native()
        entrywire.native()


def _start_runtime_channel(opts: RunOptions, device: Device, tm: TrafficManager,
                           plane: DataPlane) -> list[RuntimeChannelServer]:
    """The simple_switch_CLI-style channel on --thrift-port / --runtime-socket, and
    BMv2's Thrift services on --thrift-port too; its commands and calls run on the port
    loop, between bursts (``plane.calls``)."""
    if opts.thrift_port is None and opts.runtime_socket is None:
        return []
    token = None
    if opts.runtime_token_file is not None:
        try:
            token = read_token(opts.runtime_token_file)
        except OSError as exc:
            raise P4Error(f"--runtime-token-file {opts.runtime_token_file}: cannot read: "
                          f"{exc.strerror}") from None
        except ValueError as exc:
            raise P4Error(f"--runtime-token-file: {exc}") from None
    managed: list[object] = [None, None]        # (loaded pipeline, its control)

    def current_control() -> object | None:
        loaded = device.current
        if loaded is None:
            return None
        if managed[0] is not loaded:
            managed[:] = [loaded, ManagedControl(
                loaded.switch, loaded.runtime, opts.runtime_writes,
                device.note_request if device.reclaimer is not None else None,
                plane.calls.checkpoint)]
        return managed[1]

    channel = RuntimeChannel(current_control, tm, lock=device.lock,  # type: ignore[arg-type]
                             run_each=plane.calls.call_each,
                             checkpoint=plane.calls.checkpoint, ports=plane.port_status)
    servers: list[RuntimeChannelServer] = []
    thrift = runtime_api(channel, tm, lambda: (
        device.current.config if device.current is not None else None),
        opts.device_id, opts.thrift_port or 0)
    try:
        if opts.thrift_port is not None:
            servers.append(RuntimeChannelServer(channel, opts.runtime_bind, opts.thrift_port,
                                                token=token, loop=plane,
                                                other=thrift).start())
            print(f"softswitch: runtime channel listening on {opts.runtime_bind}:"
                  f"{opts.thrift_port}{' (token required)' if token else ''}",
                  file=sys.stderr, flush=True)
        if opts.runtime_socket is not None:
            servers.append(RuntimeChannelServer(channel, token=token,
                                                unix_path=opts.runtime_socket,
                                                loop=plane).start())
            print(f"softswitch: runtime channel listening on {opts.runtime_socket}",
                  file=sys.stderr, flush=True)
    except OSError as exc:
        for server in servers:
            server.stop()
        where = (f"--thrift-port {opts.thrift_port}" if not servers and opts.thrift_port
                 is not None else f"--runtime-socket {opts.runtime_socket}")
        raise P4Error(f"{where}: cannot listen: {exc.strerror}") from None
    return servers


def _interface_mac(interfaces: dict[int, str], port: int) -> bytes:
    """The MAC address of a port's interface: the source of the PFC frames it sends."""
    iface = interfaces.get(port)
    try:
        with open(f"/sys/class/net/{iface}/address", encoding="ascii") as f:
            return bytes.fromhex(f.read().strip().replace(":", ""))
    except (OSError, ValueError, TypeError):
        return bytes(6)
