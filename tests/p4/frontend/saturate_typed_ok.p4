// P4_16 spec 8.5 "Operations on fixed-width bit types": saturating operations on typed
// values, folded at compile time (8w250 |+| 10 = 255, 8w5 |-| 9 = 0) and at run time.
#include "include/v1model_head.p4"
const bit<8> HIGH = 8w250 |+| 10;
const bit<8> LOW = 8w5 |-| 9;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = HIGH;
        hdr.h.b = LOW;
        hdr.h.c = hdr.h.c |+| 16w0xfff0;
        sm.egress_spec = 1;
    }
}
#include "include/v1model_tail.p4"
