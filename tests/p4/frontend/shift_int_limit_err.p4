// P4_16 spec 8.8 "Operations on arbitrary-precision integers": p4c evaluates int shifts
// only up to 2048 bits (an implementation limit it reports as an error).
#include "include/v1model_head.p4"
const int HUGE = 1 << 2049;  // error: Compiler only supports widths up to 2048
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { hdr.h.a = (bit<8>)HUGE; }
}
#include "include/v1model_tail.p4"
