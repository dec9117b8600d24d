// P4_16 spec 8.8 "Operations on arbitrary-precision integers" with 11.1 "Constants": an
// int constant may be initialized with a compile-time known bit<W>/int<W> value; it
// takes that value's number (8s-1 is -1, 8w255 is 255).
#include "include/v1model_head.p4"
const int MINUS_ONE = -8s1;
const int ALL_ONES = 8w255;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (MINUS_ONE == -1) { hdr.h.a = (bit<8>)ALL_ONES; }
        hdr.h.c = (bit<16>)(ALL_ONES + 1);
        sm.egress_spec = 1;
    }
}
#include "include/v1model_tail.p4"
