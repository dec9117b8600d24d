"""Intent -> the P4Runtime entities a NIC running p4src/nic/tailcc_nic.p4 should hold.

The NIC's tables (docs/nic.md): ports, the QP -> class map in both directions, the
per-QP pacing bounds, application tags, the class policies (DSCP, ECN capability and
transmit queue of every class with a DSCP), the receive fast path, and the clone
session that turns CE-marked data into receiver CNPs on the loopback port.
"""

from __future__ import annotations

from controlplane.compile.state import DesiredState, QueueSetting
from controlplane.intent import model as m
from controlplane.p4rt.entities import EntityBuilder, to_entity
from controlplane.p4rt.p4info import P4InfoIndex

PORT_MAP = "forwarding.port_map"
QP_CLASS = "classify.qp_class"
APP_CLASS = "classify.app_class"
CLASS_POLICY = "classify.class_policy"
LOCAL_QP = "rx_qp.local_qp"
QP_RATE = "rate.qp_rate"
RX_FAST_PATH = "fast_path.rx_fast_path"
MANAGED_TABLES = (PORT_MAP, QP_CLASS, APP_CLASS, CLASS_POLICY, LOCAL_QP, QP_RATE,
                  RX_FAST_PATH)
CLASS_METER = "rate.class_meter"
# include/defines.p4: CNP_MIRROR_SESSION
CNP_SESSION = 7
RC_ACKNOWLEDGE = 0x11
NAK_SYNDROME, NAK_MASK = 0x60, 0xE0


def compile_nic(intent: m.Intent, nic: m.Nic, index: P4InfoIndex) -> DesiredState:
    b = EntityBuilder(index)
    classes = {c.name: c for c in intent.classes}
    built = _ports(nic, b) + _qps(nic, classes, b) + _app_tags(nic, classes, b)
    built += _class_policies(intent, b) + _fast_path(nic, b)
    built += [b.meter_entry(CLASS_METER, classes[c.nic_class].id, c.cir, c.cburst, c.pir,
                            c.pburst) for c in nic.class_meters]
    if nic.receiver_cnp and nic.loopback_port is not None:
        built.append(b.clone_session(CNP_SESSION, [nic.loopback_port]))
    state = DesiredState()
    state.entities = [to_entity(x) for x in built]
    state.managed_tables = {index.table(t).preamble.id for t in MANAGED_TABLES}
    state.managed_clone_sessions = range(CNP_SESSION, CNP_SESSION + 1)
    if nic.scheduler is not None:
        state.queue_settings = [
            QueueSetting(nic.net_port, q.queue, q.mode, q.weight, q.rate_pps, q.depth_pkts)
            for q in intent.scheduler(nic.scheduler).queues]
    return state


def _ports(nic: m.Nic, b: EntityBuilder) -> list:
    pairs = [(nic.host_port, nic.net_port), (nic.net_port, nic.host_port)]
    if nic.loopback_port is not None:
        pairs.append((nic.loopback_port, nic.net_port))
    return [b.table_entity(PORT_MAP, match={"input_port": src}, action="to_port",
                           params={"port": dst}) for src, dst in pairs]


def _qps(nic: m.Nic, classes: dict[str, m.TrafficClass], b: EntityBuilder) -> list:
    out = []
    for qp in nic.qps:
        cls = classes[qp.nic_class].id
        out.append(b.table_entity(QP_CLASS, match={"dst_qp": qp.peer_qp},
                                  action="set_qp_class",
                                  params={"nic_class": cls, "ev_count": qp.ev_count,
                                          "ev_base": qp.ev_base, "slot": qp.slot,
                                          "urgent_max_len": qp.urgent_max_len}))
        out.append(b.table_entity(LOCAL_QP, match={"local_qp": qp.local_qp},
                                  action="set_local_qp",
                                  params={"slot": qp.slot, "peer_qp": qp.peer_qp,
                                          "nic_class": cls}))
        if qp.max_rate:
            out.append(b.table_entity(QP_RATE, match={"qp_slot": qp.slot},
                                      action="set_qp_rate",
                                      params={"max_bytes_per_1024ns": qp.max_rate,
                                              "min_bytes_per_1024ns": qp.min_rate,
                                              "burst_bytes": qp.burst}))
    return out


def _app_tags(nic: m.Nic, classes: dict[str, m.TrafficClass], b: EntityBuilder) -> list:
    out = []
    for tag in nic.app_tags:
        match: dict[str, str | int] = {"protocol": tag.protocol}
        if tag.dport is not None:
            match["l4_dport"] = f"{tag.dport}&&&0xffff"
        if tag.tag is not None:
            match["app_tag"] = f"{tag.tag}&&&0x3f"
        out.append(b.table_entity(APP_CLASS, match=match, action="set_app_class",
                                  params={"nic_class": classes[tag.nic_class].id},
                                  priority=tag.priority))
    return out


def _class_policies(intent: m.Intent, b: EntityBuilder) -> list:
    return [b.table_entity(CLASS_POLICY, match={"nic_class": tc.id},
                           action="set_class_policy",
                           params={"dscp": tc.stamped_dscp(),
                                   "ecn_capable": int(tc.lossless
                                                      or tc.ecn_profile is not None),
                                   "queue": tc.queue})
            for tc in intent.classes if tc.stamped_dscp() is not None]


def _fast_path(nic: m.Nic, b: EntityBuilder) -> list:
    out = []
    if nic.nak_fast_path:
        out.append(b.table_entity(RX_FAST_PATH,
                                  match={"bth_opcode": f"{RC_ACKNOWLEDGE}&&&0xff",
                                         "aeth_syndrome": f"{NAK_SYNDROME}&&&{NAK_MASK}"},
                                  action="fast_path", priority=10))
    if nic.trim_dscp is not None:
        out.append(b.table_entity(RX_FAST_PATH, match={"dscp": f"{nic.trim_dscp}&&&0x3f"},
                                  action="fast_path", priority=5))
    return out
