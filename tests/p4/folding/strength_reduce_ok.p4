// p4c's strength reduction (frontends/p4/strengthReduction.cpp): a run-time x / 2**k is
// x >> k, x % 2**k is x & (2**k - 1) and 0 / x is 0, also on int operands (through a
// cast to int), before p4c looks for divisions left for run time; so p4c-bm2-ss compiles
// these and its JSON has no '/' or '%'.
#include "../frontend/include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = (bit<9>)(((int)sm.ingress_port + 1) % 2);
        hdr.h.b = hdr.h.a % 16;
        hdr.h.c = hdr.h.c / 8 + (bit<16>)(hdr.h.a / 1);
        hdr.h.a = 0 / hdr.h.a;
    }
}
#include "../frontend/include/v1model_tail.p4"
