// P4_16 spec 7.6 "Introducing new types": only == and != compare values of a type made
// with 'type'; ordering them is an error.
#include "include/v1model_head.p4"
type bit<8> port_id_t;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        port_id_t p = (port_id_t)hdr.h.a;
        if (p < (port_id_t)4) {  // error: cannot be applied
            sm.egress_spec = 1;
        }
    }
}
#include "include/v1model_tail.p4"
