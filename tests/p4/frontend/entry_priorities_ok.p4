// P4_16 spec 14.2.1.4 "Entries" / "Entry priorities": in `entries` (without const) an
// entry without `priority =` continues from the previous entry by priority_delta
// (downwards: largest_priority_wins is true by default). The priorities here are
// 1, 30, 29: out of program order, so the second entry outranks the first.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table t {
        key = { hdr.h.a : ternary; hdr.h.b : exact; }
        actions = { fwd; drop; }
        default_action = drop();
        entries = {
            priority = 1:  (0x00 &&& 0x00, 1) : fwd(1);
            priority = 30: (0x01 &&& 0xff, 1) : fwd(2);
                           (0x02 &&& 0xff, 1) : fwd(3);
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
