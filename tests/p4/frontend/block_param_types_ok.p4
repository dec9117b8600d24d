// P4_16 spec 7.2.11 "Parser and control blocks types" / 7.2.12 "Package types" and
// 16 "Parameterization": a control type is the type of a constructor parameter (the
// instance is handed in), and of a directionless parameter of a function; a package
// type is the type of a package's parameters.
#include "include/v1model_head.p4"
control Step(inout bit<8> x);
control AddOne(inout bit<8> x) { apply { x = x + 1; } }
control Twice(inout bit<8> x)(Step s) { apply { s.apply(x); s.apply(x); } }
package Pair(Step a, Step b);
bool unused(Step s) { return true; }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    Twice(AddOne()) twice;
    apply { twice.apply(hdr.h.a); sm.egress_spec = 1; }
}
#include "include/v1model_tail.p4"
