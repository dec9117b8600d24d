// A divisor that is not a power of two does not reduce: the division stays for run
// time, which BMv2 cannot do.
#include "../frontend/include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = (bit<9>)(((int)sm.ingress_port + 1) % 3);  // error: could not evaluate expression at compilation time
    }
}
#include "../frontend/include/v1model_tail.p4"
