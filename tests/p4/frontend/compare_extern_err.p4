// P4_16 spec 8.21 "Operations on extern objects": extern instances cannot be compared
// (p4c lets instances of a specialized generic extern through; counter is not generic).
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    counter(4, CounterType.packets) c1;
    apply {
        if (c1 == c1) { sm.egress_spec = 1; }  // error: externs cannot be compared
    }
}
#include "include/v1model_tail.p4"
