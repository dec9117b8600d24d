// P4_16 spec 14.2.2 "Match-action unit invocation": the result of t.apply() (hit, miss,
// action_run) is no value to compare; its hit and miss fields are.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    table t { key = { hdr.h.a : exact; } actions = { NoAction; } }
    apply {
        if (t.apply() == t.apply()) { sm.egress_spec = 1; }  // error: table application results cannot be compared
    }
}
#include "include/v1model_tail.p4"
