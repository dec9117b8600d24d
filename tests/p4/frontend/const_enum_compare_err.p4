// P4_16 spec 18.1 "Compile-time known values": p4c does not fold the comparison of a
// serializable enum's member with a number (it types it as E8.A == (bit<8>)1 and cannot
// evaluate that), so a constant cannot be initialized with one.
#include "include/v1model_head.p4"
enum bit<8> E8 { A = 1, B = 2 }
const bool IS_ONE = E8.A == 1;  // error: must evaluate to a constant
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (IS_ONE) { sm.egress_spec = 1; }
    }
}
#include "include/v1model_tail.p4"
