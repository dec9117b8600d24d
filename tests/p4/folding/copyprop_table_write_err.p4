// An action of t may write hdr.h.a, so after t.apply() its value is not known and the
// division stays live.
#include "../frontend/include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action set_a() { hdr.h.a = 2; }
    table t { key = { hdr.h.c : exact; } actions = { set_a; NoAction; } }
    apply {
        hdr.h.a = 1;
        t.apply();
        if (hdr.h.a == 1 || (8w1 / hdr.h.b) == 0) {  // error: could not evaluate expression at compilation time
            sm.egress_spec = 2;
        }
    }
}
#include "../frontend/include/v1model_tail.p4"
