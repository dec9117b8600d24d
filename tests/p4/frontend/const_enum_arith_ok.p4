// P4_16 spec 8.3 "Operations on serializable enums" and 18.1 "Compile-time known values":
// a serializable enum's member takes part in arithmetic as a value of its underlying type,
// also when a constant initializer is folded; members compare with members.
#include "include/v1model_head.p4"
enum bit<8> E8 { A = 1, B = 2, C = 255 }
const bit<8> MASKED = E8.C & (8 | 7);
const bit<8> QUOT = 10 / E8.B;
const bit<8> NEXT = (bit<8>)E8.A + 1;
const bool SAME = E8.A == E8.B;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = MASKED;
        hdr.h.b = QUOT + NEXT;
        if (!SAME) { sm.egress_spec = 1; }
    }
}
#include "include/v1model_tail.p4"
