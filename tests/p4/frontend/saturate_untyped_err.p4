// P4_16 spec 8.5 "Operations on fixed-width bit types": saturating addition and subtraction
// are defined on bit<W> and int<W> only; on untyped integers there is no width to
// saturate at, even where the result is compile-time known (here a width).
#include "include/v1model_head.p4"
typedef bit<(8 |+| 8)> wide_t;  // error: saturating operation on untyped values
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        wide_t w = 1;
        hdr.h.c = w;
    }
}
#include "include/v1model_tail.p4"
