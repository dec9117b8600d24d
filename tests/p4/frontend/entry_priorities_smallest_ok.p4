// P4_16 spec 14.2.1.4 "Entry priorities": largest_priority_wins = false makes the
// smallest priority win, and priority_delta spaces the computed ones: 10, 20, 5, 15.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table t {
        key = { hdr.h.a : ternary; }
        actions = { fwd; drop; }
        default_action = drop();
        largest_priority_wins = false;
        priority_delta = 10;
        @noWarn("entries_out_of_priority_order")
        entries = {
            priority = 10: 0x00 &&& 0x00 : fwd(1);
                           0x01 &&& 0xff : fwd(2);
            priority = 5:  0x02 &&& 0xff : fwd(3);
                           0x03 &&& 0xff : fwd(4);
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
