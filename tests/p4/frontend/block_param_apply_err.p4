// P4_16 spec 7.2.11 "Parser and control blocks types": a parser or control arrives as a
// constructor parameter; an apply parameter (data, with or without a direction) cannot
// have a control type.
#include "include/v1model_head.p4"
control Step(inout bit<8> x);
control Runner(inout bit<8> x, Step s) { apply { } }  // error: parameter cannot have type control Step
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
#include "include/v1model_tail.p4"
