// P4_16 spec 7.2.1 "Enumeration types": a serializable enum member's value is an untyped
// integer or a value of exactly the underlying type; a value of another type is not
// converted implicitly.
#include "include/v1model_head.p4"
enum bit<8> E8 {
    A = 1,
    B = (bit<9>)2  // error: does not match
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { hdr.h.a = (bit<8>)E8.B; }
}
#include "include/v1model_tail.p4"
