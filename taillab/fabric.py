"""The lab's switch: ``p4src/tailcc.p4`` on softswitch with its traffic manager, and the
two configurations the lab compares, written in the ``simple_switch_CLI`` language.

*training-era*: what a RoCE fabric tuned for training does — one lossless class for all
RDMA (one FIFO queue), RED/ECN on the port's depth, CNPs from the receivers (DCQCN).
*tailcc*: the same program and workload, with semantic classes (by QP range and packet
size, not DSCP) in strict-priority queues, per-class ECN thresholds and switch-generated
Fast CNPs at CNP priority.
"""

from __future__ import annotations

from dataclasses import dataclass

from softswitch.daemon.cli_channel.commands import RuntimeChannel
from softswitch.tm import TrafficManager
from softswitch.v1model.queueing import QueuedSwitch
from softswitch.v1model.switch import Switch
from taillab.sim import (
    RECEIVER_PORT,
    RECEIVER_QP_OFFSET,
    SWITCH_MAC,
    host_ip,
    host_mac,
)
from taillab.workload import BULK, HOT_KV, MOE, SCHED_SIGNAL

CNP_SESSION = 1024               # defines.p4 TAILCC_CNP_SESSION
CNP_RECIRCULATION_PORT = 510     # the intent's fast_cnp.recirculation_port
CNP_QUEUE = 6
QUEUE_CAPACITY = 2000   # deep, lossless-like buffers: the lab measures delay, not loss


def _mac_int(mac: str) -> str:
    return "0x" + mac.replace(":", "")


def _qp_range(cls_base: int) -> str:
    lo = cls_base + RECEIVER_QP_OFFSET
    return f"{lo:#x}..{lo + 0xff:#x}"


def routing(num_hosts: int) -> list[str]:
    lines = [f"add my_station eth_dst:{_mac_int(SWITCH_MAC)} set_router_mac()"]
    for port in range(num_hosts + 1):
        lines.append(f"add routing_v4 vrf:0 ipv4_dst:{host_ip(port)}/32 set_nexthop(port:{port}, "
                     f"smac:{_mac_int(SWITCH_MAC)}, dmac:{_mac_int(host_mac(port))})")
    return lines


def _ecn(queue: int, profile: int, kmin: int, kmax: int, pmax_1024: int) -> str:
    return (f"add ecn_profile 10 egress_port:{RECEIVER_PORT}&&&0x1ff queue:{queue}&&&0x7 "
            f"ecn_profile:{profile}&&&0xf set_ecn_profile(kmin_pkts:{kmin}, kmax_pkts:{kmax}, "
            f"pmax_1024:{pmax_1024}, use_deq_qdepth:0, drop_not_ect_enable:0, "
            f"drop_threshold_pkts:0)")


def training_era(num_hosts: int) -> list[str]:
    """Every packet in queue 0 (no classes), DCQCN-style RED on the port depth."""
    return routing(num_hosts) + [_ecn(0, 0, kmin=10, kmax=50, pmax_1024=200)]


def tailcc(num_hosts: int) -> list[str]:
    """Semantic classes in priority queues, per-class ECN, Fast CNP for the bulk classes."""
    cls = [
        # (priority, class spec, tc, queue, ecn profile)
        (100, SCHED_SIGNAL, 7, 5, 1),
        (90, HOT_KV, 8, 5, 1),
        (80, MOE, 5, 4, 2),
        (70, BULK, 2, 2, 3),
    ]
    lines = routing(num_hosts)
    for prio, spec, tc, queue, profile in cls:
        lines.append(f"add traffic_class {prio} is_roce:1&&&1 bth_dst_qp:{_qp_range(spec.qp_base)} "
                     f"set_class(tc:{tc}, queue:{queue}, ecn_profile:{profile})")
    lines += [
        # Mark where the queue builds, not the innocent: the strict-priority inference
        # queue only marks a real KV incast (a mark there cuts the very flows tailcc
        # protects); MoE and bulk get RED early and Fast CNPs.
        _ecn(5, 1, kmin=32, kmax=64, pmax_1024=100),
        _ecn(4, 2, kmin=10, kmax=50, pmax_1024=200),
        _ecn(2, 3, kmin=5, kmax=40, pmax_1024=200),
    ]
    # hot KV-cache and scheduling signals (queue 5) strict; MoE and bulk share the rest
    # 3:1 by DWRR (a softswitch extension; BMv2 has strict priority only)
    lines += [f"set_queue_weight 3 {RECEIVER_PORT} 4", f"set_queue_weight 1 {RECEIVER_PORT} 2"]
    for tc in (5, 2):  # Fast CNP for the elephants that build the queue
        lines.append(f"add fast_cnp_policy 10 traffic_class:{tc}&&&0xf enable_fast_cnp("
                     f"qdepth_threshold:20, min_interval:50, cnp_dscp:48, "
                     f"cnp_priority:{CNP_QUEUE}, keep_ce:0)")
    flow = 0
    for port in range(1, num_hosts + 1):
        for spec in (MOE, BULK):
            qp = spec.qp_base + port - 1
            lines.append(f"add cnp_flow ipv4_src:{host_ip(port)} ipv4_dst:{host_ip(RECEIVER_PORT)} "
                         f"dst_qp:{qp + RECEIVER_QP_OFFSET:#x} "
                         f"set_sender_qp(sender_qp:{qp:#x}, flow_index:{flow})")
            flow += 1
    return lines


CONFIGS = {"training-era": (training_era, True), "tailcc": (tailcc, True)}


@dataclass
class LabSwitch:
    """tailcc.p4 on softswitch behind a traffic manager: the lab's ``SwitchModel``."""

    queued: QueuedSwitch

    @classmethod
    def build(cls, switch: Switch, commands: list[str], num_hosts: int,
              link_rate_bps: float) -> LabSwitch:
        tm = TrafficManager(num_queues=8, link_rate_bps=link_rate_bps)
        tm.set_queue_depth(QUEUE_CAPACITY)
        for port in range(num_hosts + 1):
            tm.set_queue_depth(QUEUE_CAPACITY, port=port)
        channel = RuntimeChannel(switch, tm)  # tables and queues: one command language
        for line in commands:
            ok, output = channel.execute(line)
            if not ok:
                raise ValueError(f"lab configuration: {line!r}: {output}")
        # Fast CNPs: cloned to the recirculation port, built there, recirculated and
        # sent to the sender's port in CNP_QUEUE (as on BMv2: no class_of_service)
        switch.mirroring_add(CNP_SESSION, CNP_RECIRCULATION_PORT)
        return cls(QueuedSwitch(switch, tm))

    def receive(self, port: int, data: bytes, now_us: float) -> None:
        self.queued.receive(port, data, now_us)

    def next_event_us(self, now_us: float) -> float | None:
        return self.queued.next_event_us(now_us)

    def transmit_ready(self, now_us: float) -> list[tuple[int, bytes, float]]:
        return [(p.port, p.data, done) for p, done in self.queued.transmit_ready(now_us)]

    def counter(self, name: str, index: int) -> tuple[int, int]:
        return self.queued.switch.counter_read(name, index)
