// P4_16 spec 14.2.1.4 "Entries" with 8.9.3 "Implicit casts": a key value wider than the
// key is truncated to its width (p4c warns), so 10 .. 256 on a bit<8> key becomes
// 10 .. 0: an empty range, which P4Runtime cannot express.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.a : range; }
        actions = { fwd; }
        const entries = {
            10 .. 256 : fwd(1);  // error: Invalid range for table entry
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
