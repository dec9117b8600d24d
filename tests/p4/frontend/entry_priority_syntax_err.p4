// P4_16 spec 14.2.1.4 "Entries" (grammar entryPriority): an entry's priority is an integer
// literal or a parenthesized expression; a bare expression is a syntax error.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action a(bit<8> v) { hdr.h.b = v; }
    table t {
        key = { hdr.h.a : ternary; }
        actions = { a; }
        entries = {
            priority = 1 + 1: 1 &&& 0xff : a(1);  // error: syntax error
        }
    }
    apply { t.apply(); }
}
#include "include/v1model_tail.p4"
