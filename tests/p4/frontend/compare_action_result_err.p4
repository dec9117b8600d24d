// P4_16 spec 8 "Expressions" with 6.8 "Calling convention": an action call has no value,
// so its "result" cannot be compared.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action a() { m.m = 1; }
    apply {
        if (a() == a()) { sm.egress_spec = 1; }  // error: cannot be compared
    }
}
#include "include/v1model_tail.p4"
