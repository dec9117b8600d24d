// Copy propagation makes the divisor known, and it is zero.
#include "../frontend/include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.c = 0;
        hdr.h.b = hdr.h.a / (bit<8>)hdr.h.c;  // error: Division by zero
    }
}
#include "../frontend/include/v1model_tail.p4"
