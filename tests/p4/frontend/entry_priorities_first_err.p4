// P4_16 spec 14.2.1.4 "Entry priorities": once any entry has a priority, the first must
// have one (the others continue from it).
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.a : ternary; }
        actions = { fwd; }
        entries = {
            0x01 &&& 0xff : fwd(1);  // error: entry must have a priority
            priority = 10: 0x02 &&& 0xff : fwd(2);
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
