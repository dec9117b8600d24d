// p4c's copy propagation forgets a value assigned in either branch of an if, even the
// same value: hdr.h.a is not known after it, so the division stays live.
#include "../frontend/include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = 1;
        if (hdr.h.b == 3) {
            hdr.h.a = 1;
        }
        if (hdr.h.a == 1 || (8w1 / hdr.h.b) == 0) {  // error: could not evaluate expression at compilation time
            sm.egress_spec = 2;
        }
    }
}
#include "../frontend/include/v1model_tail.p4"
