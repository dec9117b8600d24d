// P4_16 spec 8.3 "Operations on serializable enums": only a value of the enum's underlying
// type (bit<8>) or an untyped integer casts to the enum; a bit<16> does not.
#include "include/v1model_head.p4"
enum bit<8> E8 { A = 1, B = 2 }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        E8 e = (E8)hdr.h.c;  // error: Illegal cast
        if (e == E8.A) { sm.egress_spec = 1; }
    }
}
#include "include/v1model_tail.p4"
