// P4_16 spec 7.2.12 "Package types": only packages (and constructors) take packages;
// a parser's apply parameter cannot.
#include "include/v1model_head.p4"
control Step(inout bit<8> x);
package Pipe(Step s);
parser Sub(packet_in pkt, Pipe p) { state start { transition accept; } }  // error: parameter cannot be a package
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
#include "include/v1model_tail.p4"
