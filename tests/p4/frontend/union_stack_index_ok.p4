// P4_16 spec 8.18 "Operations on header stacks" and 8.19 "Operations on header unions":
// a union stack indexed by a constant anywhere, and by a run-time value in a control
// (where p4c expands the index into constant ones).
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.us[0].h = hdr.h;
        hdr.us[m.i].g.setValid();
        hdr.us[m.i].g.x = 7;
        if (hdr.us[1].isValid()) { sm.egress_spec = 1; }
    }
}
#include "include/v1model_tail.p4"
