// The common top of the front-end rule programs: headers, metadata and a parser.
// A program includes this, declares control I (the ingress) and includes
// v1model_tail.p4. The parser extracts h (4 bytes); the deparser emits h.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<16> c; }
header g_t { bit<16> x; }
header_union u_t { h_t h; g_t g; }
struct headers { h_t h; g_t g; u_t u; u_t[2] us; h_t[2] hs; }
struct meta_t { bit<8> m; bit<16> n; int<8> s; bool f; bit<1> i; }

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
