// P4_16 spec 8.3 "Operations on enum types": a serializable enum value does not unify
// with an untyped integer inside a list (only a top-level operand turns into its bits).
#include "include/v1model_head.p4"
enum bit<8> Code { Low = 1, High = 2 }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        Code k = Code.Low;
        if ({ k } == { 1 }) { sm.egress_spec = 1; }  // error: cannot be compared
    }
}
#include "include/v1model_tail.p4"
