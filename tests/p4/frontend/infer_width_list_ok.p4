// P4_16 spec 7.2.8 "Type inference": the same hash call with every list element typed
// (a width-prefixed literal, a cast) binds the data type variable to a tuple of bit types.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hash(m.n, HashAlgorithm.crc16, 16w0, { hdr.h.a, 8w2, (bit<4>)3 }, 16w4);
    }
}
#include "include/v1model_tail.p4"
