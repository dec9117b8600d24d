// P4_16 spec 12.7 "Switch statement": the labels are compared with the selector, and an
// untyped integer selector has no width to compare them at (only 'default' is allowed).
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        switch (3) {  // error: cannot be compared
            1: { sm.egress_spec = 1; }
        }
    }
}
#include "include/v1model_tail.p4"
