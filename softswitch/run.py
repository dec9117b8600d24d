"""``softswitch run``: the switch on real interfaces, ``simple_switch_grpc``-style.

The command line is ``simple_switch_grpc``'s, so Mininet wrappers and scripts that
start BMv2 start softswitch unchanged::

    softswitch run [PROG.p4 | ARTIFACT.json | --no-p4] -i PORT@IFACE ... [--pcap [DIR]]
        [--log-console] [--device-id N] [--thrift-port P]
        -- --grpc-server-addr ADDR --cpu-port N [--priority-queues N] [--drop-port N]

It serves P4Runtime (default 127.0.0.1:9559), moves frames between the interfaces
and the pipeline, and runs until SIGINT/SIGTERM, then closes its sockets and exits 0.
Packets from the ports wait between ingress and egress in the traffic manager's
``--priority-queues N`` strict-priority queues (BMv2 semantics; rates, depths and
softswitch's DWRR/PFC extensions set over the runtime channel). ``--thrift-port P``
serves that runtime channel — the ``simple_switch_CLI`` command language, spoken by
``softswitch cli --port P`` — where BMv2 serves Thrift. Options BMv2 has but softswitch
does not need (``--nanolog`` …) are accepted so existing command lines keep working.
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

from softswitch.diagnostics import P4Error
from softswitch.p4runtime import errors, pipeline
from softswitch.p4runtime.device import Device
from softswitch.p4runtime.idle import Sweeper
from softswitch.p4runtime.server import ServerError, serve
from softswitch.ports.dataplane import DataPlane
from softswitch.ports.egress_scheduler import EgressScheduler
from softswitch.runtime_channel import RuntimeChannel, RuntimeChannelServer
from softswitch.tm import TrafficManager

DEFAULT_GRPC_ADDR = "127.0.0.1:9559"
DEFAULT_DROP_PORT = 511
MAX_PORT = 511
log = logging.getLogger("softswitch.run")


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


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors like the rest of softswitch (exit 1)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(1)


def _switch_parser() -> _Parser:
    p = _Parser(prog="softswitch run", description="Run a P4 program on network interfaces "
                "with a P4Runtime server (simple_switch_grpc command line).")
    p.add_argument("program", nargs="?", help="P4_16 source (.p4) or softswitch artifact")
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
                   help="serve the runtime channel (simple_switch_CLI commands, queue "
                        "settings) on 127.0.0.1:P for 'softswitch cli --port P'")
    p.add_argument("--nanolog", metavar="ADDR", help="accepted for compatibility (ignored)")
    p.add_argument("--notifications-addr", metavar="ADDR",
                   help="accepted for compatibility (ignored)")
    p.add_argument("--debugger", action="store_true", help="accepted for compatibility")
    p.add_argument("--log-flush", action="store_true", help="accepted (logs are unbuffered)")
    p.add_argument("--max-port-count", type=int, default=MAX_PORT + 1, metavar="N",
                   help="accepted for compatibility (ports are 0..511)")
    p.add_argument("--dump-packet-data", type=int, metavar="N",
                   help="accepted for compatibility (ignored)")
    p.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                   help="include directory for compiling PROG.p4")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VAL]",
                   help="preprocessor define for compiling PROG.p4")
    return p


def _target_parser() -> _Parser:
    p = _Parser(prog="softswitch run ... --", description="target options")
    p.add_argument("--grpc-server-addr", default=DEFAULT_GRPC_ADDR, metavar="ADDR")
    p.add_argument("--cpu-port", type=int, metavar="N")
    p.add_argument("--drop-port", type=int, default=DEFAULT_DROP_PORT, metavar="N")
    p.add_argument("--priority-queues", type=int, default=1, metavar="N")
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
                      drop_port=target.drop_port, priority_queues=target.priority_queues)
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
    return opts


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
    """Compile the program of the command line (P4Error on any problem with it)."""
    assert opts.program is not None
    path = opts.program
    if not os.path.isfile(path):
        raise P4Error(f"{path}: no such file")
    try:
        if path.endswith(".p4") or path.endswith(".p4_16"):
            artifact = pipeline.make_artifact(path, opts.defines)
            compiled = pipeline.compile_file(path, opts.defines, tuple(opts.include_dirs))
        else:
            with open(path, "rb") as f:
                artifact = pipeline.parse_device_config(f.read())
            compiled = pipeline.build(artifact)
    except errors.P4RuntimeError as exc:
        raise P4Error(f"{path}: {exc.message}") from None
    config = p4runtime_pb2.ForwardingPipelineConfig(p4_device_config=artifact.to_bytes())
    return config, compiled


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
    _setup_logging(opts)
    device = Device(opts.device_id, opts.cpu_port, opts.drop_port)
    if opts.program is not None:
        config, compiled = load_program(opts)
        device.start_with(config, compiled)
        log.info("loaded %s", opts.program)
    if opts.pcap_dir is not None:
        os.makedirs(opts.pcap_dir, exist_ok=True)
    plane = DataPlane(opts.interfaces, opts.pcap_dir)
    try:
        return _serve(opts, device, plane)
    finally:
        plane.close()


def _serve(opts: RunOptions, device: Device, plane: DataPlane) -> int:
    for port, iface in sorted(opts.interfaces.items()):
        log.info("Adding interface %s as port %d", iface, port)
    device.transmit = plane.transmit
    tm = TrafficManager(num_queues=opts.priority_queues)
    scheduler = EgressScheduler(device, tm, lambda port: _interface_mac(opts.interfaces, port))
    channel = _start_runtime_channel(opts, device, tm)
    try:
        server, _ = serve(device, opts.grpc_addr)
    except ServerError as exc:
        if channel is not None:
            channel.stop()
        raise P4Error(str(exc)) from None
    print(f"softswitch: P4Runtime server listening on {opts.grpc_addr} "
          f"(device id {opts.device_id})", file=sys.stderr, flush=True)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()
        plane.stop()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    sweeper = Sweeper(device)
    sweeper.start()
    scheduler.start()
    try:
        if not stop.is_set():
            plane.run(scheduler.deliver)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        sweeper.stop()
        scheduler.stop()
        if channel is not None:
            channel.stop()
        server.stop(grace=0.5).wait()
    log.info("stopped: %d frames in, %d frames out", plane.received, plane.sent)
    return 0


def _start_runtime_channel(opts: RunOptions, device: Device,
                           tm: TrafficManager) -> RuntimeChannelServer | None:
    """The simple_switch_CLI-style channel on --thrift-port, if asked for."""
    if opts.thrift_port is None:
        return None

    def current_switch() -> object | None:
        return device.current.switch if device.current is not None else None

    channel = RuntimeChannel(current_switch, tm, lock=device.lock)  # type: ignore[arg-type]
    try:
        server = RuntimeChannelServer(channel, "127.0.0.1", opts.thrift_port).start()
    except OSError as exc:
        raise P4Error(f"--thrift-port {opts.thrift_port}: cannot listen: {exc.strerror}") from None
    print(f"softswitch: runtime channel listening on 127.0.0.1:{opts.thrift_port}",
          file=sys.stderr, flush=True)
    return server


def _interface_mac(interfaces: dict[int, str], port: int) -> bytes:
    """The MAC address of a port's interface: the source of the PFC frames it sends."""
    iface = interfaces.get(port)
    try:
        with open(f"/sys/class/net/{iface}/address", encoding="ascii") as f:
            return bytes.fromhex(f.read().strip().replace(":", ""))
    except (OSError, ValueError, TypeError):
        return bytes(6)
