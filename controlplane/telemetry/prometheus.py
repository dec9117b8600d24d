"""tailcc's counters as Prometheus metrics, read from the switches at scrape time.

One collector serves every switch of an intent; an unreachable switch shows up as
``tailcc_switch_up 0`` instead of failing the whole scrape.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from controlplane.p4rt import Client, EntityBuilder, P4InfoIndex
from controlplane.p4rt.errors import P4RuntimeClientError
from controlplane.p4rt.tls import TlsConfig
from controlplane.telemetry.snapshot import (
    CNP_OUTCOMES,
    DROP_REASONS,
    Scope,
    Snapshot,
    take_snapshot,
)


@dataclass
class ScrapeTarget:
    name: str
    address: str
    device_id: int
    class_names: dict[int, str]
    timeout: float = 5.0
    scope: Scope | None = None
    thrift_address: str | None = None   # BMv2: registers over Thrift (P4Runtime cannot)
    tls: TlsConfig | None = None


class TailccCollector:
    """A ``prometheus_client`` collector over several switches."""

    def __init__(self, targets: list[ScrapeTarget]) -> None:
        self.targets = targets
        self._sessions: dict[str, tuple[Client, EntityBuilder]] = {}

    def _session(self, t: ScrapeTarget) -> tuple[Client, EntityBuilder]:
        if t.name not in self._sessions:
            client = Client(t.address, t.device_id, election_id=1, timeout=t.timeout,
                            tls=t.tls)
            client.connect(require_primary=False)
            p4info = client.get_p4info()
            if p4info is None:
                client.close()
                raise P4RuntimeClientError(f"{t.address}: no pipeline loaded")
            self._sessions[t.name] = (client, EntityBuilder(P4InfoIndex(p4info)))
        return self._sessions[t.name]

    def close(self) -> None:
        for client, _ in self._sessions.values():
            client.close()
        self._sessions.clear()

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("tailcc_switch_up", "1 if the switch answered this scrape",
                               labels=["switch"])
        families = _families()
        for t in self.targets:
            try:
                client, builder = self._session(t)
                snap = _snapshot(client, builder, t)
            except P4RuntimeClientError:
                stale = self._sessions.pop(t.name, None)
                if stale:
                    stale[0].close()
                up.add_metric([t.name], 0)
                continue
            up.add_metric([t.name], 1)
            _fill(families, t, snap)
        yield up
        yield from families.values()


def _snapshot(client: Client, builder: EntityBuilder, t: ScrapeTarget) -> Snapshot:
    if t.thrift_address is None:
        return take_snapshot(client, builder, t.scope)
    from controlplane.reconcile.bmv2_thrift import Bmv2Thrift
    with Bmv2Thrift(t.thrift_address, t.timeout) as thrift:
        return take_snapshot(client, builder, t.scope, thrift)


def _families() -> dict[str, Metric]:
    c, g = CounterMetricFamily, GaugeMetricFamily
    return {
        "class": c("tailcc_class_packets", "packets classified per traffic class",
                   labels=["switch", "class"]),
        "class_bytes": c("tailcc_class_bytes", "bytes classified per traffic class",
                         labels=["switch", "class"]),
        "ecn_mark": c("tailcc_ecn_marked_packets", "packets marked CE per egress queue",
                      labels=["switch", "port", "queue"]),
        "ecn_drop": c("tailcc_ecn_dropped_packets", "Not-ECT packets dropped by an ECN "
                      "profile", labels=["switch", "port", "queue"]),
        "pfc": c("tailcc_pfc_pause_frames", "PFC frames received per port and priority",
                 labels=["switch", "port", "priority"]),
        "fast_cnp": c("tailcc_fast_cnp", "Fast CNP outcomes", labels=["switch", "outcome"]),
        "drop": c("tailcc_drops", "ingress drops by reason", labels=["switch", "reason"]),
        "segment_deny": c("tailcc_segment_denied_packets", "packets denied by "
                          "micro-segmentation per tenant VRF", labels=["switch", "vrf"]),
        "queue_depth": g("tailcc_queue_depth_packets", "last published queue depth",
                         labels=["switch", "port", "queue"]),
        "queue_watermark": g("tailcc_queue_watermark_packets", "highest queue depth seen",
                             labels=["switch", "port", "queue"]),
    }


def _fill(f: dict[str, Metric], t: ScrapeTarget, snap: Snapshot) -> None:
    for tc, (pkts, nbytes) in sorted(snap.counters.get("class", {}).items()):
        name = t.class_names.get(tc, str(tc))
        f["class"].add_metric([t.name, name], pkts)
        f["class_bytes"].add_metric([t.name, name], nbytes)
    for kind in ("ecn_mark", "ecn_drop", "pfc"):
        for slot, (pkts, _) in sorted(snap.counters.get(kind, {}).items()):
            f[kind].add_metric([t.name, str(slot >> 3), str(slot & 7)], pkts)
    for idx, (pkts, _) in sorted(snap.counters.get("fast_cnp", {}).items()):
        f["fast_cnp"].add_metric([t.name, CNP_OUTCOMES[idx] if idx < 3 else str(idx)], pkts)
    built = snap.total("cnp_built")
    if "cnp_built" in snap.counters:
        f["fast_cnp"].add_metric([t.name, "built"], built)
    for idx, (pkts, _) in sorted(snap.counters.get("drop", {}).items()):
        reason = DROP_REASONS[idx] if idx < len(DROP_REASONS) else str(idx)
        f["drop"].add_metric([t.name, reason], pkts)
    for vrf, (pkts, _) in sorted(snap.counters.get("segment_deny", {}).items()):
        f["segment_deny"].add_metric([t.name, str(vrf)], pkts)
    for kind in ("queue_depth", "queue_watermark"):
        for slot, value in sorted(snap.registers.get(kind, {}).items()):
            f[kind].add_metric([t.name, str(slot >> 3), str(slot & 7)], value)
