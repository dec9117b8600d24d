// P4_16 spec 8.11.1 "Explicit casts": an enum without an underlying type has no
// representation, so nothing casts to it, not even its own values.
#include "include/v1model_head.p4"
enum Color { Red, Green }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        Color c = (Color)Color.Red;  // error: cast not supported
        if (c == Color.Green) { sm.egress_spec = 1; }
    }
}
#include "include/v1model_tail.p4"
