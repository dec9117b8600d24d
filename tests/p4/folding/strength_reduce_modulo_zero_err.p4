// A remainder by zero: p4c's strength reduction says so in its own words.
#include "../frontend/include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.b = hdr.h.a % 0;  // error: Modulo by zero
    }
}
#include "../frontend/include/v1model_tail.p4"
