// After hdr.h.a = 1 the left operand of && is true, so the right one, a division by a
// run-time value, is live: p4c refuses it as before.
#include "../frontend/include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = 1;
        if (hdr.h.a == 1 && (8w1 / hdr.h.b) == 0) {  // error: could not evaluate expression at compilation time
            sm.egress_spec = 2;
        }
    }
}
#include "../frontend/include/v1model_tail.p4"
