// P4_16 spec 14.2.1.4 "Entries": a signed key's entries are written in the key's type,
// but the control-plane description (P4Runtime) carries no negative values.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { m.s : exact; }
        actions = { fwd; }
        const entries = {
            -1 : fwd(1);  // error: Negative values not supported yet
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
