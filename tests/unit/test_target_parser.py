"""Parser features: stacks, lookahead/advance, select keysets, sub-parsers, verify."""

from __future__ import annotations

from programs import switch_of_source, v1model_program

from softswitch.v1model.switch import Switch

PROGRAM = v1model_program(
    types="""
header tag_t { bit<4> kind; bit<4> more; }
header num_t { bit<8> v; }
header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union ab_t { a_t a; b_t b; }
header out_t { bit<8> count; bit<8> last; bit<8> look; bit<8> err; bit<8> sub; }
""",
    headers="tag_t[4] tags; ab_t u; num_t n; out_t o;",
    meta="bit<8> seen; bit<8> count; bit<8> last;",
    declarations="""
error { TooMany }
parser Sub(packet_in pk, inout H h, inout M m)(bit<8> bonus) {
    state start { pk.extract(h.n); m.seen = h.n.v + bonus; transition accept; }
}
""",
    parser="""
    Sub(8w100) sub;
    state start {
        h.o.look = pk.lookahead<bit<8>>();
        transition tags;
    }
    state tags {
        pk.extract(h.tags.next);
        m.count = (bit<8>)h.tags.lastIndex + 1;
        m.last = (bit<8>)h.tags.last.kind;
        verify(h.tags.lastIndex < 3, error.TooMany);
        transition select(h.tags.last.more, h.tags.last.kind) {
            (1, _): tags;
            (0, 0x1 &&& 0x1): odd;
            (0, 2 .. 6): even;
            default: accept;
        }
    }
    state odd { pk.extract(h.u.a); transition finish; }
    state even { pk.advance(8); pk.extract(h.u.b); transition finish; }
    state finish { sub.apply(pk, h, m); transition accept; }
""",
    ingress="""
    apply {
        h.o.setValid();
        h.o.count = m.count;
        h.o.last = m.last;
        h.o.err = sm.parser_error == error.TooMany ? 8w1 :
                  (sm.parser_error == error.NoError ? 8w0 : 8w2);
        h.o.sub = m.seen;
        sm.egress_spec = 1;
    }
""",
    emit=["h.o", "h.tags", "h.u", "h.n"])


def switch(tmp_path) -> Switch:
    return switch_of_source(tmp_path, PROGRAM, "parser.p4")


def test_odd_branch_union_and_subparser(tmp_path):
    sw = switch(tmp_path)
    # tags: 0x21 (kind 2, more 1), 0x30 (kind 3, more 0) -> odd -> a_t, then num
    (out,) = sw.inject(0, bytes([0x21, 0x30, 0xAA, 0x05, 0xEE]))
    assert out.data == bytes([2, 3, 0x21, 0, 105]) + bytes([0x21, 0x30, 0xAA, 0x05, 0xEE])


def test_even_branch_advances_and_ranges(tmp_path):
    sw = switch(tmp_path)
    # tag kind 4 (even, in 2..6): skip one byte, b_t = 0x1234, num = 1
    (out,) = sw.inject(0, bytes([0x40, 0xFF, 0x12, 0x34, 0x01]))
    assert out.data == bytes([1, 4, 0x40, 0, 101]) + bytes([0x40, 0x12, 0x34, 0x01])


def test_default_and_verify_errors(tmp_path):
    sw = switch(tmp_path)
    # kind 8 is even but outside 2..6 -> default: accept, nothing more extracted
    (out,) = sw.inject(0, bytes([0x80, 0x99]))
    assert out.data == bytes([1, 8, 0x80, 0, 0]) + bytes([0x80, 0x99])
    # four chained tags (kind 0, more 1): lastIndex reaches 3 -> verify: TooMany
    (out,) = sw.inject(0, bytes([0x01, 0x01, 0x01, 0x01, 0x77]))
    assert out.data == bytes([4, 0, 0x01, 1, 0]) + bytes([0x01] * 4) + b"\x77"
    # more chained tags than the stack holds: verify fires first, at the fourth tag
    (out,) = sw.inject(0, bytes([0x01] * 6))
    assert out.data[3] == 1


def test_packet_too_short_keeps_the_bytes(tmp_path):
    sw = switch(tmp_path)
    # kind 1 selects "odd", whose a_t does not fit: PacketTooShort, the tag stays valid
    (out,) = sw.inject(0, bytes([0x10]))
    assert out.data == bytes([1, 1, 0x10, 2, 0]) + bytes([0x10])


REJECTING = v1model_program(
    types="header b_t { bit<8> v; }", headers="b_t first; b_t second;",
    declarations="""
parser Sub(packet_in pk, inout H h) {
    state start { pk.extract(h.first);
                  transition select(h.first.v) { 0: reject; default: accept; } }
}
""",
    parser="""
    Sub() sub;
    state start { sub.apply(pk, h); transition next; }
    state next { pk.extract(h.second); transition accept; }
""",
    ingress="""
    apply {
        if (sm.parser_error == error.NoError) { sm.egress_spec = 1; }
        if (h.second.isValid()) { h.first.v = h.first.v + 1; }
    }
""",
    emit=["h"])


def test_reject_in_a_subparser_ends_parsing_without_error(tmp_path):
    sw = switch_of_source(tmp_path, REJECTING, "reject.p4")
    (out,) = sw.inject(0, bytes([5, 6]))
    assert (out.port, out.data) == (1, bytes([6, 6]))      # both headers extracted
    (out,) = sw.inject(0, bytes([0, 6]))
    assert (out.port, out.data) == (1, bytes([0, 6]))      # second not extracted
