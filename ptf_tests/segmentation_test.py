"""Micro-segmentation: host and subnet rules per tenant, tenant default, deny counters."""

from __future__ import annotations

from tailcc_base import TailccTest
from tailcc_packets import NH2_MAC, ROUTER_MAC, udp

DROP_SEGMENT_DENY = 3


class AclAllowDenyTest(TailccTest):
    """Tenant 5: A1 -> A2 allowed by the /24 rule, A1 -> A5 denied by the higher-priority
    /32 rule, anything else denied by the tenant default; tenant 6 (no rules, no
    default) is open. Denies are counted per tenant and as ingress drops."""

    def runTest(self) -> None:
        self.router(ROUTER_MAC)
        self.insert("port_vrf", {"ingress_port": 1}, "set_port_vrf", {"vrf": 5})
        self.insert("port_vrf", {"ingress_port": 3}, "set_port_vrf", {"vrf": 6})
        for vrf in (5, 6):
            self.route("10.1.0.0/24", 2, ROUTER_MAC, NH2_MAC, vrf=vrf)
        self.insert("segment_acl", {"vrf": 5, "ipv4_src": "10.1.0.1&&&255.255.255.255",
                                    "ipv4_dst": "10.1.0.5&&&255.255.255.255"},
                    "deny", priority=100)
        self.insert("segment_acl", {"vrf": 5, "ipv4_src": "10.1.0.0&&&255.255.255.0",
                                    "ipv4_dst": "10.1.0.0&&&255.255.255.0"},
                    "allow", priority=50)
        self.insert("segment_default", {"vrf": 5}, "deny")

        def out(dst: str, src: str = "10.1.0.1"):
            return udp(dst, 5000, src=src, ttl=63, smac=ROUTER_MAC, dmac=NH2_MAC)

        self.send(1, udp("10.1.0.2", 5000, src="10.1.0.1"))
        self.expect(out("10.1.0.2"), 2)
        self.send(1, udp("10.1.0.5", 5000, src="10.1.0.1"))     # A1 -> A5: /32 deny
        self.send(1, udp("10.1.0.2", 5000, src="10.1.9.9"))     # no rule: tenant deny
        self.expect_nothing()
        self.send(3, udp("10.1.0.5", 5000, src="10.1.0.1"))     # tenant 6: open
        self.expect(out("10.1.0.5"), 2)
        self.expect_nothing()
        self.assertEqual(self.wait_counter("segment_deny_counter", 5, 2), 2)
        self.assertEqual(self.packets("segment_deny_counter", 6), 0)
        self.assertEqual(self.packets("ingress_drop_counter", DROP_SEGMENT_DENY), 2)


class AclRuleRemovalTest(TailccTest):
    """Deleting the /32 deny opens the pair again (the /24 allow now matches)."""

    def runTest(self) -> None:
        from controlplane.p4rt.client import update

        self.router(ROUTER_MAC)
        self.insert("port_vrf", {"ingress_port": 1}, "set_port_vrf", {"vrf": 5})
        self.route("10.1.0.0/24", 2, ROUTER_MAC, NH2_MAC, vrf=5)
        deny = self.b.table_entry("segment_acl", {
            "vrf": 5, "ipv4_src": "10.1.0.1&&&255.255.255.255",
            "ipv4_dst": "10.1.0.5&&&255.255.255.255"}, "deny", priority=100)
        self.client.write([update("INSERT", deny)])
        self.send(1, udp("10.1.0.5", 5000, src="10.1.0.1"))
        self.expect_nothing()
        self.client.write([update("DELETE", deny)])
        self.send(1, udp("10.1.0.5", 5000, src="10.1.0.1"))
        self.expect(udp("10.1.0.5", 5000, src="10.1.0.1", ttl=63, smac=ROUTER_MAC,
                        dmac=NH2_MAC), 2)
        self.assertEqual(self.packets("segment_deny_counter", 5), 1)
