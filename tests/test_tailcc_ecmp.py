"""tailcc's ECMP over P4Runtime on softswitch: group -> member count (``ecmp_group``),
(group, member index) -> next hop (``ecmp_member``), member index = the flow hash mod the
count, exactly as BMv2 computes it (``hash(..., HashAlgorithm.identity, 0,
{meta.flow_hash}, count)``: the 32-bit CRC-32 of the outer 5-tuple, mod count). One flow
stays on one member; withdrawing a member (count 4 -> 3) moves flows as the formula says;
a member listed twice gets twice the flows."""

from __future__ import annotations

from pathlib import Path

from p4.v1 import p4runtime_pb2
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from test_p4runtime_entities import Rig, upd

from controlplane.p4rt import EntityBuilder, P4InfoIndex
from softswitch.core import hashes
from softswitch.p4runtime import pipeline

Update = p4runtime_pb2.Update
ROOT = Path(__file__).resolve().parent.parent
TAILCC = ROOT / "p4src" / "tailcc.p4"
ROUTER_MAC = "00:00:00:00:aa:01"
SPORTS = range(49152, 49152 + 48)


def flow_hash(sport: int, dst: str) -> int:
    """lookup.p4: CRC-32 over (src, dst, proto, sport, dport) of the outer header."""
    five = (bytes([10, 0, 1, 1]) + bytes(int(x) for x in dst.split(".")) + bytes([17])
            + sport.to_bytes(2, "big") + (4791).to_bytes(2, "big"))
    return hashes.crc32(five)


def test_tailcc_ecmp_spreads_flows_as_bmv2():
    compiled = pipeline.compile_file(str(TAILCC), {})
    rig = Rig(compiled.p4info)
    b = EntityBuilder(P4InfoIndex(compiled.p4info))
    try:
        rig.set_pipeline(source=pipeline.make_artifact(str(TAILCC)).to_bytes().decode(),
                         p4info=compiled.p4info)

        def entity(table: str, match: dict, action: str, params: dict):
            return b.table_entity(table, match=match, action=action, params=params)

        def write(kind: int, *entities) -> None:
            rig.write(*[upd(kind, table_entry=e.table_entry) for e in entities])

        def members(ports: list[int]) -> list:
            return [entity("ecmp_member", {"group_id": 7, "member": i}, "set_nexthop",
                           {"port": p, "smac": 0xAA01, "dmac": 0x0100 + p})
                    for i, p in enumerate(ports)]

        write(Update.INSERT,
              entity("my_station", {"eth_dst": ROUTER_MAC}, "set_router_mac", {}),
              entity("routing_v4", {"vrf": 0, "ipv4_dst": "10.0.0.0/8"}, "set_ecmp_group",
                     {"group_id": 7}),
              entity("ecmp_group", {"group_id": 7}, "set_ecmp_members", {"count": 4}),
              *members([1, 2, 3, 4]))

        def route_flow(sport: int, dst: str = "10.1.2.3") -> int:
            pkt = (Ether(dst=ROUTER_MAC, src="00:00:00:00:01:01")
                   / IP(src="10.0.1.1", dst=dst, ttl=64) / UDP(sport=sport, dport=4791)
                   / (b"\x11" * 40))
            rig.sent.clear()
            rig.device.receive(9, bytes(pkt))
            ((port, data),) = rig.sent
            assert data[:6] == (0x0100 + port).to_bytes(6, "big")   # that member's MAC
            return port

        chosen = [route_flow(s) for s in SPORTS]
        assert chosen == [[1, 2, 3, 4][flow_hash(s, "10.1.2.3") % 4] for s in SPORTS]
        assert set(chosen) == {1, 2, 3, 4}
        assert [route_flow(s) for s in SPORTS] == chosen          # a flow stays put

        # next hop 4 withdrawn: count 3, members 0..2 unchanged
        write(Update.MODIFY, entity("ecmp_group", {"group_id": 7}, "set_ecmp_members",
                                    {"count": 3}))
        write(Update.DELETE, members([1, 2, 3, 4])[3])
        after = [route_flow(s) for s in SPORTS]
        assert after == [[1, 2, 3][flow_hash(s, "10.1.2.3") % 3] for s in SPORTS]

        # weighted: next hop 1 listed twice among 4 members takes half the flows
        write(Update.MODIFY, entity("ecmp_group", {"group_id": 7}, "set_ecmp_members",
                                    {"count": 4}))
        write(Update.INSERT, members([1, 2, 3, 1])[3])
        weighted = [route_flow(s) for s in SPORTS]
        assert weighted == [[1, 2, 3, 1][flow_hash(s, "10.1.2.3") % 4] for s in SPORTS]
    finally:
        rig.close()
