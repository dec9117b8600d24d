// P4_16 spec 7.2.11 "Parser and control blocks types": a parameter's type may be a
// control *type*, never a declared control (a declaration, not a type).
#include "include/v1model_head.p4"
control AddOne(inout bit<8> x) { apply { x = x + 1; } }
bool check(AddOne c) { return true; }  // error: parameter cannot have type control AddOne
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
#include "include/v1model_tail.p4"
