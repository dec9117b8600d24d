"""Inference traffic for the lab: which hosts send what, how big, how often.

Every class is RoCEv2 with the DSCP a training-era fabric gives all RDMA (26, ECT(0)),
so the baseline cannot tell them apart by DSCP; what tells them apart is what the
traffic *is*: the QP ranges the serving stack registers (KV-cache, MoE, bulk), the BTH
opcode and the packet size. tailcc's classifier keys on exactly that.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

MTU_PAYLOAD = 1024
ROCE_DSCP = 26


@dataclass(frozen=True)
class TrafficClass:
    """One kind of traffic: its QP range, message sizes and arrival process per sender."""

    name: str
    qp_base: int
    sizes: tuple[int, ...]            # message sizes in bytes, drawn uniformly
    mean_gap_us: float                 # mean gap between messages of one sender
    bursty: bool = False               # True: periodic bursts (all-to-all); False: Poisson
    elephant: bool = False


@dataclass(frozen=True)
class Message:
    cls: str
    sender: int
    qp: int
    size: int
    start_us: float
    msg_id: int


# The classes of the default scenario (incast into one decode node's port).
SCHED_SIGNAL = TrafficClass("sched_signal", 0x400, (256,), 60.0)
HOT_KV = TrafficClass("hot_kv", 0x100, (4096, 16384, 32768, 65536), 500.0)
MOE = TrafficClass("moe_a2a", 0x200, (131072,), 1000.0, bursty=True, elephant=True)
BULK = TrafficClass("bulk", 0x300, (262144,), 400.0, bursty=True, elephant=True)

DEFAULT_MIX: dict[str, tuple[TrafficClass, tuple[int, ...]]] = {
    # class -> (spec, sender host indices)
    "sched_signal": (SCHED_SIGNAL, (0, 1, 2, 3)),
    "hot_kv": (HOT_KV, (0, 1, 2, 3)),
    "moe_a2a": (MOE, (4, 5)),
    "bulk": (BULK, (6, 7)),
}


def generate(duration_us: float, seed: int = 1,
             mix: dict[str, tuple[TrafficClass, tuple[int, ...]]] | None = None) -> list[Message]:
    """All messages starting within ``duration_us``, in start order: bursty classes start
    one message every ``mean_gap_us`` (after a random phase), the others are Poisson."""
    rng = random.Random(seed)
    mix = mix or DEFAULT_MIX
    messages: list[Message] = []
    for spec, senders in mix.values():
        for sender in senders:
            messages += _sender_messages(spec, sender, duration_us, rng)
    messages.sort(key=lambda m: m.start_us)
    return [Message(m.cls, m.sender, m.qp, m.size, m.start_us, i) for i, m in enumerate(messages)]


def _sender_messages(spec: TrafficClass, sender: int, duration_us: float,
                     rng: random.Random) -> list[Message]:
    qp = spec.qp_base + sender
    out, t = [], rng.uniform(0, spec.mean_gap_us)
    while t < duration_us:
        out.append(Message(spec.name, sender, qp, rng.choice(spec.sizes), t, 0))
        t += spec.mean_gap_us if spec.bursty else rng.expovariate(1 / spec.mean_gap_us)
    return out
