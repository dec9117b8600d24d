// P4_16 spec 8.17 "Operations on headers" and 7.2.x generic methods: only an extern's
// methods can be generic; a built-in method (isValid, setValid, push_front, a table's
// apply) takes no type arguments.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.isValid<bit<8>>()) {  // error: takes no type arguments
            sm.egress_spec = 1;
        }
    }
}
#include "include/v1model_tail.p4"
