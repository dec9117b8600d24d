// P4_16 spec 8.14 "Operations on ternary expressions": with a run-time condition and
// untyped integers in both branches the result has no width, even under a cast.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = (bit<8>)(m.f ? 1 : 2);  // error: Width must be specified
    }
}
#include "include/v1model_tail.p4"
