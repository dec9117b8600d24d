// P4_16 spec 8 "Expressions", per type: == and != on booleans, bit<W>, int<W>, error,
// enums (serializable ones also with < as their bits), headers, header unions, structs,
// stacks, tuples and varbit values; an untyped literal takes the other side's type,
// in lists element by element; a list or structure expression compared with a struct
// or header takes its type. Extern instances of a specialized generic extern compare
// too (p4c).
#include "include/v1model_head.p4"
enum Color { Red, Green }
enum bit<8> Code { Low = 1, High = 2 }
struct pair_t { bit<8> x; bool y; }
header vb_t { bit<8> len; varbit<32> data; }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<8>>(4) reg;
    apply {
        Color c = Color.Red;
        Code k = Code.Low;
        pair_t p = { x = 1, y = true };
        tuple<bit<8>, bool> tp = { 1, true };
        vb_t v1;
        vb_t v2;
        bool all = m.f == true && m.m != 8w3 && m.s == -1 && sm.parser_error != error.NoError
            && c == Color.Green && k < Code.High && k == 2 && (bit<8>)k == m.m
            && hdr.h == hdr.hs[0] && hdr.u != hdr.us[1] && hdr.hs == hdr.hs && hdr.g != {#}
            && p == { x = 1, y = true } && p == { 1, true } && hdr.h == { 1, 2, 3 }
            && tp == { m.m, m.f } && { m.m, 2 } == { 3, m.m } && { { 1 }, 2 } != { { m.m }, m.m }
            && v1.data == v2.data && reg == reg;
        if (all) { sm.egress_spec = 1; }
    }
}
#include "include/v1model_tail.p4"
