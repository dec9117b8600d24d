// P4_16 spec 7.6 "Introducing new types": a value of a type made with 'type' can be
// assigned, compared with == and != and cast to and from its underlying type; arithmetic
// goes through a cast.
#include "include/v1model_head.p4"
type bit<8> port_id_t;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        port_id_t p = (port_id_t)hdr.h.a;
        port_id_t q = p;
        if (p == q && p != (port_id_t)0) {
            hdr.h.b = (bit<8>)p + 1;
        }
        sm.egress_spec = 1;
    }
}
#include "include/v1model_tail.p4"
