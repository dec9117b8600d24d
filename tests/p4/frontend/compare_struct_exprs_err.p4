// P4_16 spec 8.13 "Operations on structure-valued expressions": a structure expression
// without a type gets one from what it is compared with; two of them have none.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if ({ x = m.m } == { x = 1 }) { sm.egress_spec = 1; }  // error: cannot compare structure-valued expressions with unknown types
    }
}
#include "include/v1model_tail.p4"
