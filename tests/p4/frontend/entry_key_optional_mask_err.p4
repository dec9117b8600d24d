// P4_16 spec 14.2.1.4 "Entries" (and P4Runtime's optional match): an optional key takes
// a value or _, not a mask (an all-ones mask is just the value).
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.a : optional; hdr.h.b : exact; }
        actions = { fwd; }
        const entries = {
            (0x01 &&& 0xff, 1) : fwd(1);
            (0x02 &&& 0x0f, 2) : fwd(2);  // error: invalid key expression
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
