"""Taking the replication engine apart again: multicast nodes and groups, clone
sessions (BMv2's ``mc_node_dissociate``/``mc_node_destroy``/``mc_mgrp_destroy``/
``mirroring_delete``), and the entry idle times P4Runtime idle timeouts read."""

from __future__ import annotations

import pytest
from programs import switch_of_source, v1model_program

from softswitch.core.control import KeyMatch
from softswitch.diagnostics import P4Error
from softswitch.v1model.fast_switch import load_switch
from softswitch.v1model.switch import Switch

PROGRAM = v1model_program(
    types="header h_t { bit<8> op; bit<8> arg; }", headers="h_t h;", meta="bit<8> x;",
    extract=["h.h"],
    ingress="""
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t { key = { h.h.arg : exact; } actions = { fwd; NoAction; } }
    apply {
        if (h.h.op == 1) { sm.mcast_grp = (bit<16>) h.h.arg; }
        else if (h.h.op == 2) { clone(CloneType.I2E, (bit<32>) h.h.arg); sm.egress_spec = 9; }
        else { t.apply(); }
    }
""",
    emit=["h.h"])


@pytest.fixture
def sw(tmp_path) -> Switch:
    return switch_of_source(tmp_path, PROGRAM, "repl.p4")


def ports(sw: Switch, op: int, arg: int) -> list[int]:
    return sorted(o.port for o in sw.inject(0, bytes([op, arg])))


def test_multicast_dissociate_destroy(sw):
    sw.mc_mgrp_create(5)
    a = sw.mc_node_create(1, [1, 2])
    b = sw.mc_node_create(2, [3])
    sw.mc_node_associate(5, a)
    sw.mc_node_associate(5, b)
    assert ports(sw, 1, 5) == [1, 2, 3]
    sw.mc_node_dissociate(5, a)
    assert ports(sw, 1, 5) == [3]
    with pytest.raises(P4Error, match="not in group"):
        sw.mc_node_dissociate(5, a)
    sw.mc_node_associate(5, a)                 # a dissociated node can come back
    assert ports(sw, 1, 5) == [1, 2, 3]
    sw.mc_node_destroy(b)                      # destroying leaves the group too
    assert ports(sw, 1, 5) == [1, 2]
    with pytest.raises(P4Error, match="no multicast node"):
        sw.mc_node_destroy(b)
    sw.mc_mgrp_destroy(5)
    assert ports(sw, 1, 5) == []
    with pytest.raises(P4Error, match="no multicast group"):
        sw.mc_mgrp_destroy(5)
    with pytest.raises(P4Error, match="no multicast group"):
        sw.mc_node_dissociate(5, a)
    sw.mc_mgrp_create(5)                       # the id is free again, the node survived
    sw.mc_node_associate(5, a)
    assert ports(sw, 1, 5) == [1, 2]
    with pytest.raises(P4Error, match="already in group"):
        sw.mc_node_associate(5, a)


def test_mirroring_delete(sw):
    sw.mirroring_add(7, 4)
    assert ports(sw, 2, 7) == [4, 9]
    sw.mirroring_delete(7)
    assert ports(sw, 2, 7) == [9]              # an unknown session clones nothing
    with pytest.raises(P4Error, match="no clone session"):
        sw.mirroring_delete(7)
    sw.mc_mgrp_create(100)
    sw.mc_node_associate(100, sw.mc_node_create(0, [5, 6]))
    sw.mirroring_add_mc(7, 100, class_of_service=3)
    assert ports(sw, 2, 7) == [5, 6, 9]
    sw.mirroring_delete(7)
    assert 7 not in sw.mirror_cos
    assert ports(sw, 2, 7) == [9]


def test_entry_idle_us_follows_hits(sw):
    sw.clock.freeze(1_000)
    h = sw.table_add("t", [KeyMatch("h.h.arg", "exact", 3)], "fwd", [2])
    miss = sw.table_add("t", [KeyMatch("h.h.arg", "exact", 4)], "fwd", [2])
    sw.clock.advance(250)
    assert sw.entry_idle_us("t", h) == 250
    assert ports(sw, 0, 3) == [2]              # a hit resets the idle time
    assert sw.entry_idle_us("t", h) == 0
    sw.clock.advance(40)
    assert sw.entry_idle_us("t", h) == 40
    assert sw.entry_idle_us("t", miss) == 290  # never hit: time since the insert
    with pytest.raises(P4Error, match="no entry with handle"):
        sw.entry_idle_us("t", 99)


ERROR_KEY_PROGRAM = v1model_program(
    types="header h_t { bit<8> op; bit<8> res; }", headers="h_t h;", meta="error err;",
    extract=["h.h"],
    ingress="""
    action set(bit<8> v) { h.h.res = v; }
    table by_error {
        key = { m.err : exact; }
        actions = { set; }
        default_action = set(0);
        const entries = { error.PacketTooShort : set(7); }
    }
    action mark(bit<8> v) { h.h.op = v; }
    table dyn {
        key = { m.err : exact; }
        actions = { mark; NoAction; }
        default_action = NoAction();
    }
    apply {
        m.err = h.h.op == 1 ? error.PacketTooShort : error.HeaderTooShort;
        by_error.apply();
        dyn.apply();
        sm.egress_spec = 1;
    }
""",
    emit=["h.h"])


def test_error_keys_are_bmv2_wide(tmp_path):
    """``error`` keys are 32 bits wide in the target, as in BMv2 (so any error code
    can be matched), while P4Info says bitwidth 0 for them, as p4c does."""
    from softswitch import p4info
    from softswitch.frontend.compiler import compile_program

    p = tmp_path / "errkey.p4"
    p.write_text(ERROR_KEY_PROGRAM)
    checked = compile_program(str(p))
    sw = load_switch(checked)
    (key,) = sw.table_info("by_error").keys
    assert key.width == 32
    (out,) = sw.inject(0, bytes([1, 0]))
    assert out.data == bytes([1, 7])                  # the const entry (code > 0)
    codes = {name: code for code, name in enumerate(
        ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort"])}
    assert codes["PacketTooShort"] == 1
    sw.table_add("dyn", [KeyMatch("m.err", "exact", codes["HeaderTooShort"])], "mark", [9])
    (out,) = sw.inject(0, bytes([2, 0]))
    assert out.data == bytes([9, 0])
    (table,) = [t for t in p4info.generate(checked).tables
                if t.preamble.name.endswith("by_error")]
    assert table.match_fields[0].bitwidth == 0
