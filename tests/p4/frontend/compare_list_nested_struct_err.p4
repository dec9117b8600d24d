// P4_16 spec 8.12 "Operations on tuple expressions" / 8.13: inside a list, a structure
// expression without a type cannot be given one by the comparison.
#include "include/v1model_head.p4"
struct pair_t { bit<8> x; }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        pair_t p = { x = 1 };
        if ({ p } == { { x = 1 } }) { sm.egress_spec = 1; }  // error: could not infer a type
    }
}
#include "include/v1model_tail.p4"
