"""P4Runtime ids and aliases must match what p4c writes (values from p4c's P4Info)."""

import pytest

from softswitch.diagnostics import P4Error
from softswitch.p4info import ids


def test_jenkins_hash_gives_p4c_ids() -> None:
    # ids p4c assigns in its own test corpus
    assert (ids.ACTION << 24) | (ids.jenkins_one_at_a_time("NoAction") & 0xFFFFFF) == 21257015
    table = ids.SymbolTable()
    table.add(ids.TABLE, "IngressI.indirect")
    table.add(ids.REGISTER, "MyIngress.h.c1.r")
    table.assign_ids()
    assert table.id_of(ids.TABLE, "IngressI.indirect") == 46872340
    assert table.id_of(ids.REGISTER, "MyIngress.h.c1.r") == 385061251


def test_alias_is_shortest_unique_suffix_across_kinds() -> None:
    table = ids.SymbolTable()
    for kind, name in [(ids.ACTION, "ingressImpl.foo1"), (ids.ACTION, "foo1"),
                       (ids.ACTION, "ingressImpl.c1.bar"), (ids.ACTION, "ingressImpl.bar"),
                       (ids.TABLE, "ingressImpl.t1"), (ids.ACTION, "bar")]:
        table.add(kind, name)
    assert table.alias("ingressImpl.foo1") == "ingressImpl.foo1"
    assert table.alias("foo1") == "foo1"
    assert table.alias("ingressImpl.c1.bar") == "c1.bar"
    assert table.alias("ingressImpl.t1") == "t1"


def test_explicit_id_gets_prefix_and_hash_ids_avoid_it() -> None:
    table = ids.SymbolTable()
    table.add(ids.ACTION, "a", explicit_id=5)
    table.add(ids.ACTION, "b")
    table.assign_ids()
    assert table.id_of(ids.ACTION, "a") == (ids.ACTION << 24) | 5
    assert table.id_of(ids.ACTION, "b") >> 24 == ids.ACTION


def test_collision_probes_next_hash_value() -> None:
    table = ids.SymbolTable()
    h = ids.jenkins_one_at_a_time("x") & 0xFFFFFF
    table.add(ids.TABLE, "y", explicit_id=(ids.TABLE << 24) | h)
    table.add(ids.TABLE, "x")
    table.assign_ids()
    assert table.id_of(ids.TABLE, "x") == (ids.TABLE << 24) | ((h + 1) & 0xFFFFFF)


def test_wrong_prefix_and_duplicate_ids_are_user_errors() -> None:
    table = ids.SymbolTable()
    with pytest.raises(P4Error, match="wrong 8-bit prefix"):
        table.add(ids.TABLE, "t", explicit_id=(ids.ACTION << 24) | 1)
    table.add(ids.TABLE, "u", explicit_id=7)
    with pytest.raises(P4Error, match="multiple declarations"):
        table.add(ids.TABLE, "v", explicit_id=7)
