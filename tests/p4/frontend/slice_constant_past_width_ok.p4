// P4_16 spec 8.6 bit slices with 18.1 "Compile-time known values": p4c folds a slice of a
// compile-time known value before it checks the slice against the width, so bits past a
// constant's width read as its (sign-extended) number: 8w2[15:8] is 0, (-8s1)[15:8] is 0xff.
// A run-time value gets no such leeway (see slice_runtime_past_width_err.p4).
#include "include/v1model_head.p4"
const bit<8> TWO = 2;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = TWO[15:8];
        hdr.h.b = (-8s1)[15:8];
        sm.egress_spec = 1;
    }
}
#include "include/v1model_tail.p4"
