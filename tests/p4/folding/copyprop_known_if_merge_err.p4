// The value assigned in an if whose condition copy propagation decides still counts:
// p4c propagates before it folds the if away, so after it m.m is not known.
#include "../frontend/include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.a = 1;
        m.m = 4;
        if (hdr.h.a != 1) {
            m.m = 3;
        }
        hdr.h.b = hdr.h.b / m.m;  // error: could not evaluate expression at compilation time
    }
}
#include "../frontend/include/v1model_tail.p4"
