// P4_16 spec 7.6 "Introducing new types": a type made with 'type' does not inherit the
// underlying type's operators; arithmetic on it is an error.
#include "include/v1model_head.p4"
type bit<8> port_id_t;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        port_id_t p = (port_id_t)hdr.h.a;
        port_id_t q = p + (port_id_t)1;  // error: cannot be applied
        hdr.h.b = (bit<8>)q;
    }
}
#include "include/v1model_tail.p4"
