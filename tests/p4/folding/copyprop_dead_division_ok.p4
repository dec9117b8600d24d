// p4c's local copy propagation and constant folding (midend/local_copyprop.cpp, then
// ConstantFolding and StrengthReduction) run before it looks for divisions left for run
// time: after hdr.h.a = 1 the operands below that hold a division by a run-time value
// are dead (the other operand of || or && decides, or the ?: / if condition is known),
// and a divisor that copy propagation makes known folds. Applying t keeps hdr.h.a known:
// none of its actions writes it.
#include "../frontend/include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action count() { m.m = m.m + 1; }
    table t { key = { hdr.h.c : exact; } actions = { count; NoAction; } }
    apply {
        hdr.h.a = 1;
        t.apply();
        sm.egress_spec = 3;
        if (hdr.h.a == 1 || (8w1 / hdr.h.b) == 0) {
            sm.egress_spec = 2;
        }
        if ((hdr.h.b / hdr.h.c[7:0]) == 0 && hdr.h.a == 0) {
            sm.egress_spec = 4;
        }
        hdr.h.b = hdr.h.a == 1 ? hdr.h.b + 1 : hdr.h.b % hdr.h.c[7:0];
        if (hdr.h.a != 1) {
            hdr.h.c = hdr.h.c / (bit<16>)hdr.h.b;
        }
        bit<8> four = 4;
        hdr.h.c = hdr.h.c / (bit<16>)four;
    }
}
#include "../frontend/include/v1model_tail.p4"
