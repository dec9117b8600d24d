"""Elaboration: instance tree and control-plane names as p4c's P4Info spells them."""

from __future__ import annotations

import pytest
from programs import P4INFO_NAMES, v1model_program

from softswitch.diagnostics import P4Error
from softswitch.frontend.compiler import check_program
from softswitch.frontend.elaborate import Elaboration, elaborate
from softswitch.frontend.parser import parse_text

HEADERS = "header h_t { bit<8> a; bit<16> b; }"


def elab(declarations: str, main: bool = True) -> Elaboration:
    """The elaboration of a program whose ingress ``Ing`` ``declarations`` declare."""
    src = v1model_program(types=HEADERS, headers="h_t h; h_t[2] s;", meta="bit<32> m;",
                          declarations=declarations, extract=["hdr.h"], ingress=None,
                          emit=["hdr.h"], package=main, names=P4INFO_NAMES)
    return elaborate(check_program(parse_text(src, "t.p4")))


def names(objs: list) -> list[str | None]:
    return [o.name for o in objs]


def test_package_arguments_bind_in_order() -> None:
    e = elab("control Ing(inout H hdr, inout M meta, inout standard_metadata_t sm) "
             "{ apply { } }\n")
    assert [b.decl.name for b in e.top_blocks] == ["P", "VC", "Ing", "E", "CC", "D"]
    assert e.top_block("ig") is not None and e.top_block("ig").prefix == "Ing"


def test_local_names_are_qualified_and_at_name_renames() -> None:
    e = elab("""
control Ing(inout H hdr, inout M meta, inout standard_metadata_t sm) {
    action a1(bit<8> v) { hdr.h.a = v; }
    @name("renamed") action a2() { }
    @name(".absolute") action a3() { }
    @hidden action a4() { }
    action unused() { }
    table t {
        key = { hdr.h.a : exact; hdr.h.isValid() : exact; hdr.s[1].b : ternary @name("bee"); }
        actions = { a1; a2; a3; a4; }
    }
    apply { t.apply(); }
}
""")
    assert names(e.tables) == ["Ing.t"]
    # top-level actions first (NoAction is added as the implicit default), then locals;
    # unused actions are gone, hidden ones have no control-plane name
    assert names(e.actions) == ["NoAction", "Ing.a1", "Ing.renamed", "absolute", None]
    assert e.actions[-1].qualified == "Ing.a4"
    t = e.table("Ing.t")
    assert [r.action.name for r in t.action_refs[:4]] == [
        "Ing.a1", "Ing.renamed", "absolute", None]
    assert [k.name for k in t.keys] == ["hdr.h.a", "hdr.h.$valid$", "bee"]
    assert [k.width for k in t.keys] == [8, 1, 16]
    implicit = t.action_refs[-1]
    assert implicit.implicit and implicit.action.name == "NoAction" and implicit.has("defaultonly")
    assert t.default_action is not None and t.default_action.implicit


def test_nested_instances_and_direct_calls_extend_the_prefix() -> None:
    e = elab("""
control Inner(inout H hdr)(bit<32> n) {
    counter(n, CounterType.packets) cnt;
    action set() { hdr.h.a = 1; }
    table it { key = { hdr.h.b : lpm; } actions = { set; } }
    apply { it.apply(); cnt.count(0); }
}
control Direct(inout H hdr) {
    table dt { actions = { NoAction; } }
    apply { dt.apply(); }
}
control Ing(inout H hdr, inout M meta, inout standard_metadata_t sm) {
    Inner(32w64) inner;
    @name("other") Inner(32w8) second;
    apply { inner.apply(hdr); second.apply(hdr); Direct.apply(hdr); }
}
""")
    assert names(e.tables) == ["Ing.inner.it", "Ing.other.it", "Ing.Direct.dt"]
    assert "Ing.inner.set" in names(e.actions) and "Ing.other.set" in names(e.actions)
    counters = {x.name: x.args["size"] for x in e.externs if x.type_name == "counter"}
    assert counters == {"Ing.inner.cnt": 64, "Ing.other.cnt": 8}


def test_unused_tables_and_sub_instances_are_not_control_plane_objects() -> None:
    e = elab("""
control Inner(inout H hdr) {
    table it { actions = { NoAction; } }
    register<bit<8>>(4) r;
    apply { it.apply(); }
}
control Ing(inout H hdr, inout M meta, inout standard_metadata_t sm) {
    Inner() never_applied;
    table unused_t { actions = { NoAction; } }
    table used_t { actions = { NoAction; } }
    apply { if (false) { unused_t.apply(); } used_t.apply(); }
}
""")
    assert names(e.tables) == ["Ing.used_t"]
    assert names(e.externs) == []


def test_table_property_externs_take_the_property_name() -> None:
    e = elab("""
control Ing(inout H hdr, inout M meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.bytes) dc;
    table t {
        key = { meta.m : selector; }
        actions = { NoAction; }
        @name("sel") implementation = action_selector(HashAlgorithm.crc16, 32w128, 32w16);
        counters = dc;
    }
    apply { t.apply(); }
}
""")
    t = e.table("Ing.t")
    assert t.implementation is not None and t.implementation.name == "sel"
    assert t.implementation.args["size"] == 128
    assert t.counters is not None and t.counters.name == "Ing.dc"


def test_anonymous_property_extern_has_no_name() -> None:
    e = elab("""
control Ing(inout H hdr, inout M meta, inout standard_metadata_t sm) {
    table t { actions = { NoAction; } implementation = action_profile(32w4); }
    apply { t.apply(); }
}
""")
    impl = e.table("Ing.t").implementation
    assert impl is not None and impl.anonymous and impl.name is None


def test_complex_key_without_name_is_an_error() -> None:
    with pytest.raises(P4Error, match="requires a @name"):
        elab("""
control Ing(inout H hdr, inout M meta, inout standard_metadata_t sm) {
    table t { key = { hdr.h.a + 1 : exact; } actions = { NoAction; } }
    apply { t.apply(); }
}
""")


def test_no_main_means_no_instances() -> None:
    e = elab("control Ing(inout H hdr, inout M meta, inout standard_metadata_t sm) "
             "{ apply { } }\n", main=False)
    assert e.main is None and e.tables == [] and e.top_blocks == []


def test_extern_instances_passed_to_sub_controls_keep_their_identity() -> None:
    e = elab("""
counter(32w4, CounterType.packets) global_c;
control Inner(inout H hdr)(counter c, direct_counter d) {
    table it { actions = { NoAction; } counters = d; }
    apply { it.apply(); c.count(1); }
}
control Ing(inout H hdr, inout M meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.bytes) local_d;
    Inner(global_c, local_d) inner;
    apply { inner.apply(hdr); }
}
""")
    inner = next(b for b in e.blocks if b.prefix == "Ing.inner")
    assert inner.args["c"] is e.extern("global_c")
    assert e.table("Ing.inner.it").counters is e.extern("Ing.local_d")


def test_instance_of_maps_declarations_in_a_block_to_objects() -> None:
    e = elab("""
control Inner(inout H hdr) {
    table it { actions = { NoAction; } }
    apply { it.apply(); }
}
control Ing(inout H hdr, inout M meta, inout standard_metadata_t sm) {
    Inner() a;
    Inner() b;
    apply { a.apply(hdr); b.apply(hdr); }
}
""")
    blocks = {blk.prefix: blk for blk in e.blocks}
    it_decl = blocks["Ing.a"].decl.locals[0]
    assert e.instance_of(it_decl, blocks["Ing.a"]).name == "Ing.a.it"
    assert e.instance_of(it_decl, blocks["Ing.b"]).name == "Ing.b.it"
    no_action = e.action("NoAction")
    assert e.instance_of(no_action.decl, None) is no_action


def test_direct_call_is_named_after_the_type_not_its_name_annotation() -> None:
    e = elab("""
@name("renamed_type") control Direct(inout H hdr) {
    table dt { actions = { NoAction; } }
    apply { dt.apply(); }
}
control Ing(inout H hdr, inout M meta, inout standard_metadata_t sm) {
    apply { Direct.apply(hdr); }
}
""")
    assert names(e.tables) == ["Ing.Direct.dt"]
