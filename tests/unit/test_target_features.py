"""Target features beyond the basic pipeline: varbit, value sets, digests, meters,
initial-entry priorities, parser loops."""

from __future__ import annotations

from programs import switch_of_source, v1model_program

from softswitch.core.control import KeyMatch
from softswitch.v1model.switch import Switch


def load(tmp_path, src: str) -> Switch:
    return switch_of_source(tmp_path, src)


def test_varbit_extract_and_emit(tmp_path):
    sw = load(tmp_path, v1model_program(
        types="""
header len_t { bit<8> n; }
header opt_t { varbit<32> data; }
header tail_t { bit<8> t; }
""",
        headers="len_t l; opt_t o; tail_t t;",
        parser="""
    state start { pk.extract(h.l); pk.extract(h.o, (bit<32>)h.l.n * 8);
                  pk.extract(h.t); transition accept; }
""",
        ingress="""
    apply { h.t.t = h.t.t + 1; sm.egress_spec = 1; }
""",
        emit=["h"]))
    (out,) = sw.inject(0, bytes([2, 0xAA, 0xBB, 0x10, 0x77]))
    assert out.data == bytes([2, 0xAA, 0xBB, 0x11, 0x77])
    # more than the varbit's maximum: HeaderTooShort, nothing of it is emitted
    (out,) = sw.inject(0, bytes([5]) + bytes(8))
    assert out.data == bytes([5]) + bytes(8)


def test_value_set_and_parser_select(tmp_path):
    sw = load(tmp_path, v1model_program(
        types="""
header a_t { bit<16> kind; }
header b_t { bit<8> v; }
""",
        headers="a_t a; b_t b;",
        parser="""
    value_set<bit<16>>(4) kinds;
    state start { pk.extract(h.a); transition select(h.a.kind) { kinds: more; default: accept; } }
    state more { pk.extract(h.b); transition accept; }
""",
        ingress="""
    apply { if (h.b.isValid()) { h.b.v = 0xFF; } sm.egress_spec = 1; }
""",
        emit=["h"]))
    pkt = bytes([0x12, 0x34, 0x01])
    assert sw.inject(0, pkt)[0].data == pkt
    sw.value_set_set("kinds", [[KeyMatch("", "exact", 0x1234)]])
    assert sw.inject(0, pkt)[0].data == bytes([0x12, 0x34, 0xFF])


def test_digest_and_direct_meter(tmp_path):
    sw = load(tmp_path, v1model_program(
        types="header e_t { bit<8> a; bit<8> colour; }", headers="e_t e;",
        declarations="struct learn_t { bit<8> a; bit<9> port; }", extract=["h.e"],
        ingress="""
    direct_meter<bit<8>>(MeterType.packets) dm;
    action mark() { dm.read(h.e.colour); sm.egress_spec = 1; }
    table t { key = { h.e.a: exact; } actions = { mark; } meters = dm; }
    apply {
        digest<learn_t>(1, { h.e.a, sm.ingress_port });
        t.apply();
    }
""",
        emit=["h"]))
    handle = sw.table_add("t", [KeyMatch("", "exact", 7)], "mark", [])
    sw.pb.clock.freeze(0)
    sw.meter_set_rates("dm", handle, [(0.000001, 1), (0.000001, 2)])
    colours = [sw.inject(3, bytes([7, 0]))[0].data[1] for _ in range(3)]
    assert colours == [0, 1, 2]
    assert sw.drain_digests() == [("learn_t", [7, 3])] * 3
    assert sw.drain_digests() == []


def test_parser_loop_ends_with_timeout(tmp_path):
    sw = load(tmp_path, v1model_program(
        types="header e_t { bit<8> a; }", headers="e_t e;",
        parser="""
    state start { pk.extract(h.e); transition again; }
    state again { transition select(h.e.a) { 0: accept; default: again; } }
""",
        ingress="""
    apply { if (sm.parser_error == error.ParserTimeout) { sm.egress_spec = 2; } }
""",
        emit=["h"]))
    (out,) = sw.inject(0, b"\x01")
    assert out.port == 2 and out.data == b"\x01"


def test_action_selector_group_picks_member_by_hash(tmp_path):
    from softswitch.core import hashes
    sw = load(tmp_path, v1model_program(
        types="header e_t { bit<8> grp; bit<16> flow; bit<8> res; }", headers="e_t e;",
        extract=["h.e"],
        ingress="""
    action_selector(HashAlgorithm.crc16, 32w64, 32w14) sel;
    action nh(bit<8> v) { h.e.res = v; sm.egress_spec = 1; }
    table ecmp {
        key = { h.e.grp: exact; h.e.flow: selector; }
        actions = { nh; NoAction; }
        implementation = sel;
    }
    apply { ecmp.apply(); }
""",
        emit=["h"]))
    values = [10, 20, 30, 40, 50]
    sw.table_add_group("ecmp", [KeyMatch("", "exact", 1)], [("nh", [v]) for v in values])
    for flow in range(40):
        (out,) = sw.inject(0, bytes([1]) + flow.to_bytes(2, "big") + b"\x00")
        # BMv2 ignores outputWidth (14 here): the whole crc16 picks the member
        h = hashes.crc16(flow.to_bytes(2, "big"))
        assert out.data[3] == values[h % 5]
