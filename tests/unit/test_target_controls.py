"""Control features: sub-controls with constructor arguments and shared externs,
functions with out parameters, stacks and unions in controls, switch on values,
exit through a sub-control (copy-out still happens)."""

from __future__ import annotations

from programs import switch_of_source, v1model_program

from softswitch.v1model.switch import Switch

PROGRAM = v1model_program(
    types="""
header e_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
header s_t { bit<8> v; }
header x_t { bit<8> x; }
header y_t { bit<8> y; }
header_union xy_t { x_t x; y_t y; }
""",
    headers="e_t e; s_t[3] s; xy_t u;", meta="bit<8> tmp;",
    declarations="""
bit<8> twice(in bit<8> v, out bit<8> carry) {
    bit<9> wide = (bit<9>)v << 1;
    carry = (bit<8>)(wide >> 8);
    return wide[7:0];
}
control Bump(inout bit<8> v, inout bit<8> trace)(bit<8> step, counter cnt) {
    apply {
        cnt.count(0);
        v = v + step;
        if (v > 200) { trace = 0xEE; exit; }
        trace = trace + 1;
    }
}
""",
    extract=["h.e"],
    ingress="""
    counter(1, CounterType.packets) hits;
    Bump(8w10, hits) by10;
    Bump(8w1, hits) by1;
    bit<8> local = 3;
    apply {
        sm.egress_spec = 1;
        bit<8> carry;
        h.e.b = twice(h.e.b, carry);
        h.e.c = carry;
        switch (h.e.a) {
            1: { h.s.push_front(2); h.s[0].setValid(); h.s[0].v = 0x51; }
            2:
            3: { h.u.x.setValid(); h.u.x.x = local; h.u.y.setValid(); h.u.y.y = 9; }
            default: { }
        }
        if (h.u.isValid() && h.u.y.isValid() && !h.u.x.isValid()) { h.e.c = h.e.c | 0x80; }
        by1.apply(h.e.d, m.tmp);
        by10.apply(h.e.d, m.tmp);
        h.e.a = m.tmp;
    }
""",
    emit=["h.e", "h.s", "h.u"])


def switch(tmp_path) -> Switch:
    return switch_of_source(tmp_path, PROGRAM, "controls.p4")


def test_functions_subcontrols_and_stacks(tmp_path):
    sw = switch(tmp_path)
    (out,) = sw.inject(0, bytes([1, 0x81, 0, 5]))
    # b doubled with carry; stack pushed; d += 1 then += 10; a = trace count 2
    assert out.data == bytes([2, 0x02, 1, 16, 0x51])
    assert sw.counter_read("I.hits", 0) == (2, 8)   # two count() calls, 4 bytes each


def test_union_keeps_only_the_last_valid_member(tmp_path):
    sw = switch(tmp_path)
    (out,) = sw.inject(0, bytes([3, 1, 0, 0]))
    assert out.data == bytes([2, 2, 0x80, 11, 9])


def test_exit_in_subcontrol_still_copies_out(tmp_path):
    sw = switch(tmp_path)
    (out,) = sw.inject(0, bytes([0, 0, 0, 195]))
    # by1: d = 196, trace 1; by10: d = 206 > 200 -> trace 0xEE, exit; a not updated
    assert out.data == bytes([0, 0, 0, 206])


ALIAS = v1model_program(
    types="header e_t { bit<8> a; bit<8> b; }", headers="e_t e;",
    declarations="""
void two(out bit<8> first, out bit<8> second) { first = 1; second = 2; }
control Sub(inout H whole, inout e_t part) {
    apply {
        part.a = 7;            // copy-in/copy-out: whole.e.a is still the old value here
        whole.e.b = whole.e.a;
    }                          // copy-out order: whole first, then part (a = 7 wins)
}
""",
    extract=["h.e"],
    ingress="""
    Sub() sub;
    apply {
        sub.apply(h, h.e);
        two(_, h.e.b);
        h.e.b = h.e.b + h.e.a;
        sm.egress_spec = 1;
    }
""",
    emit=["h.e"])


def test_overlapping_arguments_keep_copy_semantics(tmp_path):
    (out,) = switch_of_source(tmp_path, ALIAS, "alias.p4").inject(0, bytes([3, 0]))
    # Sub: whole.e.b = 3 (old a), then part copied out: a = 7; two() writes b = 2
    assert out.data == bytes([7, 2 + 7])
