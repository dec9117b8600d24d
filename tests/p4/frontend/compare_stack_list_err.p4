// P4_16 spec 8.18 "Operations on header stacks": a stack compares with a stack of the
// same type; a list of headers is a tuple, not a stack.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.hs == { hdr.h, hdr.h }) { sm.egress_spec = 1; }  // error: cannot be compared
    }
}
#include "include/v1model_tail.p4"
