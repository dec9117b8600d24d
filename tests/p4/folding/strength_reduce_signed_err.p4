// p4c refuses '/' and '%' on int<W> while typing, before strength reduction could make a
// mask of it (for negative values a mask is not the remainder).
#include "../frontend/include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        m.s = m.s % 4;  // error: Cannot operate on signed values
    }
}
#include "../frontend/include/v1model_tail.p4"
