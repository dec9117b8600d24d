"""Intent -> the P4Runtime entities one switch should hold, named by the P4Info.

``compile_switch(intent, switch, index)`` returns a :class:`DesiredState`; nothing here
talks to a switch, so compilation is testable and ``--dry-run`` is exact.
"""

from __future__ import annotations

from controlplane.compile import names as n
from controlplane.compile.network import forwarding_entries, int_config_entry, tenant_entries
from controlplane.compile.qos import (
    class_entries,
    default_class_entry,
    ecn_entries,
    fast_cnp_entries,
)
from controlplane.compile.state import DesiredState, QueueSetting
from controlplane.intent import model as m
from controlplane.p4rt.entities import EntityBuilder, to_entity
from controlplane.p4rt.errors import P4RuntimeClientError
from controlplane.p4rt.p4info import P4InfoIndex

__all__ = ["CompileError", "DesiredState", "QueueSetting", "compile_switch"]

MANAGED_TABLES = (n.TRAFFIC_CLASS, n.ECN_PROFILE, n.FAST_CNP_POLICY, n.PORT_VRF,
                  n.VXLAN_TERMINATION, n.SEGMENT_ACL, n.SEGMENT_DEFAULT, n.MY_STATION,
                  n.ROUTING_V4, n.ROUTING_V6, n.ECMP_GROUP, n.ECMP_MEMBER)


class CompileError(Exception):
    """The intent cannot be expressed on this pipeline (a name or value it lacks)."""


def compile_switch(intent: m.Intent, switch: m.Switch, index: P4InfoIndex) -> DesiredState:
    """What ``switch`` should hold; a :class:`~controlplane.intent.model.Nic` gets the
    NIC program's entities (:mod:`controlplane.compile.nic`)."""
    b = EntityBuilder(index)
    try:
        if isinstance(switch, m.Nic):
            from controlplane.compile.nic import compile_nic
            return compile_nic(intent, switch, index)
        return _compile(intent, switch, index, b)
    except P4RuntimeClientError as exc:
        raise CompileError(f"switch {switch.name}: the pipeline cannot hold this intent: "
                           f"{exc}") from None


def _compile(intent: m.Intent, switch: m.Switch, index: P4InfoIndex,
             b: EntityBuilder) -> DesiredState:
    state = DesiredState()
    built = (forwarding_entries(switch, b) + tenant_entries(intent, switch, b)
             + class_entries(intent, b) + ecn_entries(intent, switch, b)
             + fast_cnp_entries(intent, switch, b))
    state.entities = [to_entity(x) for x in built]          # no copy for Entities
    state.defaults = [default_class_entry(intent, b), int_config_entry(switch, b)]
    state.managed_tables = {index.table(t).preamble.id for t in MANAGED_TABLES}
    cnp_flow = index.table(n.CNP_FLOW).preamble.id
    if intent.fast_cnp.learning:
        state.additive_tables.add(cnp_flow)   # learned flows are not ours to delete
    else:
        state.managed_tables.add(cnp_flow)
    state.managed_clone_sessions = range(n.CNP_SESSION, n.CNP_SESSION + 1)
    state.queue_settings = queue_settings(intent, switch)
    state.link_rates = {p.number: round(p.speed_gbps * 1e9) for p in switch.ports
                        if p.speed_gbps is not None}
    state.pfc = pfc_settings(intent, switch)
    return state


def pfc_settings(intent: m.Intent, switch: m.Switch
                 ) -> dict[tuple[int, int], tuple[int, int] | None]:
    """PFC on the lossless classes' queues of ports whose scheduler sets thresholds,
    explicitly off on their other queues (so a class made lossy stops pausing)."""
    lossless = intent.lossless_queues()
    out: dict[tuple[int, int], tuple[int, int] | None] = {}
    for port in switch.ports:
        sched = intent.scheduler(port.scheduler) if port.scheduler else None
        if sched is None or sched.pfc is None:
            continue
        for prio in range(8):
            out[(port.number, prio)] = ((sched.pfc.xoff, sched.pfc.xon)
                                        if prio in lossless else None)
    return out


def queue_settings(intent: m.Intent, switch: m.Switch) -> list[QueueSetting]:
    out = []
    for port in switch.ports:
        if port.scheduler is None:
            continue
        for q in intent.scheduler(port.scheduler).queues:
            out.append(QueueSetting(port.number, q.queue, q.mode, q.weight, q.rate_pps,
                                    q.depth_pkts))
    return out
