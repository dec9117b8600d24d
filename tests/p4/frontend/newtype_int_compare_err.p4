// P4_16 spec 7.6 "Introducing new types": an untyped integer is not implicitly a value of
// a type made with 'type'; comparing one with it needs a cast.
#include "include/v1model_head.p4"
type bit<8> port_id_t;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        port_id_t p = (port_id_t)hdr.h.a;
        if (p == (port_id_t)1) { sm.egress_spec = 1; }
        if (p != 300) { sm.egress_spec = 2; }  // error: cannot be compared
    }
}
#include "include/v1model_tail.p4"
