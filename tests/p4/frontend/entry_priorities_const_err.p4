// P4_16 spec 14.2.1.4 "Entries": the entries of `const entries` rank by program order
// alone, so giving one a priority is an error.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.a : ternary; }
        actions = { fwd; }
        const entries = {
            0x01 &&& 0xff : fwd(1);
            priority = 10: 0x02 &&& 0xff : fwd(2);  // error: Table with 'const' entries cannot have priorities
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
