"""Topology YAML: hosts, P4 switches, links and how to program them, validated.

A topology file is what a p4lang/tutorials ``topology.json`` is, in YAML and checked
up front: a mistake (a port used twice, a host without a link, an interface name that
Linux would truncate) is reported with its file line and path before anything is
created, because a half-built network is what a user least wants to debug.

Relative file paths (``program``, ``intent``, ``runtime_json``, ``cli_commands``) are
taken relative to the topology file, then relative to the project root, so both
``../p4src/tailcc.p4`` and ``p4src/tailcc.p4`` work from ``topologies/``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from controlplane.intent.problems import IntentError, Problem, Problems
from controlplane.intent.reader import Node
from controlplane.intent.yamlsrc import load_yaml

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PROGRAM = "p4src/tailcc.p4"
IFNAMSIZ = 15           # Linux interface names are at most 15 characters
MAX_PORT = 511          # v1model's 9-bit port numbers

TOP_KEYS = ("name", "intent", "hosts", "switches", "links")
HOST_KEYS = ("name", "ip", "mac", "gateway", "gateway_mac", "commands")
SWITCH_KEYS = ("name", "program", "grpc_port", "thrift_port", "device_id", "cpu_port",
               "priority_queues", "runtime_json", "cli_commands", "pcap", "log_level",
               "host_ports", "net_ports", "loopback_port")
LINK_KEYS = ("ends", "bw", "delay", "loss", "max_queue_size")
LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")


class TopologyError(Exception):
    """An invalid topology file; the message lists every problem as file:line: path."""


@dataclass
class HostSpec:
    name: str
    ip: ipaddress.IPv4Interface
    mac: str
    gateway: ipaddress.IPv4Address | None = None
    gateway_mac: str | None = None
    commands: list[str] = field(default_factory=list)


@dataclass
class SwitchSpec:
    name: str
    program: Path
    grpc_port: int
    thrift_port: int
    device_id: int
    cpu_port: int = 255
    priority_queues: int = 8
    runtime_json: Path | None = None
    cli_commands: Path | None = None
    pcap: bool = False
    pcap_dir: Path | None = None       # where pcaps go (default: RUN_DIR/pcap/NAME)
    log_level: str = "info"
    # a NIC (a PNA program such as p4src/nic/tailcc_nic.p4): softswitch run
    # --host-port/--net-port/--loopback-port
    host_ports: tuple[int, ...] = ()
    net_ports: tuple[int, ...] = ()
    loopback_port: int | None = None

    @property
    def is_nic(self) -> bool:
        return bool(self.host_ports or self.net_ports)

    def intf(self, port: int) -> str:
        """The root-namespace interface of ``port`` (Mininet's naming: ``s1-eth3``)."""
        return f"{self.name}-eth{port}"


@dataclass(frozen=True)
class End:
    """One end of a link: a host (``port`` None: its eth0) or a switch port."""

    node: str
    port: int | None


@dataclass
class LinkSpec:
    a: End
    b: End
    bw: float | None = None            # Mb/s (Mininet TCLink ``bw``)
    delay: str | None = None           # e.g. "1ms" (netem)
    loss: float | None = None          # percent (netem)
    max_queue_size: int | None = None  # packets


@dataclass
class Topology:
    path: Path
    name: str
    hosts: list[HostSpec]
    switches: list[SwitchSpec]
    links: list[LinkSpec]
    intent: Path | None = None
    # hosts' interface is ``eth0``, as p4lang/tutorials' P4Host renames it (their host
    # ``commands`` name it); else Mininet's ``h1-eth0``
    host_eth0: bool = False

    def host_intf(self, name: str) -> str:
        """The interface of host ``name`` inside its namespace."""
        return "eth0" if self.host_eth0 else f"{name}-eth0"

    def host(self, name: str) -> HostSpec:
        return next(h for h in self.hosts if h.name == name)

    def switch(self, name: str) -> SwitchSpec:
        return next(s for s in self.switches if s.name == name)

    def host_link(self, name: str) -> LinkSpec:
        """The one link of host ``name`` (validation guarantees exactly one)."""
        return next(lk for lk in self.links if name in (lk.a.node, lk.b.node))

    def root_interfaces(self) -> list[str]:
        """Every interface this topology creates in the root namespace (switch ports)."""
        out = []
        for link in self.links:
            for end in (link.a, link.b):
                if end.port is not None:
                    out.append(self.switch(end.node).intf(end.port))
        return out


def resolve_path(text: str, base_dir: Path) -> Path | None:
    """``text`` relative to ``base_dir``, else to the project root; None if neither."""
    path = Path(text)
    if path.is_absolute():
        return path if path.exists() else None
    for root in (base_dir, PROJECT_ROOT):
        if (root / path).exists():
            return (root / path).resolve()
    return None


def load_topology(path: str | Path) -> Topology:
    """Read and validate a topology file (TopologyError naming every problem)."""
    path = Path(path)
    data, lines = read_data(path)
    return topology_from_data(data, lines, path)


def read_data(path: Path) -> tuple[object, dict[str, int]]:
    """A YAML (or JSON) file's data and each path's line (TopologyError if unreadable)."""
    source = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TopologyError(f"{source}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise TopologyError(f"{source}: not a UTF-8 text file") from None
    try:
        data, lines = load_yaml(text, source)
    except IntentError as exc:
        raise TopologyError(str(exc)) from None
    return data, lines


def topology_from_data(data: object, lines: dict[str, int], path: Path,
                       where: Callable[[str], str] | None = None) -> Topology:
    """Validate the schema's ``data`` (``lines``: path -> line of ``path``'s file);
    ``where`` renames a problem's path to the file's own (a tutorials topology.json)."""
    problems = Problems(lines)
    topo = _parse(Node(data, "", problems), path)
    if problems.items:
        rename = where or (lambda p: p)
        named = [Problem(rename(p.path), p.message, problems.line_of(rename(p.path)))
                 for p in problems.items]
        raise TopologyError("\n".join(p.format(str(path)) for p in named))
    assert topo is not None
    return topo


def _file(node: Node | None, base_dir: Path) -> Path | None:
    if node is None or node.value is None:
        return None
    text = node.string()
    if text is None:
        return None
    found = resolve_path(text, base_dir)
    if found is None:
        node.error(f"no such file {text!r} (relative to {base_dir} or {PROJECT_ROOT})")
    return found


def _parse(root: Node, path: Path) -> Topology | None:
    if not root.mapping(TOP_KEYS):
        return None
    base_dir = path.resolve().parent
    name_node = root.get("name", path.stem)
    name = name_node.name() if name_node else None
    intent = _file(root.get("intent", None), base_dir)
    hosts = [h for h in (_host(n) for n in root.get("hosts", []).items()) if h]
    switches = [s for s in (_switch(n, i, base_dir)
                            for i, n in enumerate(root.get("switches", []).items())) if s]
    if not root.has("switches") or not root.value.get("switches"):
        root.problems.add("switches", "at least one switch is required")
    _unique(root, "hosts", [h.name for h in hosts] + [s.name for s in switches], "name")
    _unique(root, "switches", [s.grpc_port for s in switches], "grpc_port")
    _unique(root, "switches", [s.thrift_port for s in switches], "thrift_port")
    _unique(root, "switches", [s.device_id for s in switches], "device_id")
    _unique(root, "hosts", [h.mac for h in hosts], "mac")
    _unique(root, "hosts", [str(h.ip.ip) for h in hosts], "ip")
    taken = {s.grpc_port for s in switches} & {s.thrift_port for s in switches}
    if taken:
        root.problems.add("switches", f"port(s) {sorted(taken)} used as both a gRPC and a "
                          "thrift port")
    hosts_by = {h.name: h for h in hosts}
    switches_by = {s.name: s for s in switches}
    indexed = [(i, _link(n, hosts_by, switches_by))
               for i, n in enumerate(root.get("links", []).items())]
    _check_links(root, [(i, lk) for i, lk in indexed if lk], hosts_by)
    links = [lk for _, lk in indexed if lk]
    if name is None:
        return None
    return Topology(path=path.resolve(), name=name, hosts=hosts, switches=switches,
                    links=links, intent=intent)


def _unique(root: Node, where: str, values: list, what: str) -> None:
    seen: set = set()
    for value in values:
        if value in seen:
            root.problems.add(where, f"{what} {value} is used twice")
        seen.add(value)


def _host(node: Node) -> HostSpec | None:
    if not node.mapping(HOST_KEYS):
        return None
    name_n, ip_n, mac_n = node.get("name"), node.get("ip"), node.get("mac")
    name = name_n.name() if name_n else None
    ip = None
    if ip_n is not None:
        try:
            ip = ipaddress.IPv4Interface(str(ip_n.value))
            if "/" not in str(ip_n.value):
                ip_n.error(f"{ip_n.value!r} needs a prefix length (e.g. 10.0.1.1/24)")
                ip = None
        except ValueError:
            ip_n.error(f"{ip_n.value!r} is not an IPv4 address with prefix (a.b.c.d/len)")
    mac = mac_n.mac() if mac_n else None
    gw_n = node.get("gateway", None)
    gateway = gw_n.ipv4() if gw_n is not None and gw_n.value is not None else None
    gwmac_n = node.get("gateway_mac", None)
    gateway_mac = gwmac_n.mac() if gwmac_n is not None and gwmac_n.value is not None \
        else None
    if gateway_mac and gateway is None and gwmac_n is not None:
        gwmac_n.error("gateway_mac needs a gateway")
    if gateway is not None and ip is not None and gateway not in ip.network:
        gw_n.error(f"gateway {gateway} is not in the host's subnet {ip.network}")
    commands: list[str] = []
    for c in node.get("commands", []).items():
        text = c.string()
        if text:
            commands.append(text)
    if name is not None and len(f"{name}-eth0") > IFNAMSIZ:
        name_n.error(f"{name!r} is too long: interface {name}-eth0 would exceed "
                     f"{IFNAMSIZ} characters")
        return None
    if None in (name, ip, mac):
        return None
    return HostSpec(name, ip, mac, gateway, gateway_mac, commands)


def _switch(node: Node, index: int, base_dir: Path) -> SwitchSpec | None:
    if not node.mapping(SWITCH_KEYS):
        return None
    name_n = node.get("name")
    name = name_n.name() if name_n else None
    prog_n = node.get("program", DEFAULT_PROGRAM)
    program = _file(prog_n, base_dir)
    if program is not None and program.suffix not in (".p4", ".json"):
        prog_n.error(f"{program.name}: expected a P4_16 program (.p4) or a compiled "
                     "BMv2 JSON (.json)")
    grpc = node.get("grpc_port", 9559 + index).integer(1, 65535)
    thrift = node.get("thrift_port", 9090 + index).integer(1, 65535)
    device_id = node.get("device_id", index).integer(0, 2**64 - 1)
    cpu = node.get("cpu_port", 255).integer(0, MAX_PORT)
    queues = node.get("priority_queues", 8).integer(1, 8)
    runtime_json = _file(node.get("runtime_json", None), base_dir)
    cli_commands = _file(node.get("cli_commands", None), base_dir)
    pcap = node.get("pcap", False).boolean()
    level = node.get("log_level", "info").choice(LOG_LEVELS)
    host_ports = _ports(node.get("host_ports", []))
    net_ports = _ports(node.get("net_ports", []))
    loop_n = node.get("loopback_port", None)
    loopback = loop_n.integer(0, MAX_PORT) if loop_n is not None and \
        loop_n.value is not None else None
    if set(host_ports) & set(net_ports):
        node.error("a port cannot be in both host_ports and net_ports")
        return None
    if loopback is not None and not (host_ports or net_ports):
        node.error("loopback_port is for NICs (give host_ports and net_ports)")
        return None
    if None in (name, program, grpc, thrift, device_id, cpu, queues, pcap, level):
        return None
    return SwitchSpec(name=name, program=program, grpc_port=grpc, thrift_port=thrift,
                      device_id=device_id, cpu_port=cpu, priority_queues=queues,
                      runtime_json=runtime_json, cli_commands=cli_commands, pcap=pcap,
                      log_level=level, host_ports=host_ports, net_ports=net_ports,
                      loopback_port=loopback)


def _ports(node: Node | None) -> tuple[int, ...]:
    """A list of port numbers (``host_ports``/``net_ports``)."""
    if node is None or node.value is None:
        return ()
    out = [p.integer(0, MAX_PORT) for p in node.items()]
    return tuple(p for p in out if p is not None)


def _end(node: Node, hosts: dict[str, HostSpec], switches: dict[str, SwitchSpec]
         ) -> End | None:
    text = str(node.value) if isinstance(node.value, str | int) else None
    if text is None:
        node.error(f"expected 'host' or 'switch:port', got {node.value!r}")
        return None
    name, sep, port_text = text.partition(":")
    if name in hosts:
        if sep:
            node.error(f"{text!r}: a host end has no port number (hosts have one "
                       "interface, eth0)")
            return None
        return End(name, None)
    if name in switches:
        if not sep or not port_text.isdigit():
            node.error(f"{text!r}: a switch end needs a port number, e.g. {name}:1")
            return None
        port = int(port_text)
        sw = switches[name]
        if port > MAX_PORT:
            node.error(f"port {port} is not in 0..{MAX_PORT}")
            return None
        if port == sw.cpu_port:
            node.error(f"port {port} is {name}'s CPU port")
            return None
        if len(sw.intf(port)) > IFNAMSIZ:
            node.error(f"interface {sw.intf(port)} would exceed {IFNAMSIZ} characters "
                       "(use a shorter switch name)")
            return None
        return End(name, port)
    known = ", ".join(sorted(hosts) + sorted(switches)) or "none"
    node.error(f"unknown node {name!r} (hosts and switches: {known})")
    return None


def _link(node: Node, hosts: dict[str, HostSpec], switches: dict[str, SwitchSpec]
          ) -> LinkSpec | None:
    if isinstance(node.value, list):             # shorthand: [h1, s1:1]
        node = Node({"ends": node.value}, node.path, node.problems)
    if not node.mapping(LINK_KEYS):
        return None
    ends_n = node.get("ends")
    if ends_n is None:
        return None
    items = list(ends_n.items())
    if len(items) != 2:
        ends_n.error(f"a link has exactly two ends, got {len(items)}")
        return None
    a, b = (_end(n, hosts, switches) for n in items)
    bw_n, delay_n, loss_n, q_n = (node.get(k, None) for k in
                                  ("bw", "delay", "loss", "max_queue_size"))
    bw = bw_n.number(0.001, 100_000) if bw_n.value is not None else None
    delay = None
    if delay_n.value is not None:
        delay = str(delay_n.value)
        if not _is_duration(delay):
            delay_n.error(f"{delay!r} is not a delay like 1ms, 500us or 0.2s")
            delay = None
    loss = loss_n.number(0, 100) if loss_n.value is not None else None
    qsize = q_n.integer(1, 1_000_000) if q_n.value is not None else None
    if a is None or b is None:
        return None
    if a.port is None and b.port is None:
        ends_n.error("host-to-host links are not supported: connect hosts to switch ports")
        return None
    return LinkSpec(a, b, bw, delay, loss, qsize)


def _is_duration(text: str) -> bool:
    for unit in ("us", "ms", "s"):
        if text.endswith(unit):
            try:
                return float(text[: -len(unit)]) >= 0
            except ValueError:
                return False
    return False


def _check_links(root: Node, links: list[tuple[int, LinkSpec]],
                 hosts: dict[str, HostSpec]) -> None:
    used: dict[tuple[str, int | None], int] = {}
    for i, link in links:
        for end in (link.a, link.b):
            key = (end.node, end.port)
            if key in used:
                what = end.node if end.port is None else f"{end.node}:{end.port}"
                extra = " (a host has one interface)" if end.port is None else ""
                root.problems.add(f"links[{i}]", f"{what} is already used by "
                                  f"links[{used[key]}]{extra}")
            used[key] = i
    for name in hosts:
        if (name, None) not in used:
            root.problems.add("hosts", f"host {name} has no link")
