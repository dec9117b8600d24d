// P4_16 spec 12.7 "Switch statement" with 14.2.1.3 "Default action": a table without a
// default_action runs NoAction on a miss (p4c adds it to the table), so NoAction is a
// label of its action_run switch.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd() { sm.egress_spec = 2; }
    table t { key = { hdr.h.a : exact; } actions = { fwd; } }
    apply {
        switch (t.apply().action_run) {
            NoAction: { sm.egress_spec = 1; }
            fwd: { hdr.h.b = 1; }
        }
    }
}
#include "include/v1model_tail.p4"
