// P4_16 spec 8.6 "Operations on bit types" (bit slices) with 8.8 "Operations on arbitrary-
// precision integers": an untyped integer is compile-time known, so any of its bits can be
// sliced (negative values in two's complement); the slice has type bit<hi - lo + 1>.
#include "include/v1model_head.p4"
const int BIG = 0x1234;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = 300[15:8];
        hdr.h.b = (-1)[7:0];
        hdr.h.c = BIG[15:0] + (bit<16>)(1 + 2)[3:0];
        sm.egress_spec = 1;
    }
}
#include "include/v1model_tail.p4"
