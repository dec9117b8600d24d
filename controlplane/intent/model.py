"""The validated intent as typed dataclasses (see ``controlplane/SCHEMA.md``).

Everything downstream (compile, reconcile, CLI) reads these objects, never raw YAML,
so each check happens once, in :mod:`controlplane.intent.parse`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

Range = tuple[int, int]
"""Inclusive integer range; a single value v is (v, v)."""

MATCH_FIELDS: dict[str, tuple[int, int]] = {
    "dscp": (0, 63),
    "ecn": (0, 3),
    "ip_proto": (0, 255),
    "l4_src_port": (0, 65535),
    "l4_dst_port": (0, 65535),
    "bth_opcode": (0, 255),
    "dst_qp": (0, 2**24 - 1),
    "packet_size": (0, 65535),
    "vni": (0, 2**24 - 1),
}
"""Classifier match fields and their full ranges (an absent field matches all)."""


@dataclass(frozen=True)
class MatchRule:
    """One classification rule: every present field must match (AND)."""

    fields: dict[str, Range]
    path: str = ""

    def get(self, name: str) -> Range:
        return self.fields.get(name, MATCH_FIELDS[name])


@dataclass(frozen=True)
class TrafficClass:
    name: str
    id: int               # TrafficClass_t value carried in metadata (0..15)
    queue: int            # egress priority queue 0..7 (7 = highest)
    priority: int         # rule priority: higher wins where rules overlap
    rules: tuple[MatchRule, ...]
    ecn_profile: str | None = None
    dscp_rewrite: int | None = None
    lossless: bool = False
    path: str = ""

    def stamped_dscp(self) -> int | None:
        """The DSCP a NIC stamps on the class's traffic: ``dscp_rewrite``, else the one
        DSCP its first rule matches (what the switches classify it by), else None."""
        if self.dscp_rewrite is not None:
            return self.dscp_rewrite
        if self.rules:
            lo, hi = self.rules[0].get("dscp")
            if lo == hi:
                return lo
        return None


@dataclass(frozen=True)
class EcnProfile:
    """RED-style marking on queue depth in packets: none below kmin, Pmax at kmax."""

    name: str
    id: int
    kmin: int
    kmax: int
    pmax: float
    drop_not_ect: int | None = None   # drop Not-ECT packets above this depth


@dataclass(frozen=True)
class QueueSched:
    queue: int
    mode: str                  # strict | dwrr
    weight: int | None = None  # DWRR share (percent or relative weight)
    rate_pps: int | None = None
    depth_pkts: int | None = None
    ecn_profile: str | None = None   # marking for packets whose class names no profile


@dataclass(frozen=True)
class Pfc:
    """Ingress PFC thresholds (packets held) for the queues of lossless classes."""

    xoff: int
    xon: int


@dataclass(frozen=True)
class Scheduler:
    name: str
    queues: tuple[QueueSched, ...]
    pfc: Pfc | None = None


@dataclass(frozen=True)
class QpMapEntry:
    src_ip: ipaddress.IPv4Address
    dst_ip: ipaddress.IPv4Address
    dst_qp: int
    sender_qp: int


@dataclass(frozen=True)
class FastCnp:
    enabled: bool = False
    dscp: int = 48
    queue: int = 6
    min_interval_us: int = 50
    queue_threshold: int = 8     # depth (packets) at which a CNP is sent
    # The port the CNP's clone session points at: an otherwise unused port number. The
    # clone is built into a CNP there and recirculated to leave by the sender's port in
    # ``queue`` (BMv2 gives clones priority 0, so a direct clone would wait behind bulk).
    recirculation_port: int = 510
    keep_ce: bool = True
    learning: bool = True
    classes: tuple[str, ...] | None = None   # None: every lossless class
    qp_map: tuple[QpMapEntry, ...] = ()


@dataclass(frozen=True)
class SegRule:
    src: ipaddress.IPv4Network
    dst: ipaddress.IPv4Network
    action: str                   # allow | deny
    priority: int
    path: str = ""


@dataclass(frozen=True)
class Tenant:
    name: str
    vrf: int
    vnis: tuple[int, ...]
    default: str                  # allow | deny
    rules: tuple[SegRule, ...]


@dataclass(frozen=True)
class Port:
    number: int
    name: str | None = None
    scheduler: str | None = None
    speed_gbps: float | None = None
    tenant: str | None = None          # untunnelled traffic on this port is in its VRF


@dataclass(frozen=True)
class Tunnel:
    name: str
    src: ipaddress.IPv4Address
    dst: ipaddress.IPv4Address
    vni: int


@dataclass(frozen=True)
class NextHop:
    name: str
    port: int
    dst_mac: str
    src_mac: str
    tunnel: str | None = None


@dataclass(frozen=True)
class EcmpGroup:
    name: str
    id: int
    members: tuple[str, ...]


@dataclass(frozen=True)
class Route:
    vrf: int
    prefix: ipaddress.IPv4Network | ipaddress.IPv6Network
    next_hop: str | None = None
    ecmp_group: str | None = None


@dataclass(frozen=True)
class Tls:
    """File paths as written in the intent (relative to the intent file's folder)."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    server_name: str | None = None


@dataclass(frozen=True)
class Switch:
    name: str
    address: str
    device_id: int
    election_id: int = 1
    cpu_port: int = 255
    switch_id: int = 0
    router_mac: str = "00:00:00:00:00:00"
    runtime_address: str | None = None   # the switch's --thrift-port: queues, link rates
    target: str = "softswitch"           # softswitch | bmv2: how runtime_address is spoken
    tls: Tls | None = None               # P4Runtime over TLS (simple_switch_grpc --grpc-server-ssl)
    runtime_token_file: str | None = None  # softswitch run --runtime-token-file
    ports: tuple[Port, ...] = ()
    tunnels: tuple[Tunnel, ...] = ()
    next_hops: tuple[NextHop, ...] = ()
    ecmp_groups: tuple[EcmpGroup, ...] = ()
    routes: tuple[Route, ...] = ()


@dataclass(frozen=True)
class NicQp:
    """One RoCEv2 QP of a NIC's host, as the serving stack reports it: our QP, the
    peer's, the class of its traffic, the state slot the NIC keeps for it, its EVs,
    the size of a small urgent message, and its pacing bounds."""

    local_qp: int
    peer_qp: int
    nic_class: str
    slot: int
    ev_count: int = 1
    ev_base: int = 0xC000        # multiple of 16: EVs are ev_base .. ev_base + ev_count - 1
    urgent_max_len: int = 0      # IPv4 total length of a small urgent message (0: none)
    max_rate: int = 0            # bytes per 1024 ns (0: no pacing state)
    min_rate: int = 1
    burst: int = 4096


@dataclass(frozen=True)
class NicAppTag:
    """Non-RoCE traffic the application tags: protocol, optional destination port and
    optional DSCP tag -> class."""

    protocol: int
    nic_class: str
    dport: int | None = None
    tag: int | None = None
    priority: int = 1


@dataclass(frozen=True)
class NicMeter:
    """A class's policer on a NIC (class_meter, bytes): rates in bytes/s, bursts in
    bytes; traffic above the peak rate is dropped."""

    nic_class: str
    cir: int
    cburst: int
    pir: int
    pburst: int


@dataclass(frozen=True)
class Nic(Switch):
    """A NIC running p4src/nic/tailcc_nic.p4 (softswitch's PNA target): reached over
    P4Runtime like a switch, between its host (host_port) and the network (net_port)."""

    host_port: int = 0
    net_port: int = 1
    loopback_port: int | None = 9   # receiver CNPs are built on a loopback pass
    scheduler: str | None = None    # transmit queues of the network port
    qps: tuple[NicQp, ...] = ()
    app_tags: tuple[NicAppTag, ...] = ()
    class_meters: tuple[NicMeter, ...] = ()
    receiver_cnp: bool = True
    nak_fast_path: bool = True
    trim_dscp: int | None = None    # DSCP a switch gives trimmed packets (None: no fast path)


@dataclass(frozen=True)
class Intent:
    switches: tuple[Switch, ...] = ()
    classes: tuple[TrafficClass, ...] = ()
    default_class: str | None = None
    ecn_profiles: tuple[EcnProfile, ...] = ()
    schedulers: tuple[Scheduler, ...] = ()
    fast_cnp: FastCnp = field(default_factory=FastCnp)
    tenants: tuple[Tenant, ...] = ()
    nics: tuple[Nic, ...] = ()
    source: str | None = None

    @property
    def devices(self) -> tuple[Switch, ...]:
        """Every P4Runtime device the intent programs: switches, then NICs."""
        return self.switches + self.nics

    def switch(self, name: str) -> Switch:
        return next(s for s in self.devices if s.name == name)

    def traffic_class(self, name: str) -> TrafficClass:
        return next(c for c in self.classes if c.name == name)

    def ecn_profile(self, name: str) -> EcnProfile:
        return next(p for p in self.ecn_profiles if p.name == name)

    def tenant(self, name: str) -> Tenant:
        return next(t for t in self.tenants if t.name == name)

    def lossless_queues(self) -> set[int]:
        return {c.queue for c in self.classes if c.lossless}

    def fast_cnp_classes(self) -> tuple[TrafficClass, ...]:
        """The classes Fast CNP covers: the listed ones, or every lossless class."""
        if not self.fast_cnp.enabled:
            return ()
        names = self.fast_cnp.classes
        if names is None:
            return tuple(c for c in self.classes if c.lossless)
        return tuple(c for c in self.classes if c.name in names)

    def scheduler(self, name: str) -> Scheduler:
        return next(s for s in self.schedulers if s.name == name)
