// p4c's type inference casts serializable enum operands of arithmetic and bitwise
// operators to the enum's underlying type (typeCheckExpr.cpp, binaryArith), also when
// both operands are of the enum type: the result is a bit<8>, not an E8.
#include "../frontend/include/v1model_head.p4"
enum bit<8> E8 { A = 1, B = 2, C = 255 }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        E8 e = (E8)hdr.h.a;
        hdr.h.b = e & E8.B;
        hdr.h.c = (e ^ E8.C) ++ (e + E8.A);
        if ((e & E8.B) == E8.B) {
            sm.egress_spec = 1;
        } else {
            sm.egress_spec = 2;
        }
        hdr.h.a = (e / E8.B) | (E8.A | E8.B);
    }
}
#include "../frontend/include/v1model_tail.p4"
