"""What the mix sends, where it congests, and the two intents it compares.

The traffic classes are tailcc's default profile's (controlplane/profiles/default.yaml):
three mice classes that must not wait (hot KV-cache writes as RoCEv2, scheduling
signals, cluster control) and three elephant classes (MoE all-to-all, storage,
training bulk) offered at twice the bottleneck, so a queue builds up and stays.

Who sends: the hosts on the first host's switch (except the receiver) send every
class to the receiver, the topology's last host. Where it congests (the bottleneck):

- senders on the receiver's switch (``single``): the receiver's access port;
- senders on another switch (``leaf-spine``): that switch's uplink towards the
  receiver, one link every flow shares (ECMP routes pinned to their group's first member).

How the bottleneck is made, per target (``--bottleneck``):

- ``link-rate`` (softswitch ``set_link_rate``): the port's shaper, shared by all its
  queues: strict priority and DWRR decide who goes first on one link;
- ``queue-rate`` (``set_queue_rate`` on every priority queue of the port, BMv2's only
  knob; softswitch has it too): each queue gets a rate on its own, so the comparison
  shows isolation between queues, not priority on a shared link. ``--rate`` is in bulk
  frames per second; each queue is limited to what a link of that bit rate carries of
  the largest frames the configuration puts in it (:func:`queue_frames`): the rate a
  strict-priority queue gets on a real link. A queue of 200 B signals is not held to
  the bulk queue's frames per second (BMv2 counts packets, not bytes).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from controlplane.intent import Intent
from controlplane.intent.model import MatchRule
from topologies.schema import Topology

BOTTLENECKS = ("auto", "link-rate", "queue-rate")
ETH_IP_UDP = 14 + 20 + 8                  # header bytes on the wire around a payload
QUEUES = range(8)


class PlanError(Exception):
    """The mix cannot run on this topology/target (message says why)."""


@dataclass(frozen=True)
class TrafficClass:
    """One class of the mix: its DSCP (what the intent classifies), payload size,
    destination port (4791 = RoCEv2 with a BTH) and per-sender rate for mice."""

    name: str
    dscp: int
    size: int
    port: int
    mouse: bool
    urgent: bool
    pps: float = 0.0                    # mice: per sender; elephants: from the bottleneck


CLASSES = (
    TrafficClass("hot_kv", 26, 512, 4791, mouse=True, urgent=True, pps=25),
    TrafficClass("sched_signal", 40, 200, 5102, mouse=True, urgent=True, pps=25),
    TrafficClass("control", 56, 128, 5103, mouse=True, urgent=True, pps=10),
    TrafficClass("moe_a2a", 34, 1000, 5201, mouse=False, urgent=False),
    TrafficClass("storage", 24, 1000, 5202, mouse=False, urgent=False),
    TrafficClass("training_bulk", 18, 1000, 5203, mouse=False, urgent=False),
)
ELEPHANT_LOAD = 2.0                       # elephants offer twice the bottleneck
BULK_FRAME = 1000 + ETH_IP_UDP            # what --rate counts in queue-rate mode


@dataclass(frozen=True)
class Flow:
    id: int
    cls: TrafficClass
    src: str
    dst: str
    dst_ip: str
    pps: float

    def sender_config(self) -> dict[str, Any]:
        return {"id": self.id, "dst": self.dst_ip, "port": self.cls.port,
                "dscp": self.cls.dscp, "size": self.cls.size, "pps": self.pps,
                "poisson": self.cls.mouse}


@dataclass
class Bottleneck:
    """Where and how the mix congests: ``kind`` link-rate or queue-rate."""

    switch: str
    port: int
    kind: str
    rate: int                           # bits/s (link-rate) or packets/s per queue
    why: str = ""

    def commands(self, frames: Mapping[int, int] | None = None) -> list[str]:
        """simple_switch_CLI-syntax commands (softswitch channel; BMv2 over Thrift).
        ``frames``: queue -> largest frame in bytes it carries (queue-rate only; see
        :meth:`queue_rates`)."""
        if self.kind == "link-rate":
            return [f"set_link_rate {self.rate} {self.port}"]
        rates = self.queue_rates(frames or {})
        return [f"set_queue_rate {rates[q]} {self.port} {q}" for q in QUEUES]

    def queue_rates(self, frames: Mapping[int, int]) -> dict[int, int]:
        """Packets/s per queue: ``rate`` bulk frames/s as bits, in the queue's largest
        frames (queues not in ``frames``, and bulk queues, keep ``rate``)."""
        return {q: max(1, round(self.rate * BULK_FRAME / frames[q])) if q in frames
                else self.rate for q in QUEUES}

    def describe(self) -> str:
        what = (f"set_link_rate {self.rate / 1e6:g} Mb/s (one shaper for all queues)"
                if self.kind == "link-rate" else
                f"set_queue_rate {self.rate} pkt/s on each of its 8 queues (per-queue "
                "limits: isolation, not a shared link)")
        return f"{self.switch}:{self.port} {what}{self.why}"

    def serialisation_s(self, frame_bytes: int) -> float:
        """Time one frame holds the bottleneck (what a mouse may wait behind)."""
        if self.kind == "link-rate":
            return frame_bytes * 8 / self.rate
        return 1.0 / self.rate

    def capacity_pps(self, frame_bytes: int) -> float:
        """Packets/s of ``frame_bytes`` one queue (queue-rate) or the link can carry."""
        if self.kind == "link-rate":
            return self.rate / (frame_bytes * 8)
        return float(self.rate)


@dataclass
class Plan:
    senders: list[str]
    receiver: str
    bottleneck: Bottleneck
    flows: list[Flow] = field(default_factory=list)

    def classes(self) -> list[TrafficClass]:
        return list(CLASSES)

    def flows_of(self, host: str) -> list[Flow]:
        return [f for f in self.flows if f.src == host]


def choose_bottleneck_kind(switch_kind: str, asked: str) -> str:
    """``auto``: a shared link where the target has one. BMv2 has no port shaper."""
    if asked == "auto":
        return "link-rate" if switch_kind == "softswitch" else "queue-rate"
    if asked == "link-rate" and switch_kind == "bmv2":
        raise PlanError("--bottleneck link-rate: BMv2 has no port shaper (simple_switch "
                        "only limits each priority queue on its own, set_queue_rate in "
                        "packets/s); use --bottleneck queue-rate or auto")
    if asked not in BOTTLENECKS:
        raise PlanError(f"--bottleneck {asked}: one of {', '.join(BOTTLENECKS)}")
    return asked


def _switch_of(topo: Topology, host: str) -> tuple[str, int]:
    link = topo.host_link(host)
    end = link.b if link.a.node == host else link.a
    if end.port is None:
        raise PlanError(f"host {host} is linked to host {end.node}, not to a switch")
    return end.node, end.port


def _route_port(intent: dict[str, Any], switch: str, dst: str) -> int:
    """The egress port ``switch``'s (pinned) intent routes ``dst`` out of."""
    entry = next((s for s in intent.get("switches", []) if s.get("name") == switch), None)
    if entry is None:
        raise PlanError(f"the intent has no switch {switch}")
    hops = {h["name"]: h["port"] for h in entry.get("next_hops", [])}
    best: tuple[int, int] | None = None
    for route in entry.get("routes", []):
        net = ipaddress.ip_network(route["prefix"])
        if ipaddress.ip_address(dst) in net and route.get("next_hop") in hops and \
                (best is None or net.prefixlen > best[0]):
            best = (net.prefixlen, hops[route["next_hop"]])
    if best is None:
        raise PlanError(f"switch {switch} has no route to {dst} in the intent")
    return best[1]


def build_plan(topo: Topology, intent: dict[str, Any], kind: str, rate: int) -> Plan:
    """Senders, receiver, bottleneck and flows for ``topo`` (``intent``: pinned)."""
    if len(topo.hosts) < 2:
        raise PlanError(f"{topo.name}: the mix needs at least two hosts")
    receiver = topo.hosts[-1].name
    first_switch = _switch_of(topo, topo.hosts[0].name)[0]
    senders = [h.name for h in topo.hosts[:-1] if _switch_of(topo, h.name)[0] == first_switch]
    recv_switch, recv_port = _switch_of(topo, receiver)
    dst_ip = str(topo.host(receiver).ip.ip)
    if first_switch == recv_switch:
        bottleneck = Bottleneck(recv_switch, recv_port, kind, rate,
                                f" (access port of {receiver})")
    else:
        port = _route_port(intent, first_switch, dst_ip)
        bottleneck = Bottleneck(first_switch, port, kind, rate,
                                f" (uplink shared by {', '.join(senders)} towards "
                                f"{receiver} on {recv_switch})")
    plan = Plan(senders, receiver, bottleneck)
    elephants = [c for c in CLASSES if not c.mouse]
    frame = elephants[0].size + ETH_IP_UDP
    # together the elephants offer twice what the link (or one queue) carries
    per_flow = ELEPHANT_LOAD * bottleneck.capacity_pps(frame) / (len(elephants) * len(senders))
    for host in senders:
        for cls in CLASSES:
            plan.flows.append(Flow(len(plan.flows) + 1, cls, host, receiver, dst_ip,
                                   cls.pps if cls.mouse else per_flow))
    return plan


def pinned(intent: dict[str, Any]) -> dict[str, Any]:
    """The intent with each ECMP route sent to its group's first member: one path."""
    for sw in intent.get("switches", []):
        groups = {g["name"]: g["members"] for g in sw.get("ecmp_groups", [])}
        for route in sw.get("routes", []):
            group = route.pop("ecmp_group", None)
            if group is not None:
                route["next_hop"] = groups[group][0]
    return intent


def fifo(intent: dict[str, Any]) -> dict[str, Any]:
    """The training-era configuration: every packet in one FIFO queue (queue 0), no
    ECN profile, no Fast CNP; routes, ports and schedulers as the tailcc intent."""
    out = dict(intent)
    out["classes"] = [{"name": "best_effort", "id": 0, "queue": 0}]
    out["default_class"] = "best_effort"
    out["fast_cnp"] = {"enabled": False}
    return out


def read_intent(topo: Topology) -> dict[str, Any]:
    """The topology's intent as data, its ``base`` made absolute (copies live in out/)."""
    if topo.intent is None:
        raise PlanError(f"{topo.name}: the mix needs a topology with an intent (routes)")
    data = yaml.safe_load(topo.intent.read_text(encoding="utf-8"))
    base = data.get("base")
    if isinstance(base, str) and (topo.intent.parent / base).is_file():
        data["base"] = str((topo.intent.parent / base).resolve())
    return data


def write_intent(data: dict[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


#: Header fields of the mix's packets the classifier can see but the plan cannot
#: know (ephemeral source ports, per-flow QPs): a rule on them is taken to match.
_VARIES = ("l4_src_port", "dst_qp")


def packet_fields(cls: TrafficClass) -> dict[str, int]:
    """What the switch classifies one of ``cls``'s packets by (mix_traffic.py's
    packets: UDP, ECN 0, a BTH with opcode 0x0A (RDMA WRITE only) on port 4791)."""
    fields = {"dscp": cls.dscp, "ecn": 0, "ip_proto": 17, "l4_dst_port": cls.port,
              "packet_size": cls.size + ETH_IP_UDP}
    if cls.port == 4791:
        fields["bth_opcode"] = 0x0A
    return fields


def _rule_matches(rule: MatchRule, fields: dict[str, int]) -> bool:
    for name, (lo, hi) in rule.fields.items():
        if name in _VARIES:
            continue
        value = fields.get(name)
        if value is None or not lo <= value <= hi:
            return False
    return True


def queue_of(intent: Intent, cls: TrafficClass) -> int:
    """The queue ``intent`` puts ``cls``'s packets in: the highest-priority class with a
    rule they match, else the default class."""
    fields = packet_fields(cls)
    best = None
    for tc in intent.classes:
        if any(_rule_matches(r, fields) for r in tc.rules) and \
                (best is None or tc.priority > best.priority):
            best = tc
    if best is None:
        best = next((c for c in intent.classes if c.name == intent.default_class), None)
    if best is None:
        raise PlanError(f"the intent classifies {cls.name} into no class and has no "
                        "default class")
    return best.queue


def queue_frames(intent: Intent) -> dict[int, int]:
    """Queue -> the largest frame (bytes) of the mix's classes ``intent`` puts there."""
    out: dict[int, int] = {}
    for cls in CLASSES:
        q = queue_of(intent, cls)
        out[q] = max(out.get(q, 0), cls.size + ETH_IP_UDP)
    return out
