// p4c makes a temporary of a ?: result, assigned in an if: after hdr.h.a = 1 the
// condition is known, but the result (0) is not propagated to the division, which
// stays live.
#include "../frontend/include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = 1;
        hdr.h.b = hdr.h.a == 1 ? 8w0 : 8w1;
        hdr.h.c = (bit<16>)(hdr.h.b / m.m);  // error: could not evaluate expression at compilation time
    }
}
#include "../frontend/include/v1model_tail.p4"
