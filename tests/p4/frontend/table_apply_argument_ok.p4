// P4_16 spec 14.2.2 "Match-action unit invocation": t.apply() is an expression; its
// hit and miss fields are bool values usable anywhere a bool is, including as the
// argument of a function, an extern method or a control's apply (the table is applied
// once, where the argument is evaluated).
#include "include/v1model_head.p4"
bit<9> pick(in bool c, in bit<9> a, in bit<9> b) { if (c) { return a; } return b; }
control Mark(inout bit<8> x, in bool h) { apply { x = h ? 8w0xaa : 8w0xbb; } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<8>>(1) seen;
    Mark() mark;
    action nop() { }
    table t1 { key = { hdr.h.a : exact; } actions = { nop; } const entries = { 1 : nop(); } }
    table t2 { key = { hdr.h.a : exact; } actions = { nop; } const entries = { 2 : nop(); } }
    table t3 { key = { hdr.h.b : exact; } actions = { nop; } const entries = { 5 : nop(); } }
    apply {
        sm.egress_spec = pick(t1.apply().hit, 1, 2);
        seen.write(0, t2.apply().miss ? 8w1 : 8w0);
        mark.apply(hdr.h.b, t3.apply().hit);
        bit<8> s;
        seen.read(s, 0);
        hdr.h.c = (bit<16>)s;
    }
}
#include "include/v1model_tail.p4"
