"""Lab scenarios as YAML: topology, traffic mix, load, duration, seeds, schemes.

A scenario file is data, not code, so a user can copy one and change a load or a seed
without reading the simulator. Every value is checked here, once, and a bad one is
reported as ``FILE: key: what is wrong`` (a :class:`ScenarioError`), never as a
traceback from deep inside a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from taillab.classes import ROLES

SCHEMES = ("baseline", "priority-only", "tailcc", "tailcc-nic", "tailcc-srpt", "ideal-srpt")
MOUSE_CLASSES = ("control", "cnp", "hot_kv", "sched_signal", "tp_pp")
# Classes the report also splits by message size, at this many bytes: hot KV's small
# blocks (a target of their own) and its large ones (what forces its tail).
BANDED_ROLES = ("hot_kv",)
BAND_BYTES = 64 * 1024


class ScenarioError(ValueError):
    """A scenario file that cannot be run; the message names the file and the key."""


@dataclass(frozen=True)
class Topology:
    """Leaf-spine: every leaf has one link to every spine; hosts hang off the leaves."""

    spines: int = 2
    leaves: int = 4
    hosts_per_leaf: int = 4
    host_gbps: float = 10.0
    fabric_gbps: float = 20.0
    prop_us: float = 1.0
    mtu_payload: int = 1024

    @property
    def num_hosts(self) -> int:
        return self.leaves * self.hosts_per_leaf


@dataclass(frozen=True)
class Buffers:
    """Switch buffers and the congestion thresholds, in packets of one MTU (the intent's
    numbers for the tailcc scheme; the baseline keeps its RED)."""

    queue_pkts: int = 4000            # per egress queue; PFC keeps them from filling
    shared_buffer_pkts: int = 12000   # whole switch: the peak occupancy is reported
    pfc_xoff_pkts: int = 48           # per ingress port and priority
    pfc_xon_pkts: int = 24
    host_rx_xoff_bytes: int = 64 * 1024
    host_rx_xon_bytes: int = 32 * 1024
    ecn_kmin_pkts: int = 20           # the baseline's RED on the lossless queue
    ecn_kmax_pkts: int = 80
    ecn_pmax: float = 0.2
    fast_cnp_qdepth_pkts: int = 8     # tailcc: Fast CNP once the egress queue holds this
    #                                   (per class where classes.FAST_CNP_QDEPTH_PKTS says)
    fast_cnp_interval_us: int = 10    # tailcc: at most one Fast CNP per flow per interval


@dataclass(frozen=True)
class TrafficSpec:
    """One traffic class: who sends to whom, message sizes, and how much."""

    name: str                       # what the report calls it
    role: str                       # the semantic class it is (classes.ROLES)
    senders: tuple[int, ...]
    receivers: tuple[int, ...]
    sizes: tuple[int, ...]          # drawn uniformly (log-uniform when ``log_range``)
    log_range: bool = False
    load: float = 0.0               # offered share of each sender's link (Poisson)
    mean_gap_us: float = 0.0        # or an explicit mean gap per sender
    period_us: float = 0.0          # or all-to-all: every period, each sender sends one
                                    # message to every receiver (MoE dispatch/combine)
    max_messages: int = 0           # per sender; 0 = until the duration ends
    elephant: bool = False
    # (max_bytes, class), ascending: the sender posts messages of at most max_bytes on
    # QPs of their own, which tailcc classifies as ``class`` (the first band that fits;
    # larger messages keep ``role``). The offered messages do not change; only the QP
    # they are posted on does, in every scheme alike.
    qp_by_size: tuple[tuple[int, str], ...] = ()

    def band(self, size: int) -> int:
        """Which of ``qp_by_size`` a message of ``size`` bytes is posted on; -1: the
        spec's own QPs."""
        for i, (max_bytes, _) in enumerate(self.qp_by_size):
            if size <= max_bytes:
                return i
        return -1


@dataclass(frozen=True)
class SlowReceiver:
    host: int
    rx_gbps: float


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    duration_us: float
    drain_us: float
    seeds: tuple[int, ...]
    schemes: tuple[str, ...]
    topology: Topology = field(default_factory=Topology)
    buffers: Buffers = field(default_factory=Buffers)
    traffic: tuple[TrafficSpec, ...] = ()
    slow_receivers: tuple[SlowReceiver, ...] = ()
    source: str = ""

    def scaled(self, duration_us: float | None = None,
               seeds: tuple[int, ...] | None = None, load_scale: float = 1.0) -> Scenario:
        """The same scenario with another duration, seed list or every class's offered
        load multiplied by ``load_scale`` (``tailcc lab`` flags; a load sweep)."""
        from dataclasses import replace
        traffic = self.traffic
        if load_scale != 1.0:
            traffic = tuple(replace(t, load=t.load * load_scale,
                                    mean_gap_us=t.mean_gap_us / load_scale,
                                    period_us=t.period_us / load_scale) for t in traffic)
            if any(t.load >= 1 for t in traffic):
                raise ScenarioError(f"{self.source}: load scale {load_scale:g} puts a class "
                                    f"at or above its link's rate")
        return replace(self, duration_us=duration_us or self.duration_us,
                       seeds=seeds or self.seeds, traffic=traffic)

    def size_bands(self) -> dict[str, tuple[str, int, float]]:
        """The report's size bands: band name -> (class name, above this many bytes, up
        to this many), two per class of a BANDED_ROLES role whose sizes span
        BAND_BYTES."""
        out: dict[str, tuple[str, int, float]] = {}
        for t in self.traffic:
            if t.role in BANDED_ROLES and min(t.sizes) <= BAND_BYTES < max(t.sizes):
                kb = BAND_BYTES // 1024
                out[f"{t.name}<={kb}KB"] = (t.name, 0, BAND_BYTES)
                out[f"{t.name}>{kb}KB"] = (t.name, BAND_BYTES, float("inf"))
        return out

    def qp_ranges(self) -> list[str]:
        """The semantic class of each QP range, by range index: one range per traffic
        spec (its index), then one per ``qp_by_size`` band, spec by spec. The switches
        classify each range (BTH destination QP) as its class."""
        return [t.role for t in self.traffic] + [cls for t in self.traffic
                                                 for _, cls in t.qp_by_size]

    def qp_range_of(self, spec: int, size: int) -> tuple[int, str]:
        """The QP range index and class a message of traffic spec ``spec`` and
        ``size`` bytes is posted on."""
        t = self.traffic[spec]
        band = t.band(size)
        if band < 0:
            return spec, t.role
        first = len(self.traffic) + sum(len(u.qp_by_size) for u in self.traffic[:spec])
        return first + band, t.qp_by_size[band][1]


def builtin_names() -> list[str]:
    """The scenarios shipped with the package (taillab/scenarios/*.yaml)."""
    return sorted(p.name[:-5] for p in resources.files("taillab.scenarios").iterdir()
                  if p.name.endswith(".yaml"))


def load_scenario(name_or_path: str) -> Scenario:
    """A shipped scenario by name, or a YAML file by path."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise ScenarioError(f"{name_or_path}: no such scenario file")
        return parse_scenario(path.read_text(), str(path))
    if name_or_path not in builtin_names():
        raise ScenarioError(f"{name_or_path}: no such scenario (shipped: "
                            f"{', '.join(builtin_names())}; or give a .yaml path)")
    text = resources.files("taillab.scenarios").joinpath(f"{name_or_path}.yaml").read_text()
    return parse_scenario(text, f"{name_or_path}.yaml")


def parse_scenario(text: str, source: str) -> Scenario:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{source}: not valid YAML: {exc}") from None
    r = _Reader(doc, source, "")
    topo = _topology(r.sub("topology"))
    scenario = Scenario(
        name=r.text("name"), description=r.text("description", "-"),
        duration_us=r.number("duration_us", minimum=1.0),
        drain_us=r.number("drain_us", 0.0, minimum=0.0),
        seeds=tuple(r.int_list("seeds", [1])),
        schemes=tuple(r.choice_list("schemes", SCHEMES, list(SCHEMES))),
        topology=topo, buffers=_buffers(r.sub("buffers")),
        traffic=tuple(_traffic(r.item("traffic", i), topo)
                      for i in range(len(r.list("traffic", [])))),
        slow_receivers=tuple(_slow(r.item("slow_receivers", i), topo)
                             for i in range(len(r.list("slow_receivers", [])))),
        source=source)
    r.done()
    if not scenario.traffic:
        raise ScenarioError(f"{source}: traffic: a scenario needs traffic")
    names = [t.name for t in scenario.traffic]
    if len(set(names)) != len(names):
        raise ScenarioError(f"{source}: traffic: names must be unique")
    return scenario


def _topology(r: _Reader) -> Topology:
    t = Topology(spines=r.integer("spines", 2, 1, 8), leaves=r.integer("leaves", 4, 1, 16),
                 hosts_per_leaf=r.integer("hosts_per_leaf", 4, 1, 32),
                 host_gbps=r.number("host_gbps", 10.0, minimum=0.1),
                 fabric_gbps=r.number("fabric_gbps", 20.0, minimum=0.1),
                 prop_us=r.number("prop_us", 1.0, minimum=0.0),
                 mtu_payload=r.integer("mtu_payload", 1024, 256, 4096))
    r.done()
    return t


def _buffers(r: _Reader) -> Buffers:
    d = Buffers()
    b = Buffers(**{k: (r.number(k, getattr(d, k), minimum=0.0) if k == "ecn_pmax"
                       else r.integer(k, getattr(d, k), 1, 10**9))
                   for k in d.__dataclass_fields__})
    r.done()
    if not b.pfc_xon_pkts < b.pfc_xoff_pkts or not b.host_rx_xon_bytes < b.host_rx_xoff_bytes:
        raise ScenarioError(f"{r.source}: buffers: XON must be below XOFF")
    if not b.ecn_kmin_pkts < b.ecn_kmax_pkts or not 0 < b.ecn_pmax <= 1:
        raise ScenarioError(f"{r.source}: buffers: need ecn_kmin_pkts < ecn_kmax_pkts and "
                            f"0 < ecn_pmax <= 1")
    return b


def _traffic(r: _Reader, topo: Topology) -> TrafficSpec:
    sizes = r.int_list("sizes", None)
    if not sizes or min(sizes) < 1:
        raise ScenarioError(f"{r.source}: {r.path}sizes: a non-empty list of byte counts")
    spec = TrafficSpec(
        name=r.text("name"), role=r.text("class", r.doc.get("name")),
        senders=tuple(r.hosts("senders", topo)),
        receivers=tuple(r.hosts("receivers", topo)), sizes=tuple(sizes),
        log_range=r.flag("log_range", False),
        load=r.number("load", 0.0, minimum=0.0),
        mean_gap_us=r.number("mean_gap_us", 0.0, minimum=0.0),
        period_us=r.number("period_us", 0.0, minimum=0.0),
        max_messages=r.integer("max_messages", 0, 0, 10**9), elephant=r.flag("elephant", False),
        qp_by_size=tuple(_size_band(r.item("qp_by_size", i))
                         for i in range(len(r.list("qp_by_size", [])))))
    r.done()
    bounds = [b for b, _ in spec.qp_by_size]
    if bounds != sorted(set(bounds)):
        raise ScenarioError(f"{r.source}: {r.path}qp_by_size: max_bytes must ascend")
    if sum(x > 0 for x in (spec.load, spec.mean_gap_us, spec.period_us)) != 1:
        raise ScenarioError(f"{r.source}: {r.path}: give exactly one of load, mean_gap_us, "
                            f"period_us")
    if spec.load >= 1:
        raise ScenarioError(f"{r.source}: {r.path}load: a share of the link, below 1")
    if spec.role not in ROLES:
        raise ScenarioError(f"{r.source}: {r.path}class: {spec.role!r} is not a class the lab "
                            f"knows ({', '.join(ROLES)})")
    if spec.log_range and len(spec.sizes) != 2:
        raise ScenarioError(f"{r.source}: {r.path}sizes: log_range takes [min, max]")
    return spec


def _size_band(r: _Reader) -> tuple[int, str]:
    band = (r.integer("max_bytes", _MISSING, 1, 2**31), r.text("class"))
    r.done()
    if band[1] not in ROLES:
        raise ScenarioError(f"{r.source}: {r.path}class: {band[1]!r} is not a class the lab "
                            f"knows ({', '.join(ROLES)})")
    return band


def _slow(r: _Reader, topo: Topology) -> SlowReceiver:
    hosts = r.hosts("host", topo)
    if len(hosts) != 1:
        raise ScenarioError(f"{r.source}: {r.path}host: one host")
    s = SlowReceiver(hosts[0], r.number("rx_gbps", minimum=0.01))
    r.done()
    return s


_MISSING = object()


class _Reader:
    """Typed access to one YAML mapping, naming file and key in every error, and
    refusing keys nobody read (a typo must not silently fall back to a default)."""

    def __init__(self, doc: Any, source: str, path: str) -> None:
        if doc is None:
            doc = {}
        if not isinstance(doc, dict):
            raise ScenarioError(f"{source}: {path or 'top level'}: expected a mapping")
        self.doc, self.source, self.path, self.seen = doc, source, path, set()

    def _get(self, key: str, default: Any) -> Any:
        self.seen.add(key)
        value = self.doc.get(key, default)
        if value is _MISSING:
            raise ScenarioError(f"{self.source}: {self.path}{key}: required")
        return value

    def _bad(self, key: str, what: str) -> ScenarioError:
        return ScenarioError(f"{self.source}: {self.path}{key}: {what} "
                             f"(got {self.doc.get(key)!r})")

    def text(self, key: str, default: Any = _MISSING) -> str:
        v = self._get(key, default)
        if not isinstance(v, str) or not v:
            raise self._bad(key, "expected a non-empty string")
        return v

    def flag(self, key: str, default: bool) -> bool:
        v = self._get(key, default)
        if not isinstance(v, bool):
            raise self._bad(key, "expected true or false")
        return v

    def number(self, key: str, default: Any = _MISSING, minimum: float = 0.0) -> float:
        v = self._get(key, default)
        if isinstance(v, bool) or not isinstance(v, int | float) or v < minimum:
            raise self._bad(key, f"expected a number >= {minimum:g}")
        return float(v)

    def integer(self, key: str, default: Any, lo: int, hi: int) -> int:
        v = self._get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise self._bad(key, f"expected an integer in {lo}..{hi}")
        return v

    def choice(self, key: str, allowed: tuple[str, ...], default: str) -> str:
        v = self._get(key, default)
        if v not in allowed:
            raise self._bad(key, f"expected one of {', '.join(allowed)}")
        return v

    def list(self, key: str, default: Any) -> list[Any]:
        v = self._get(key, default)
        if not isinstance(v, list):
            raise self._bad(key, "expected a list")
        return v

    def int_list(self, key: str, default: Any) -> list[int]:
        v = self._get(key, default)
        if v is None:
            return []
        if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool)
                                              for x in v) or not v:
            raise self._bad(key, "expected a non-empty list of integers")
        return v

    def choice_list(self, key: str, allowed: tuple[str, ...], default: list[str]) -> list[str]:
        v = self.list(key, default)
        bad = [x for x in v if x not in allowed]
        if bad or not v:
            raise self._bad(key, f"expected a non-empty list of {', '.join(allowed)}")
        return v

    def hosts(self, key: str, topo: Topology) -> list[int]:
        """Host indices: ints, ``"all"``, ``"leaf:N"`` (every host of leaf N) or
        ``"L.H"`` (host H of leaf L)."""
        v = self._get(key, _MISSING)
        items = v if isinstance(v, list) else [v]
        out: list[int] = []
        for item in items:
            try:
                out += _host_ref(item, topo)
            except ValueError as exc:
                raise self._bad(key, str(exc)) from None
        if not out:
            raise self._bad(key, "expected at least one host")
        return out

    def sub(self, key: str) -> _Reader:
        return _Reader(self._get(key, {}), self.source, f"{self.path}{key}.")

    def item(self, key: str, index: int) -> _Reader:
        return _Reader(self.doc[key][index], self.source, f"{self.path}{key}[{index}].")

    def done(self) -> None:
        unknown = sorted(set(self.doc) - self.seen)
        if unknown:
            raise ScenarioError(f"{self.source}: {self.path}{unknown[0]}: unknown key")


def _host_ref(item: Any, topo: Topology) -> list[int]:
    n = topo.num_hosts
    if isinstance(item, int) and not isinstance(item, bool):
        if not 0 <= item < n:
            raise ValueError(f"host {item} out of range 0..{n - 1}")
        return [item]
    if item == "all":
        return list(range(n))
    if isinstance(item, str) and item.startswith("leaf:"):
        leaf = int(item[5:]) if item[5:].isdigit() else -1
        if not 0 <= leaf < topo.leaves:
            raise ValueError(f"no leaf {item[5:]}")
        return [leaf * topo.hosts_per_leaf + h for h in range(topo.hosts_per_leaf)]
    if isinstance(item, str) and item.count(".") == 1:
        leaf_s, host_s = item.split(".")
        if leaf_s.isdigit() and host_s.isdigit() and int(leaf_s) < topo.leaves \
                and int(host_s) < topo.hosts_per_leaf:
            return [int(leaf_s) * topo.hosts_per_leaf + int(host_s)]
    raise ValueError(f"{item!r} is not a host (int, 'all', 'leaf:N' or 'L.H')")
