"""The lab's queueing substrate against ns-3 (issue 14, validation): the same Poisson
arrivals through ns-3 (PointToPoint + RedQueueDisc with ECN / PrioQueueDisc) and through
softswitch's traffic-manager scheduler give P50/P99 queueing delays within 10%."""

import pytest

from taillab.ns3_check import cross_check

PKT_US = 1000 * 8 / 10e9 * 1e6


@pytest.mark.parametrize("kind", ["red", "priority"])
def test_ns3_cross_check(kind):
    r = cross_check(kind, packets=8000, seed=3)
    assert set(r.ns3) == set(r.lab)
    assert r.worst_ratio_error(PKT_US / 10) <= 0.10, (r.ns3, r.lab)
    if kind == "red":
        assert r.lab_marks > 0 and r.ns3_marks > 0        # RED really marked, in both
    else:
        assert r.lab[0][1] < r.lab[1][1] / 2              # priority really applied (P99)
