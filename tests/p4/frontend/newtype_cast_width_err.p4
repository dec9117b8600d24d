// P4_16 spec 7.6 "Introducing new types" with 8.11.1 "Explicit casts": a type introduced by
// 'type' converts from its own underlying type (bit<7>) or an untyped integer, not from a
// bit<8>, even a constant one.
#include "include/v1model_head.p4"
type bit<7> seven_t;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        seven_t s = (seven_t)8w1;  // error: Illegal cast
        hdr.h.a = (bit<8>)(bit<7>)s;
    }
}
#include "include/v1model_tail.p4"
