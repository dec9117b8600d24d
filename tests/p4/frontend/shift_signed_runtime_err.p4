// P4_16 spec 8.5 "Operations on fixed-width bit types" (shifts): a run-time int<W> value
// cannot be a shift amount (it could be negative).
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = hdr.h.a << m.s;  // error: must be an unsigned number
    }
}
#include "include/v1model_tail.p4"
