// P4_16 spec 6.8 "Calling convention": a direction copies a value in or out; a parser
// or control is no such value, so a parameter of such a type has no direction.
#include "include/v1model_head.p4"
parser Sub(packet_in pkt);
bool check(in Sub p) { return true; }  // error: parameter cannot have type parser Sub
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
#include "include/v1model_tail.p4"
