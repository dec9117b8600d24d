// P4_16 spec 8.15.3 "Masks": `&&&` is defined on bit<W> values (and serializable
// enums), not on bool.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { m.f : ternary; }
        actions = { fwd; }
        const entries = {
            true &&& true : fwd(1);  // error: cannot be applied to expression
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
