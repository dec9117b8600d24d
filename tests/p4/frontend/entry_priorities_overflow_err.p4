// P4_16 spec 14.2.1.4 "Entry priorities": a computed priority below zero is an error;
// here 12, 2, then -8 (priority_delta 10, largest wins).
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {  // error: Overflow in priority computation
        key = { hdr.h.a : ternary; }
        actions = { fwd; }
        priority_delta = 10;
        entries = {
            priority = 12: 0x01 &&& 0xff : fwd(1);
                           0x02 &&& 0xff : fwd(2);
                           0x03 &&& 0xff : fwd(3);
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
