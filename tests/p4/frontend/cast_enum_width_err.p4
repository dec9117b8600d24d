// P4_16 spec 8.3 "Operations on serializable enums": a serializable enum casts only to its
// underlying type (bit<8> here), not to another width or sign.
#include "include/v1model_head.p4"
enum bit<8> E8 { A = 1, B = 2 }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.c = (bit<16>)E8.B;  // error: Illegal cast
    }
}
#include "include/v1model_tail.p4"
