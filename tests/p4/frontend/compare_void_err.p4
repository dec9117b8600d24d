// P4_16 spec 7.1.1 "The void type": void has no values, so void call results cannot be
// compared. (p4test 1.2.5.16 accepts the comparison in its type checker and then loops
// until it runs out of memory; there is no p4c verdict to compare with.)
// p4test: no verdict
#include "include/v1model_head.p4"
extern void notify();
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        bool same = notify() == notify();  // error: cannot be compared
        if (same) { sm.egress_spec = 1; }
    }
}
#include "include/v1model_tail.p4"
