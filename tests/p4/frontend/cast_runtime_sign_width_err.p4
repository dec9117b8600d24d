// P4_16 spec 8.11.1 "Explicit casts": a run-time int<W> value cannot change sign and
// width in one cast; it takes two ((bit<32>) then (bit<16>)).
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        int<32> wide = (int<32>)m.s;
        hdr.h.c = (bit<16>)wide;  // error: Illegal cast
    }
}
#include "include/v1model_tail.p4"
