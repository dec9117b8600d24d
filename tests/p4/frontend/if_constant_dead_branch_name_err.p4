// P4_16 spec 12.6 "Conditional statement": a dead branch of an if on a compile-time known
// condition is dropped only after names are resolved, so an undeclared name there is
// still an error.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (false) {
            hdr.h.a = no_such_value;  // error: declaration not found
        }
    }
}
#include "include/v1model_tail.p4"
