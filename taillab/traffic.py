"""Offered traffic of a scenario: every message, its sender, receiver, size and start.

Generated once per seed and handed unchanged to every scheme, so the schemes are
compared on identical offered traffic. Arrivals per sender are Poisson: the mean gap
comes from ``load`` (share of the sender's link, using the mean message size) or is
given as ``mean_gap_us``. Each class draws from its own random stream (seeded by the
scenario seed and the class name), so adding a class does not reshuffle the others.
"""

from __future__ import annotations

import math
import random
import zlib
from dataclasses import dataclass

from taillab.scenario import Scenario, TrafficSpec


@dataclass(frozen=True)
class FabricMessage:
    cls: str            # the traffic spec's name
    spec: int           # the QP range it is posted on (Scenario.qp_ranges)
    role: str           # the semantic class of that range
    sender: int
    receiver: int
    size: int
    start_us: float
    msg_id: int
    elephant: bool = False


def mean_size(spec: TrafficSpec) -> float:
    if spec.log_range:
        lo, hi = spec.sizes
        return (hi - lo) / math.log(hi / lo) if hi > lo else float(lo)
    return sum(spec.sizes) / len(spec.sizes)


def draw_size(spec: TrafficSpec, rng: random.Random) -> int:
    if spec.log_range:
        lo, hi = spec.sizes
        return int(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
    return rng.choice(spec.sizes)


def mean_gap_us(spec: TrafficSpec, host_gbps: float) -> float:
    if spec.mean_gap_us:
        return spec.mean_gap_us
    return mean_size(spec) * 8 / (spec.load * host_gbps * 1e3)


def _all_to_all(spec: TrafficSpec, index: int, duration_us: float,
                rng: random.Random) -> list[FabricMessage]:
    """Every ``period_us`` (after a random phase), every sender sends one shard to every
    other receiver at once: an expert-parallel dispatch, the incast at each receiver
    that makes MoE bursty."""
    out = []
    t, n = rng.uniform(0, spec.period_us), 0
    while t < duration_us and (not spec.max_messages or n < spec.max_messages):
        for sender in spec.senders:
            for receiver in spec.receivers:
                if receiver != sender:
                    out.append(FabricMessage(spec.name, index, spec.role, sender, receiver,
                                             draw_size(spec, rng), t, 0, spec.elephant))
        t += spec.period_us
        n += 1
    return out


def generate(scenario: Scenario, seed: int) -> list[FabricMessage]:
    """Every message that starts within the scenario's duration, in start order."""
    out: list[FabricMessage] = []
    for index, spec in enumerate(scenario.traffic):
        rng = random.Random(seed * 1_000_003 + zlib.crc32(spec.name.encode()))
        if spec.period_us:
            out += _all_to_all(spec, index, scenario.duration_us, rng)
            continue
        gap = mean_gap_us(spec, scenario.topology.host_gbps)
        for sender in spec.senders:
            receivers = [r for r in spec.receivers if r != sender]
            if not receivers:
                continue
            t, n = rng.expovariate(1 / gap), 0
            while t < scenario.duration_us and (not spec.max_messages or n < spec.max_messages):
                out.append(FabricMessage(spec.name, index, spec.role, sender, rng.choice(receivers),
                                         draw_size(spec, rng), t, 0, spec.elephant))
                t += rng.expovariate(1 / gap)
                n += 1
    out.sort(key=lambda m: (m.start_us, m.sender, m.cls))
    return [FabricMessage(m.cls, *scenario.qp_range_of(m.spec, m.size), m.sender, m.receiver,
                          m.size, m.start_us, i, m.elephant)
            for i, m in enumerate(out)]


def average_load(scenario: Scenario, seed: int) -> float:
    """Offered bytes on the wire per host link, as a share of its rate (what a load
    sweep's x axis means)."""
    from taillab.roce import wire_bytes

    mtu = scenario.topology.mtu_payload
    wire = sum(wire_bytes(m.size, mtu) for m in generate(scenario, seed))
    return wire * 8 / (scenario.duration_us * 1e3 * scenario.topology.num_hosts
                       * scenario.topology.host_gbps)
