// P4_16 spec 14.2.1.4 "Entries": an entry's keyset gives one element per key; a lone
// `_` is one element, not a wildcard for every key of a two-key table.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.a : ternary; hdr.h.b : ternary; }
        actions = { fwd; }
        const entries = {
            _ : fwd(1);  // error: Size of entry keyset must match the table key set size
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
