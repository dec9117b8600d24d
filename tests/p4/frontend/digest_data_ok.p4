// v1model's digest<T>(receiver, data) (P4_16 spec 7.2.10 "Extern types", with
// P4Runtime's digest naming): the data may be a struct, a header, a tuple or list
// expression, or a bit<W>/bool value. P4Info names a struct, header or union digest
// after its type, a digest whose type is written by name (a typedef) after that name,
// and any other digest_N in call order.
#include "include/v1model_head.p4"
typedef tuple<bit<8>, bit<16>> pair_t;
struct learn_t { bit<8> a; bit<9> port; }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action learn() { digest(1, { hdr.h.a, sm.ingress_port }); }
    apply {
        learn();
        digest(1, hdr.h);
        digest<pair_t>(1, { hdr.h.b, hdr.h.c });
        digest<bool>(2, hdr.h.a == 1);
        digest<learn_t>(1, { hdr.h.a, sm.ingress_port });
        sm.egress_spec = 1;
    }
}
#include "include/v1model_tail.p4"
