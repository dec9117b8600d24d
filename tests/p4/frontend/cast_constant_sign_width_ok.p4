// P4_16 spec 8.11.1 "Explicit casts" with 18.1 "Compile-time known values": a compile-time
// known int<W>/bit<W> value may change sign and width in one cast (p4c folds the value
// first), e.g. (bit<16>)32s5; the value is taken modulo 2^16.
#include "include/v1model_head.p4"
const int<32> NEG = -5;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.c = (bit<16>)NEG;
        hdr.h.a = (bit<8>)(-16s1 + 16s3);
        hdr.h.b = (bit<8>)(int<32>)300;
        sm.egress_spec = 1;
    }
}
#include "include/v1model_tail.p4"
