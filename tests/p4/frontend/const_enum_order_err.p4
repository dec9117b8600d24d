// P4_16 spec 18.1 "Compile-time known values" with 8.3: p4c does not order serializable
// enum members when it folds a constant initializer (== and != between members fold).
#include "include/v1model_head.p4"
enum bit<8> E8 { A = 1, B = 2 }
const bool SAME = E8.A == E8.B;
const bool BELOW = E8.A < E8.B;  // error: must evaluate to a constant
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (SAME || BELOW) { sm.egress_spec = 1; }
    }
}
#include "include/v1model_tail.p4"
