// P4_16 spec 8.6 "Expressions on Booleans": booleans have no order; <, <=, >, >= are
// defined on bit<W> and int<W> (and serializable enums, as their bits).
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (m.f < true) { sm.egress_spec = 1; }  // error: not defined on bool and bool
    }
}
#include "include/v1model_tail.p4"
