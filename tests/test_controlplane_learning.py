"""Fast CNP QP learning against a live softswitch P4Runtime server running tailcc.p4:
an unresolved flow's congested packet makes the switch digest (src, dst, dst QP),
``tailcc apply --every`` (controller mode, ``fast_cnp.learning``) acks it and installs
the ``cnp_flow`` entry it can prove — the mirror of a ``qp_map`` flow, or both ends of a
connection whose two directions were both unresolved — after which the switch answers
the next congested packet with a CNP to the sender's QP."""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from intents import forwarding
from polling import wait_until
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from controlplane.cli import main
from controlplane.p4rt import Client, EntityBuilder, P4InfoIndex
from controlplane.p4rt import values as v
from controlplane.p4rt.client import update

ROOT = Path(__file__).resolve().parents[1]
ROUTER = "00:aa:00:00:00:01"
INTENT = """base: default
switches:
  - name: leaf
    address: {address}
    device_id: 1
    election_id: 10
    router_mac: "{router}"
    ports: [1, 2]
""" + forwarding([("h1", 1, "00:00:00:00:01:01"), ("h2", 2, "00:00:00:00:02:02")],
               [("10.0.1.0/24", "h1"), ("10.0.2.0/24", "h2")]) + """fast_cnp:
  enabled: true
  learning: true
  queue_threshold: 5
  min_interval_us: 1
  qp_map:
    - {{src: 10.0.2.2, dst: 10.0.1.1, dst_qp: 0x17, sender_qp: 0x22}}
"""
TP_PP_QUEUE = 4     # the default profile's DSCP 32 class, lossless, so Fast CNP covers it


def _roce(src: str, dst: str, qp: int) -> bytes:
    return bytes(Ether(src="00:00:00:00:09:09", dst=ROUTER)
                 / IP(src=src, dst=dst, tos=32 << 2 | 0b10, ttl=64)
                 / UDP(sport=49152, dport=4791, chksum=0)
                 / BTH(opcode=0x0a, dqpn=qp, psn=1) / Raw(b"\x5a" * 64))


@pytest.fixture()
def lab(tmp_path: Path) -> Iterator[tuple]:
    from softswitch.daemon.device import Device
    from softswitch.daemon.rpc.server import serve

    device = Device(device_id=1, cpu_port=255)
    sent: list[tuple[int, bytes]] = []
    device.transmit = lambda port, data: sent.append((port, data))
    srv, port = serve(device, "127.0.0.1:0")
    address = f"127.0.0.1:{port}"
    intent = tmp_path / "lab.yaml"
    intent.write_text(INTENT.format(address=address, router=ROUTER))
    out: list[int] = []
    controller = threading.Thread(target=lambda: out.append(main(
        ["apply", str(intent), "--pipeline", str(ROOT / "p4src/tailcc.p4"), "--every",
         "0.25", "--rounds", "40", "-q"])))
    controller.start()
    try:
        yield device, sent, address
    finally:
        controller.join(timeout=120)
        srv.stop(0).wait()
    assert out == [0]


def _flows(address: str) -> dict[tuple[str, str, int], int]:
    c = Client(address, 1, election_id=1)
    c.connect(require_primary=False)                 # a backup: reading only
    try:
        return _read_flows(c)
    finally:
        c.close()


def _read_flows(c: Client) -> dict[tuple[str, str, int], int]:
    p4info = c.get_p4info()
    if p4info is None:
        return {}
    index = P4InfoIndex(p4info)
    b = EntityBuilder(index)
    table = index.table("cnp_flow")
    names = {mf.id: mf.name for mf in table.match_fields}
    flows = {}
    for e in c.read([b.table_wildcard("cnp_flow")]):
        te = e.table_entry
        f = {names[fm.field_id]: v.decode(fm.exact.value) for fm in te.match}
        key = (str(ipaddress.IPv4Address(f["ipv4_src"])),
               str(ipaddress.IPv4Address(f["ipv4_dst"])), f["dst_qp"])
        flows[key] = v.decode(te.action.action.params[0].value)
    return flows


def _wait(pred, seconds: float = 30) -> bool:
    return wait_until(pred, seconds, step=0.1)


def _congest(address: str, port: int) -> None:
    """Publish a deep queue at (port, tp_pp queue) as egress would under congestion; a
    short-lived primary (election id above the controller's) writes the register."""
    with Client(address, 1, election_id=20) as c:
        b = EntityBuilder(P4InfoIndex(c.get_p4info()))
        c.write([update("MODIFY", b.register_write("queue_depth", port * 8 + TP_PP_QUEUE,
                                                   20))])
    time.sleep(0.3)          # the controller is primary again before the digest is sent


def _cnps(sent: list[tuple[int, bytes]], port: int) -> list[int]:
    out = []
    for p, data in sent:
        pkt = Ether(data)
        if p == port and pkt.haslayer(BTH) and pkt[BTH].opcode == 0x81:
            out.append(pkt[BTH].dqpn)
    return out


def test_unresolved_flows_are_learned_and_then_get_cnps(lab, capsys) -> None:
    device, sent, address = lab
    assert _wait(lambda: ("10.0.2.2", "10.0.1.1", 0x17) in _flows(address)), \
        "the controller never applied the intent"

    # 1. A (10.0.1.1, QP 0x17) -> B (10.0.2.2, QP 0x22): the intent maps only B -> A.
    _congest(address, 2)
    device.receive(1, _roce("10.0.1.1", "10.0.2.2", 0x22))
    assert _cnps(sent, 1) == [], "no CNP before the sender QP is known"
    assert _wait(lambda: _flows(address).get(("10.0.1.1", "10.0.2.2", 0x22)) == 0x17), \
        _flows(address)
    sent.clear()
    _congest(address, 2)
    device.receive(1, _roce("10.0.1.1", "10.0.2.2", 0x22))
    assert _cnps(sent, 1) == [0x17], "the learned flow gets a CNP to the sender's QP"

    # 2. A connection nobody registered: both directions congested and unresolved.
    _congest(address, 2)
    device.receive(1, _roce("10.0.1.3", "10.0.2.4", 0x300))
    time.sleep(1.0)
    assert ("10.0.1.3", "10.0.2.4", 0x300) not in _flows(address), \
        "one direction alone proves nothing"
    _congest(address, 1)
    device.receive(2, _roce("10.0.2.4", "10.0.1.3", 0x200))
    assert _wait(lambda: _flows(address).get(("10.0.1.3", "10.0.2.4", 0x300)) == 0x200)
    assert _flows(address).get(("10.0.2.4", "10.0.1.3", 0x200)) == 0x300
    sent.clear()
    _congest(address, 2)
    device.receive(1, _roce("10.0.1.3", "10.0.2.4", 0x300))
    assert _cnps(sent, 1) == [0x200]

    # 3. Two unresolved QPs from one host to another and one back: which is its peer
    # cannot be proved, so nothing is installed and the operator is told.
    for qp in (0x400, 0x401):
        _congest(address, 2)
        device.receive(1, _roce("10.0.1.5", "10.0.2.6", qp))
    _congest(address, 1)
    device.receive(2, _roce("10.0.2.6", "10.0.1.5", 0x500))
    assert _wait(lambda: "ambiguous" in capsys.readouterr().out, 10)

    # Later rounds keep the learned entries (cnp_flow is additive while learning).
    time.sleep(1.0)
    assert len(_flows(address)) == 4
