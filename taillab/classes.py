"""How tailcc treats each semantic class the lab knows: its traffic class, queue, ECN
profile and whether the switch sends Fast CNPs for it. The scenario reader checks class
names against it; the fabric configures switches from it; the report ranks classes by it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ClassRole:
    """How tailcc treats a semantic class: its traffic class, queue, ECN
    profile and whether the switch sends Fast CNPs for it (the elephants)."""

    tc: int
    queue: int
    ecn: tuple[int, int, float]      # kmin, kmax (packets), pmax
    fast_cnp: bool


# The semantic classes of BRIEF §2 the lab knows, highest queue first. CNPs alone in
# strict queue 7 (leafspine.CNP_QUEUE: lossy, never paused, the NIC's urgent queue).
# Scheduling signals and control in strict queue 6 (a KV block must not sit in front of
# them). Hot KV in two strict queues by message size, an SRPT approximation: the serving
# stack posts small blocks on QPs of their own (a scenario's ``qp_by_size``), classified
# ``hot_kv_small`` into queue 5, above the large blocks' queue 4 (with TP/PP), so a small
# block does not wait behind another sender's large one in a downlink queue. Both are
# marked only on a real incast of mice. MoE, KV-cache migration and training elephants
# share queues 3/2/1 by DWRR 3:1:1, so a pause for one of them (a slow receiver of KV
# migrations) does not stop the others. The elephants get early ECN and Fast CNP, so
# they slow down before PFC has to step in.
# MoE does not: a dispatch is a bounded, synchronised incast (every peer's shard at once:
# 15 x 4 KB = 60 packets in the MoE scenario) that drains by itself, and a mark inside
# it only cuts the rate of the *next* dispatch (BRIEF §1: cuts punish innocents). So MoE
# is marked only above one dispatch's burst, and has no Fast CNP. Cold KV migration
# (background) ranks below bulk.
ROLES: dict[str, ClassRole] = {
    "control": ClassRole(9, 6, (32, 64, 0.1), False),
    "sched_signal": ClassRole(7, 6, (32, 64, 0.1), False),
    "hot_kv_small": ClassRole(11, 5, (32, 64, 0.1), False),
    "hot_kv": ClassRole(8, 4, (32, 64, 0.1), False),
    "tp_pp": ClassRole(6, 4, (32, 64, 0.1), False),
    "moe_a2a": ClassRole(5, 3, (64, 128, 0.2), False),
    "kv_migration": ClassRole(4, 2, (4, 32, 0.2), True),
    "bulk": ClassRole(2, 1, (4, 32, 0.2), True),
    "cold_kv": ClassRole(1, 0, (4, 32, 0.2), True),
}
DWRR_WEIGHTS = {3: 3, 2: 1, 1: 1, 0: 1}

# Fast CNP's queue-depth trigger per class, where it differs from the scenario's
# (Buffers.fast_cnp_qdepth_pkts, 8 packets). Training bulk's is half the PFC XOFF: at 8
# the rate cuts, not the queueing, would set its tail (messages wait at the sender
# behind earlier ones sent at cut rates), while without Fast CNP PFC pauses far longer.
FAST_CNP_QDEPTH_PKTS = {"bulk": 24}


def role(cls: str) -> ClassRole:
    r = ROLES.get(cls)
    if r is None:
        raise ValueError(f"traffic class {cls!r} unknown to the lab (known: "
                         f"{', '.join(ROLES)})")
    return r
