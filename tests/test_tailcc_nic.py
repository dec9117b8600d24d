"""The tailcc NIC (p4src/nic/tailcc_nic.p4) on softswitch's PNA target, feature by feature.

Every test sends packets in at the host port (HOST_TO_NET) or the network port
(NET_TO_HOST) of a :class:`softswitch.pna.nic.Nic` loaded with the NIC program and
programmed as the controller would (QP -> class map, class policies, QP rates, CNP
loopback session), and checks what comes out of the other side, and back.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from scapy.contrib.roce import BTH  # binds UDP port 4791 to BTH for parsing
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from softswitch.core.control import KeyMatch
from softswitch.pna.nic import Nic
from softswitch.tm import TrafficManager

NIC_P4 = Path(__file__).resolve().parent.parent / "p4src" / "nic" / "tailcc_nic.p4"
HOST, NET, LOOP = 0, 1, 9
LOCAL_QP, PEER_QP, SLOT = 0x200, 0x300, 5       # our QP, the peer's, their state slot
EV_BASE = 0xC000
CLASS_ROCE, CLASS_APP, CLASS_KV = 3, 5, 1
Q_ROCE, Q_APP, Q_KV, Q_PACED, Q_URGENT = 4, 3, 0, 1, 7
RC_SEND_FIRST, RC_SEND_ONLY, RC_WRITE_ONLY, RC_ACK, CNP = 0x00, 0x04, 0x0A, 0x11, 0x81
TRIM_DSCP = 63


@pytest.fixture(scope="module")
def checked():
    from softswitch.frontend.compiler import compile_program
    return compile_program(NIC_P4)


def _km(name: str, value: int, mask: int | None = None) -> KeyMatch:
    if mask is None:
        return KeyMatch(name, "exact", value)
    return KeyMatch(name, "ternary", value, mask)


@pytest.fixture
def nic(checked) -> Nic:
    """The NIC as tailcc's controller programs it from an intent."""
    n = Nic.from_program(checked)
    n.set_ports(host=[HOST], net=[NET], loopback=LOOP)
    n.clock.freeze(1_000_000)
    for src, dst in ((HOST, NET), (NET, HOST), (LOOP, NET)):
        n.table_add("port_map", [_km("input_port", src)], "to_port", [dst])
    # QP -> class (transmit side keys the peer's QP, receive side ours; one slot)
    n.table_add("qp_class", [_km("dst_qp", PEER_QP)], "set_qp_class",
                [CLASS_ROCE, 4, EV_BASE, SLOT, 200])
    n.table_add("local_qp", [_km("local_qp", LOCAL_QP)], "set_local_qp",
                [SLOT, PEER_QP, CLASS_ROCE])
    n.table_add("app_class", [_km("protocol", 17), _km("l4_dport", 5000, 0xFFFF),
                              _km("app_tag", 10, 0x3F)], "set_app_class", [CLASS_APP],
                priority=10)
    n.table_add("app_class", [_km("protocol", 6), _km("l4_dport", 6000, 0xFFFF),
                              _km("app_tag", 0, 0)], "set_app_class", [CLASS_KV],
                priority=10)
    for cls, dscp, ecn, queue in ((CLASS_ROCE, 26, 1, Q_ROCE), (CLASS_APP, 34, 1, Q_APP),
                                  (CLASS_KV, 8, 0, Q_KV)):
        n.table_add("class_policy", [_km("nic_class", cls)], "set_class_policy",
                    [dscp, ecn, queue])
    n.table_add("qp_rate", [_km("qp_slot", SLOT)], "set_qp_rate", [100, 2, 2000])
    n.table_add("rx_fast_path", [_km("dscp", 0, 0), _km("bth_opcode", RC_ACK, 0xFF),
                                 _km("aeth_syndrome", 0x60, 0xE0)], "fast_path", [],
                priority=10)
    n.table_add("rx_fast_path", [_km("dscp", TRIM_DSCP, 0x3F), _km("bth_opcode", 0, 0),
                                 _km("aeth_syndrome", 0, 0)], "fast_path", [], priority=5)
    n.mirroring_add(7, LOOP)
    n.set_expire_profile(1, 5_000)
    return n


def _bth(opcode: int, dst_qp: int, psn: int = 0) -> bytes:
    return struct.pack("!BBHII", opcode, 0, 0xFFFF, dst_qp & 0xFFFFFF, psn & 0xFFFFFF)


def _roce(opcode: int, dst_qp: int, payload: int = 64, src: str = "10.0.0.1",
          dst: str = "10.0.0.2", sport: int = 50000, ecn: int = 0, dscp: int = 0,
          extra: bytes = b"") -> bytes:
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                 / IP(src=src, dst=dst, tos=(dscp << 2) | ecn)
                 / UDP(sport=sport, dport=4791) / _bth(opcode, dst_qp) / extra
                 / (b"\x5a" * payload))


def _one(outs: list, port: int):
    got = [o for o in outs if o.port == port]
    assert len(got) == 1, outs
    return got[0]


def _checksum_ok(pkt: Ether) -> bool:
    again = pkt.copy()
    del again[IP].chksum
    return Ether(bytes(again))[IP].chksum == pkt[IP].chksum


# --- transmit ------------------------------------------------------------------------------

def test_tx_qp_class_stamps_dscp_ect0_and_queue(nic: Nic) -> None:
    out = _one(nic.inject(HOST, _roce(RC_WRITE_ONLY, PEER_QP, payload=800)), NET)
    ip = Ether(out.data)[IP]
    assert (ip.tos >> 2, ip.tos & 3) == (26, 2)          # DSCP stamped, ECT(0) set
    assert out.meta["class_of_service"] == Q_ROCE
    assert _checksum_ok(Ether(out.data))


def test_tx_small_urgent_messages_take_the_urgent_queue(nic: Nic) -> None:
    small_send = _one(nic.inject(HOST, _roce(RC_SEND_ONLY, PEER_QP, payload=64)), NET)
    big_write = _one(nic.inject(HOST, _roce(RC_WRITE_ONLY, PEER_QP, payload=800)), NET)
    small_first = _one(nic.inject(HOST, _roce(RC_SEND_FIRST, PEER_QP, payload=64)), NET)
    assert small_send.meta["class_of_service"] == Q_URGENT
    assert big_write.meta["class_of_service"] == Q_ROCE        # larger than 200 bytes
    assert small_first.meta["class_of_service"] == Q_ROCE      # not a one-packet message


def test_tx_udp_tcp_classified_by_the_application_tag(nic: Nic) -> None:
    app = bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2", tos=10 << 2)
                / UDP(sport=1, dport=5000) / (b"a" * 20))
    kv = bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / TCP(sport=2, dport=6000))
    untagged = bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2", tos=4 << 2)
                     / UDP(sport=1, dport=5000))
    a, k, u = (_one(nic.inject(HOST, p), NET) for p in (app, kv, untagged))
    assert (Ether(a.data)[IP].tos, a.meta["class_of_service"]) == ((34 << 2) | 2, Q_APP)
    assert (Ether(k.data)[IP].tos, k.meta["class_of_service"]) == (8 << 2, Q_KV)
    assert (Ether(u.data)[IP].tos, u.meta["class_of_service"]) == (4 << 2, 0)


def test_tx_urgent_never_waits_behind_host_bulk_and_kv_is_paced(nic: Nic) -> None:
    tm = TrafficManager(num_queues=8)
    tm.set_link_rate(10e6, NET)                  # 10 Mb/s: about 0.7 ms per bulk packet
    q = nic.queued_view(tm)
    q.configure_class(Q_KV, rate_pps=100)        # cold KV migration: 100 packets/s
    for _ in range(5):
        q.receive(HOST, _roce(RC_WRITE_ONLY, PEER_QP, payload=800), 0.0)
        q.receive(HOST, bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2")
                              / TCP(sport=2, dport=6000) / (b"k" * 800)), 0.0)
    first = [o.meta["class_of_service"] for o, _ in q.transmit_ready(0.0)]
    q.receive(HOST, _roce(RC_SEND_ONLY, PEER_QP, payload=32), 1.0)
    order, now = list(first), 1.0
    while (nxt := q.next_event_us(now)) is not None and now < 100_000:
        now = max(nxt, now + 0.001)
        order += [o.meta["class_of_service"] for o, _ in q.transmit_ready(now)]
    assert order[len(first)] == Q_URGENT          # next after what was already on the wire
    kv_sent = order.count(Q_KV)
    assert kv_sent <= 11 and order[-1] == Q_KV    # 100 pps: KV trails all the bulk


def test_tx_entropy_sprays_over_the_qps_ev_count(nic: Nic) -> None:
    ports = [Ether(_one(nic.inject(HOST, _roce(RC_WRITE_ONLY, PEER_QP)), NET).data)[UDP].sport
             for _ in range(8)]
    assert ports == [EV_BASE + i for i in (1, 2, 3, 0, 1, 2, 3, 0)]


def _cnp_from_net(nic: Nic, ev: int) -> list:
    """A CNP for our QP arriving from the network, naming entropy value ``ev``."""
    return nic.inject(NET, _roce(CNP, LOCAL_QP, payload=16, src="10.0.0.2", dst="10.0.0.1",
                                 sport=EV_BASE + ev))


def test_tx_entropy_skips_values_recently_seen_with_ce(nic: Nic) -> None:
    assert _cnp_from_net(nic, 2) == []
    ports = [Ether(_one(nic.inject(HOST, _roce(RC_WRITE_ONLY, PEER_QP)), NET).data)[UDP].sport
             - EV_BASE for _ in range(6)]
    assert 2 not in ports and ports[:3] == [1, 3, 0]
    nic.clock.advance(60_000)                      # EV_CE_HOLD_NS (50 ms) later
    later = {Ether(_one(nic.inject(HOST, _roce(RC_WRITE_ONLY, PEER_QP)), NET).data)[UDP].sport
             - EV_BASE for _ in range(4)}
    assert 2 in later


def test_tx_pacing_rate_is_cut_by_cnps_and_recovers(nic: Nic) -> None:
    write = _roce(RC_WRITE_ONLY, PEER_QP, payload=900)
    uncut = [_one(nic.inject(HOST, write), NET).meta["class_of_service"] for _ in range(4)]
    assert uncut == [Q_ROCE] * 4                                  # no CNP yet: line rate
    _cnp_from_net(nic, 1)
    assert nic.register_read("NicMain.rate.rate", SLOT) == 50     # max_rate 100 halved
    _cnp_from_net(nic, 1)
    assert nic.register_read("NicMain.rate.rate", SLOT) == 25
    paced = [_one(nic.inject(HOST, write), NET).meta["class_of_service"] for _ in range(4)]
    assert paced[:2] == [Q_ROCE, Q_ROCE] and paced[2:] == [Q_PACED, Q_PACED]  # 2000-byte burst
    for _ in range(40):                                           # no more CNPs: recovery
        nic.clock.advance(150)
        nic.inject(HOST, write)
    assert nic.register_read("NicMain.rate.rate", SLOT) == 0      # back to line rate


def test_tx_class_meter_red_is_dropped_and_counted(nic: Nic) -> None:
    nic.meter_set_rates("class_meter", CLASS_APP, [(1e-6, 100), (1e-6, 100)])
    app = bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2", tos=10 << 2)
                / UDP(sport=1, dport=5000) / (b"a" * 20))
    assert len(nic.inject(HOST, app)) == 1
    assert nic.inject(HOST, app) == []
    assert nic.counter_read("nic_drops", 1)[0] == 1


# --- receive -------------------------------------------------------------------------------

def test_rx_cnp_is_consumed_and_counted_per_qp(nic: Nic) -> None:
    assert _cnp_from_net(nic, 0) == []
    assert nic.counter_read("cnp_received", SLOT)[0] == 1
    assert nic.counter_read("nic_drops", 2)[0] == 1


def _scapy_icrc(cnp: bytes) -> int:
    """The ICRC scapy's RoCE layer computes for the frame (IBTA A17.8)."""
    pkt = Ether(cnp)
    pkt[BTH].icrc = None
    return Ether(bytes(pkt))[BTH].icrc


def test_rx_receiver_cnp_for_ce_marked_data_at_most_every_50us(nic: Nic) -> None:
    data = _roce(RC_WRITE_ONLY, LOCAL_QP, payload=500, src="10.0.0.2", dst="10.0.0.1",
                 sport=EV_BASE + 3, ecn=3)
    outs = nic.inject(NET, data)
    assert _one(outs, HOST).data == data                    # the data still reaches the host
    cnp = _one(outs, NET)
    pkt = Ether(cnp.data)
    assert len(cnp.data) == 74 and cnp.meta["class_of_service"] == Q_URGENT
    assert (pkt[IP].src, pkt[IP].dst, pkt[IP].len) == ("10.0.0.1", "10.0.0.2", 60)
    assert (pkt.src, pkt.dst) == ("02:00:00:00:00:02", "02:00:00:00:00:01")
    assert (pkt[UDP].sport, pkt[UDP].dport, pkt[UDP].len) == (EV_BASE + 3, 4791, 40)
    opcode, _, _, qp, _ = struct.unpack("!BBHII", cnp.data[42:54])
    assert (opcode, qp & 0xFFFFFF, cnp.data[46] & 0x40) == (CNP, PEER_QP, 0x40)   # BECN
    assert Ether(cnp.data)[BTH].icrc == _scapy_icrc(cnp.data)
    assert _checksum_ok(pkt)
    nic.clock.advance(10)                                    # 10 us later: held back
    assert [o.port for o in nic.inject(NET, data)] == [HOST]
    nic.clock.advance(45)                                    # 55 us after the first
    assert sorted(o.port for o in nic.inject(NET, data)) == [HOST, NET]
    assert nic.counter_read("cnp_decisions", 0)[0] == 2
    assert nic.counter_read("cnp_decisions", 1)[0] == 1


def test_rx_no_cnp_without_ce_or_for_unknown_qps(nic: Nic) -> None:
    plain = _roce(RC_WRITE_ONLY, LOCAL_QP, src="10.0.0.2", dst="10.0.0.1", ecn=2)
    unknown = _roce(RC_WRITE_ONLY, 0x999, src="10.0.0.2", dst="10.0.0.1", ecn=3)
    assert [o.port for o in nic.inject(NET, plain)] == [HOST]
    assert [o.port for o in nic.inject(NET, unknown)] == [HOST]


def test_rx_naks_and_trimmed_packets_take_the_fast_path(nic: Nic) -> None:
    nak = _roce(RC_ACK, LOCAL_QP, payload=0, src="10.0.0.2", dst="10.0.0.1",
                extra=struct.pack("!I", 0x60 << 24 | 7))
    ack = _roce(RC_ACK, LOCAL_QP, payload=0, src="10.0.0.2", dst="10.0.0.1",
                extra=struct.pack("!I", 7))
    trimmed = _roce(RC_WRITE_ONLY, LOCAL_QP, payload=0, src="10.0.0.2", dst="10.0.0.1",
                    dscp=TRIM_DSCP)
    assert _one(nic.inject(NET, nak), HOST).meta["class_of_service"] == Q_URGENT
    assert _one(nic.inject(NET, trimmed), HOST).meta["class_of_service"] == Q_URGENT
    assert _one(nic.inject(NET, ack), HOST).meta["class_of_service"] == 0
    assert nic.counter_read("fast_path_packets", 0)[0] == 2
    assert len(nic.table_entries("flows")) == 1            # only the plain ACK was learned


def test_rx_parser_error_is_dropped_and_counted(nic: Nic) -> None:
    bad = bytearray(_roce(RC_WRITE_ONLY, LOCAL_QP, src="10.0.0.2", dst="10.0.0.1"))
    bad[14] = 0x46                                          # IHL 6: options not parsed
    assert nic.inject(NET, bytes(bad)) == []
    assert nic.counter_read("nic_drops", 0)[0] == 1


# --- flows and counters -------------------------------------------------------------------

def test_flow_learning_with_allocate_flow_id_and_idle_expiry(nic: Nic) -> None:
    def udp(sport: int) -> bytes:
        return bytes(Ether() / IP(src="10.0.0.1", dst="10.0.0.2") / UDP(sport=sport, dport=9))
    for sport in (100, 100, 200, 100):
        nic.inject(HOST, udp(sport))
    entries = {e.keys[3].value: e for e in nic.table_entries("flows")}
    assert sorted(e.args[0] for e in entries.values()) == [1, 2]     # allocate_flow_id
    assert entries[100].packets == 2                                 # direct counter on hits
    nic.clock.advance(3_000)
    nic.inject(HOST, udp(100))                                       # restarts 100's timer
    nic.clock.advance(3_000)                                         # 200 idle for 6 ms
    nic.inject(HOST, udp(300))
    ports = sorted(e.keys[3].value for e in nic.table_entries("flows"))
    assert ports == [100, 300]
    assert max(e.args[0] for e in nic.table_entries("flows")) == 3


def test_counters_per_class_and_direction(nic: Nic) -> None:
    tx = _roce(RC_WRITE_ONLY, PEER_QP, payload=800)
    rx = _roce(RC_WRITE_ONLY, LOCAL_QP, payload=100, src="10.0.0.2", dst="10.0.0.1")
    nic.inject(HOST, tx)
    nic.inject(HOST, tx)
    nic.inject(NET, rx)
    assert nic.counter_read("class_packets", CLASS_ROCE)[0] == 2          # to the network
    assert nic.counter_read("class_packets", 16 + CLASS_ROCE)[0] == 1     # to the host


# --- the program against p4c ----------------------------------------------------------------

def test_p4test_accepts_the_nic_without_warnings_and_p4info_matches(reference_tools,
                                                                     tmp_path: Path) -> None:
    import subprocess

    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2
    from p4info_support import strip_doc

    from softswitch.frontend.compiler import compile_program
    from softswitch.p4info import generate

    out = tmp_path / "nic.p4info.txtpb"
    proc = subprocess.run([reference_tools.p4test, "--arch", "pna", str(NIC_P4),
                           "--p4runtime-files", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr
    expected = text_format.Parse(out.read_text(), p4info_pb2.P4Info())
    got = generate(compile_program(NIC_P4))
    strip_doc(expected)
    strip_doc(got)
    assert got == expected
