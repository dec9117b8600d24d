// P4_16 spec 8.14 "Operations on ternary expressions" with 18.1 "Compile-time known
// values": with untyped integers in both branches a width is needed, unless the condition
// is compile-time known: then the expression folds to one branch (as p4c does).
#include "include/v1model_head.p4"
const bool WIDE = true;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = WIDE ? 7 : 3;
        hdr.h.b = (bit<8>)(false ? 1 : 2);
        sm.egress_spec = 1;
    }
}
#include "include/v1model_tail.p4"
