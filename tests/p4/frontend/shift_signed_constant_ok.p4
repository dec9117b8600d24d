// P4_16 spec 8.5 "Operations on fixed-width bit types" (shifts): the shift amount must be
// unsigned; a compile-time known int<W> amount counts by its (non-negative) value, as p4c
// folds it first.
#include "include/v1model_head.p4"
const int<8> THREE = 3;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = hdr.h.a << 8s3;
        hdr.h.b = hdr.h.b >> THREE;
        sm.egress_spec = 1;
    }
}
#include "include/v1model_tail.p4"
