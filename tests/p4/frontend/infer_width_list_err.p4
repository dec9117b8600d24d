// P4_16 spec 7.2.8 "Type inference" / 8.12 "Operations on lists": a type variable bound
// to a list whose element is an untyped integer has no width (here hash's data type D),
// so the call is rejected, naming the literal.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hash(m.n, HashAlgorithm.crc16, 16w0, { hdr.h.a, 2 }, 16w4);  // error: could not infer a width
    }
}
#include "include/v1model_tail.p4"
