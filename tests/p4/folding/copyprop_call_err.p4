// A call between the assignment and its use (here setValid) makes p4c's copy propagation
// forget the header's fields: the division stays live.
#include "../frontend/include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = 1;
        hdr.h.setValid();
        if (hdr.h.a == 1 || (8w1 / hdr.h.b) == 0) {  // error: could not evaluate expression at compilation time
            sm.egress_spec = 2;
        }
    }
}
#include "../frontend/include/v1model_tail.p4"
