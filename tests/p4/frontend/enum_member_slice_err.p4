// P4_16 spec 8.3 "Operations on serializable enums" with 8.6 bit slices: a run-time enum
// value can be sliced as its underlying bits, but p4c folds a slice of an enum member
// and finds no number there, so it rejects it.
#include "include/v1model_head.p4"
enum bit<8> E8 { A = 1, B = 2 }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        E8 e = (E8)hdr.h.a;
        hdr.h.b[3:0] = e[3:0];
        hdr.h.b[7:4] = E8.B[3:0];  // error: expected an integer value
    }
}
#include "include/v1model_tail.p4"
