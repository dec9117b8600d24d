// P4_16 spec 8.3 "Operations on serializable enums": a serializable enum casts to and from
// its underlying type (also through a typedef of it) and to another enum over the same type.
#include "include/v1model_head.p4"
enum bit<8> E8 { A = 1, B = 2, C = 255 }
enum bit<8> F8 { X = 2 }
typedef bit<8> byte_t;
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        E8 e = (E8)hdr.h.a;
        F8 f = (F8)e;
        hdr.h.b = (byte_t)f;
        if (e == E8.C) { sm.egress_spec = 1; }
    }
}
#include "include/v1model_tail.p4"
