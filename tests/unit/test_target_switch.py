"""End-to-end behaviour of the v1model target on small programs (front end included)."""

from __future__ import annotations

import pytest
from programs import switch_of_source, v1model_program

from softswitch.core.control import KeyMatch
from softswitch.core.execution import SwitchAbort
from softswitch.diagnostics import P4Error
from softswitch.v1model.switch import Switch


def load(tmp_path, ingress: str, meta: str = "bit<8> x;", egress: str = "apply { }",
         declarations: str = "") -> Switch:
    """A switch running ``ingress`` (and ``egress``) over one header ``h_t h``."""
    src = v1model_program(types="header h_t { bit<8> a; bit<8> b; bit<16> c; }",
                          headers="h_t h;", meta=meta, declarations=declarations,
                          extract=["h.h"], ingress=ingress, egress=egress, emit=["h.h"])
    return switch_of_source(tmp_path, src)


def one(sw: Switch, data: bytes, port: int = 0) -> tuple[int, bytes]:
    (out,) = sw.inject(port, data)
    return out.port, out.data


def test_arithmetic_semantics(tmp_path):
    sw = load(tmp_path, """
    apply {
        int<8> s = (int<8>)h.h.a;
        h.h.b = (bit<8>)(s >> 1);            // arithmetic shift of a negative value
        h.h.c = h.h.a ++ (h.h.a |+| 8w200);  // concatenation and saturation
        h.h.a = h.h.a + 8w3;                 // wraps modulo 2^8
        sm.egress_spec = 2;
    }
""")
    port, data = one(sw, bytes([0xFE, 0, 0, 0]) + b"pay")
    assert port == 2
    assert data == bytes([0x01, 0xFF, 0xFE, 0xFF]) + b"pay"


def test_slices_and_casts(tmp_path):
    sw = load(tmp_path, """
    apply {
        h.h.c[15:8] = h.h.a[3:0] ++ h.h.b[7:4];
        h.h.b = (bit<8>)(h.h.c[3:0] << 2);
        sm.egress_spec = 1;
    }
""")
    _, data = one(sw, bytes([0xAB, 0xCD, 0x12, 0x3F]))
    assert data == bytes([0xAB, 0x0C, 0xBC, 0x3F])  # bit<4> << 2 stays 4 bits wide


def test_table_exit_and_copy_out(tmp_path):
    sw = load(tmp_path, """
    action bump(inout bit<8> v) { v = v + 1; }
    action set_port(bit<9> p) { sm.egress_spec = p; bump(h.h.b); exit; }
    table t { key = { h.h.a: exact; } actions = { set_port; NoAction; } }
    apply {
        t.apply();
        h.h.b = 0xEE;   // skipped when set_port exits
        sm.egress_spec = 7;
    }
""")
    sw.table_add("t", [KeyMatch("h.h.a", "exact", 1)], "set_port", [4])
    assert one(sw, bytes([1, 5, 0, 0])) == (4, bytes([1, 6, 0, 0]))
    assert one(sw, bytes([2, 5, 0, 0])) == (7, bytes([2, 0xEE, 0, 0]))
    (entry,) = sw.table_entries("I.t")
    assert entry.action == "I.set_port" and entry.args == [4]


def test_parser_error_reaches_ingress(tmp_path):
    sw = load(tmp_path, """
    apply {
        if (sm.parser_error == error.PacketTooShort) { h.h.setValid(); h.h.a = 0xEE; }
        sm.egress_spec = 1;
    }
""")
    port, data = one(sw, b"\x01\x02")
    assert data == bytes([0xEE, 0, 0, 0]) + b"\x01\x02"


def test_multicast_replicates_with_rid(tmp_path):
    sw = load(tmp_path, "apply { sm.mcast_grp = 5; }", egress="""
    apply { h.h.b = (bit<8>)sm.egress_rid; h.h.c = (bit<16>)sm.egress_port; }
""")
    sw.mc_mgrp_create(5)
    sw.mc_node_associate(5, sw.mc_node_create(9, [3, 1]))
    outs = sw.inject(0, bytes(4))
    assert [(o.port, o.data) for o in outs] == [(1, bytes([0, 9, 0, 1])),
                                                (3, bytes([0, 9, 0, 3]))]


def test_clone_resubmit_recirculate(tmp_path):
    meta = "@field_list(1) bit<8> x; bit<8> y;"
    sw = load(tmp_path, """
    apply {
        sm.egress_spec = 1;
        if (sm.instance_type == 0 && h.h.a == 1) {
            m.x = 42; m.y = 7;
            resubmit_preserving_field_list(1);
        } else if (sm.instance_type == 6) {
            h.h.b = m.x; h.h.c = (bit<16>)m.y;   // y is not preserved: 0
        }
        if (h.h.a == 2) { clone(CloneType.I2E, 3); }
        if (h.h.a == 3 && sm.instance_type == 0) { m.x = 9; }
        if (sm.instance_type == 4) { h.h.b = m.x; }
    }
""", meta=meta, egress="""
    apply {
        if (sm.instance_type == 1) { h.h.c = 0xC1; }
        // BMv2 resets instance_type to 0 for unicast, so a recirculated copy is
        // recognised by its data.
        if (h.h.a == 3 && h.h.b == 0) { recirculate_preserving_field_list(1); }
    }
""")
    assert one(sw, bytes([1, 0, 0, 0])) == (1, bytes([1, 42, 0, 0]))
    sw.mirroring_add(3, 8)
    outs = sw.inject(0, bytes([2, 0, 0, 0]))
    assert sorted((o.port, o.data) for o in outs) == [(1, bytes([2, 0, 0, 0])),
                                                     (8, bytes([2, 0, 0, 0xC1]))]
    assert one(sw, bytes([3, 0, 0, 0])) == (1, bytes([3, 9, 0, 0]))


def test_drop_and_registers_counters(tmp_path):
    sw = load(tmp_path, """
    register<bit<16>>(4) r;
    counter(4, CounterType.packets_and_bytes) c;
    apply {
        bit<16> v;
        r.read(v, 1);
        r.write(1, v + h.h.c);
        c.count(2);
        if (h.h.a == 0) { mark_to_drop(sm); } else { sm.egress_spec = 1; }
    }
""")
    assert sw.inject(0, bytes([0, 0, 0, 5])) == []
    sw.inject(0, bytes([1, 0, 0, 6]) + b"xx")
    assert sw.register_read("r", 1) == 11
    assert sw.counter_read("I.c", 2) == (2, 10)
    sw.register_write("I.r", 1, 0xFFFF)
    sw.inject(0, bytes([1, 0, 0, 1]))
    assert sw.register_read("r", 1) == 0


FWD = """
    action fwd(bit<9> p) { sm.egress_spec = p; }"""


def const_table(name: str, key: str, actions: str, entries: str) -> str:
    """A table of one key field with constant entries, as P4 text."""
    return f"""
    table {name} {{
        key = {{ {key}; }}
        actions = {{ {actions}; }}
        const entries = {{ {entries} }}
    }}
"""


def test_const_entries_first_listed_wins(tmp_path):
    sw = load(tmp_path, FWD + const_table("t", "h.h.a: ternary", "fwd",
                                          "0x10 &&& 0xF0 : fwd(1); _ : fwd(2);")
              + "    apply { t.apply(); }\n")
    assert one(sw, bytes([0x15, 0, 0, 0]))[0] == 1
    assert one(sw, bytes([0x25, 0, 0, 0]))[0] == 2
    with pytest.raises(P4Error):
        sw.table_add("t", [KeyMatch("", "ternary", 1, mask=0xFF)], "fwd", [3], 5)


def test_checksum_and_hash(tmp_path):
    sw = load(tmp_path, """
    apply {
        hash(h.h.b, HashAlgorithm.crc16, 8w0, { h.h.a }, 8w100);
        update_checksum(true, { h.h.a, h.h.b }, h.h.c, HashAlgorithm.csum16);
        sm.egress_spec = 1;
    }
""")
    from softswitch.core import hashes
    _, data = one(sw, bytes([0x31, 0, 0, 0]))
    b = hashes.crc16(b"\x31") % 100
    assert data[1] == b
    assert int.from_bytes(data[2:4], "big") == hashes.csum16(bytes([0x31, b]))


def test_assert_failure_aborts_clearly(tmp_path):
    sw = load(tmp_path, "apply { assert(h.h.a != 0); sm.egress_spec = 1; }")
    assert one(sw, bytes([1, 0, 0, 0]))[0] == 1
    with pytest.raises(SwitchAbort, match="assert") as info:
        sw.inject(0, bytes(4))
    lines = (tmp_path / "prog.p4").read_text().splitlines()
    assert isinstance(info.value, P4Error)
    assert "assert(" in lines[info.value.loc.line - 1]


def test_unsupported_extern_is_a_located_error(tmp_path):
    with pytest.raises(P4Error) as info:
        load(tmp_path, "apply { magic(h.h.a); }",
             declarations="extern void magic(inout bit<8> x);")
    assert info.value.loc is not None and "magic" in info.value.message


def test_unknown_names_are_p4_errors(tmp_path):
    sw = load(tmp_path, "apply { }")
    with pytest.raises(P4Error, match="no table"):
        sw.table_add("nope", [], "x", [])
    with pytest.raises(P4Error, match="no register"):
        sw.register_read("nope", 0)


def test_assigning_an_invalid_header_keeps_the_destination_fields(tmp_path):
    sw = load(tmp_path, """
    apply {
        h_t inv;                 // invalid, fields zero
        inv.a = 0x77;            // BMv2 allows writes to an invalid header
        h_t keep = h.h;
        h.h = inv;               // only clears the valid bit
        h.h.setValid();          // the old field values are still there
        h.h.b = inv.a;
        sm.egress_spec = 1;
    }
""")
    assert one(sw, bytes([1, 2, 3, 4])) == (1, bytes([1, 0x77, 3, 4]))


def test_signed_and_bool_action_parameters_from_the_control_plane(tmp_path):
    sw = load(tmp_path, """
    action set(int<8> delta, bool flag) {
        h.h.b = (bit<8>)((int<8>)h.h.b + delta);
        if (flag) { h.h.a = 0xAA; }
        sm.egress_spec = 1;
    }
    table t { key = { h.h.c: exact; } actions = { set; } }
    apply { t.apply(); }
""")
    sw.table_add("t", [KeyMatch("", "exact", 1)], "set", [0xFE, 1])   # delta = -2
    assert one(sw, bytes([0, 10, 0, 1])) == (1, bytes([0xAA, 8, 0, 1]))
    (entry,) = sw.table_entries("t")
    assert entry.args == [0xFE, 1]


def test_const_lpm_entries_use_prefix_length_not_order(tmp_path):
    sw = load(tmp_path, FWD + const_table(
        "t", "h.h.a: lpm", "fwd", "0x00 &&& 0x80 : fwd(1); 0x04 &&& 0xFC : fwd(2); _ : fwd(3);")
        + const_table("r", "h.h.b: range", "fwd; NoAction",
                      "10 .. 20 : fwd(4); 15 .. 30 : fwd(5);")
        + "    apply { t.apply(); r.apply(); }\n")
    assert one(sw, bytes([0x05, 0, 0, 0]))[0] == 2     # /6 beats /1 listed before it
    assert one(sw, bytes([0x45, 0, 0, 0]))[0] == 1
    assert one(sw, bytes([0x85, 0, 0, 0]))[0] == 3
    assert one(sw, bytes([0x85, 16, 0, 0]))[0] == 4    # overlapping ranges: first listed
    assert one(sw, bytes([0x85, 25, 0, 0]))[0] == 5


def test_truncate_and_recirculate_requested_in_ingress(tmp_path):
    sw = load(tmp_path, """
    apply {
        sm.egress_spec = 1;
        if (h.h.a == 1) { truncate(2); }
        if (h.h.a == 2) { h.h.a = 3; recirculate_preserving_field_list(0); }
        if (sm.instance_type == 4) { h.h.b = 0x44; }
    }
""")
    assert one(sw, bytes([1, 2, 3, 4, 5])) == (1, bytes([1, 2]))
    assert one(sw, bytes([2, 0, 0, 0])) == (1, bytes([3, 0x44, 0, 0]))
