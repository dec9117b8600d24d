// P4_16 spec 8.3 "Operations on serializable enums" with 8.12 "Operations on lists": an
// untyped integer is not implicitly an enum value, also as a field of a struct
// initializer (p4c converts it only in comparisons and select keysets).
#include "include/v1model_head.p4"
enum bit<8> E8 { A = 1, B = 2 }
struct pair_t { E8 kind; bit<8> v; }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        pair_t p = { kind = 1, v = 2 };  // error: initializer
        hdr.h.a = (bit<8>)p.kind;
    }
}
#include "include/v1model_tail.p4"
