// P4_16 spec 12.6 "Conditional statement" with 18.1 "Compile-time known values": p4c folds
// an if on a compile-time known condition before type checking and keeps only the taken
// branch, so a type error in the dead branch is not reported (it must still name existing
// declarations); a function whose live branch returns returns on all paths.
#include "include/v1model_head.p4"
const bool DEBUG = false;
bit<8> pick(in bit<8> x) {
    if (true) { return x; } else { return 1[3:0]; }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (-1 > 4s7) { hdr.h.a = 1[3:0]; }
        if (DEBUG) { hdr.h.b = 1[3:0]; } else { hdr.h.b = pick(5); }
        sm.egress_spec = 1;
    }
}
#include "include/v1model_tail.p4"
