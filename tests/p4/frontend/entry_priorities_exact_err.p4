// P4_16 spec 14.2.1.4 "Entry priorities": a table whose keys are all exact or lpm has
// no use for priorities; giving one is an error (reported at the key).
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.a : exact; hdr.h.b : lpm; }  // error: match type does not require priorities
        actions = { fwd; }
        entries = {
            priority = 10: (0x01, 0x02) : fwd(1);
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
