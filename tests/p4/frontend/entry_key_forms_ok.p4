// P4_16 spec 14.2.1.4 "Entries" and 8.15 "Operations on sets": each match kind with the
// keysets it takes; a value too wide for its key is truncated (p4c warns), an all-ones
// mask is the value itself, and a range of one value is that value.
#include "include/v1model_head.p4"
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { hdr.h.a : exact; hdr.h.b : optional; hdr.h.c : range; }
        actions = { fwd; }
        const entries = {
            (0x01 &&& 0xff, _, 5 .. 5)        : fwd(1);
            (0x102, 0x01, 0 .. 0xffff)        : fwd(2);
            (0x03, 0x02 &&& 0xff, 16w1 .. 9)  : fwd(3);
        }
    }
    table u {
        key = { hdr.h.a : lpm; hdr.h.b : ternary; }
        actions = { fwd; }
        const entries = {
            (0x10 &&& 0xf0, 0x01 &&& 0x0f) : fwd(4);
            (_, _)                          : fwd(5);
        }
    }
    apply { if (!t.apply().hit) { u.apply(); } }
}
#include "include/v1model_tail.p4"
