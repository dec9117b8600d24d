// P4_16 spec 13.1 "Actions": action parameters carry data; a control type is none.
#include "include/v1model_head.p4"
control Step(inout bit<8> x);
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action run(Step s) { }  // error: parameter cannot have type control Step
    apply { }
}
#include "include/v1model_tail.p4"
