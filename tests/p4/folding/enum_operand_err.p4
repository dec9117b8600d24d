// Cast to its underlying type, an enum value divided by a run-time value is still a
// division left for run time.
#include "../frontend/include/v1model_head.p4"
enum bit<8> E8 { A = 1, B = 2, C = 255 }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        E8 e = (E8)hdr.h.a;
        hdr.h.b = e / hdr.h.b;  // error: could not evaluate expression at compilation time
    }
}
#include "../frontend/include/v1model_tail.p4"
