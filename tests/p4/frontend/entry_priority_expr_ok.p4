// P4_16 spec 14.2.1.4 "Entries" (grammar entryPriority): a parenthesized compile-time
// expression gives an entry's priority; the larger priority wins between overlapping entries.
#include "include/v1model_head.p4"
const bit<8> BASE = 10;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action a(bit<8> v) { hdr.h.b = v; sm.egress_spec = 1; }
    table t {
        key = { hdr.h.a : ternary; }
        actions = { a; }
        entries = {
            priority = (BASE + 1): 1 &&& 0x0f : a(1);
            priority = (BASE * 2): 1 &&& 0xff : a(2);
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
