// P4_16 spec 8.6 bit slices: the bits of a run-time bit<8> value are 7..0; a slice past
// them is an error.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = hdr.h.b[15:8];  // error: greater than width
    }
}
#include "include/v1model_tail.p4"
