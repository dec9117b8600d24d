"""Name resolution, typing, literal inference and call resolution on small programs."""

import pytest

from softswitch.diagnostics import P4Error
from softswitch.frontend import ast
from softswitch.frontend import types as T
from softswitch.frontend.calls import CallInfo
from softswitch.frontend.compiler import check_program
from softswitch.frontend.parser import parse_text

PRELUDE = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; int<8> s; }
struct headers { h_t h; h_t[3] stack; }
struct meta_t { bit<32> x; }
"""


def check(src: str) -> ast.Program:
    return check_program(parse_text(PRELUDE + src, "t.p4")).program


def user_nodes(prog: ast.Program, cls: type) -> list:
    found = [n for n in ast.walk(prog) if isinstance(n, cls) and n.loc is not None
             and n.loc.file.endswith("t.p4")]
    return sorted(found, key=lambda n: (n.loc.line, n.loc.col))


def control(body: str, locals_: str = "") -> str:
    return ("control C(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {\n"
            f"{locals_}\n apply {{\n{body}\n}}\n}}\n")


def test_literals_take_the_type_of_their_context():
    prog = check(control("hdr.h.a = hdr.h.a + 1; if (hdr.h.b == 7) { m.x = 5; }"
                         "hdr.h.s = -2;"))
    lits = {(n.loc.line, n.value): n for n in user_nodes(prog, ast.IntLiteral)}
    types = {v: str(n.type) for (_, v), n in lits.items() if not isinstance(n.type, T.IntType)}
    assert types == {1: "bit<8>", 7: "bit<16>", 5: "bit<32>", 2: "int<8>"}
    neg = [n for n in user_nodes(prog, ast.Unary) if n.op == "-"][0]
    assert neg.type == T.BitsType(8, True) and neg.const == -2


def test_shift_amounts_and_slice_bounds_stay_int():
    prog = check(control("hdr.h.b = hdr.h.b << 3; hdr.h.a = hdr.h.b[11:4];"))
    shift = [n for n in user_nodes(prog, ast.Binary) if n.op == "<<"][0]
    assert shift.type == T.BitsType(16) and isinstance(shift.right.type, T.IntType)
    sl = user_nodes(prog, ast.Slice)[0]
    assert sl.type == T.BitsType(8) and isinstance(sl.hi.type, T.IntType)


def test_names_resolve_to_their_declarations_with_shadowing():
    prog = check(control("bit<8> v = 1; { bit<16> v = 2; hdr.h.b = v; } hdr.h.a = v;",
                         "action set(bit<8> v) { hdr.h.a = v; }"))
    outer = [n for n in user_nodes(prog, ast.VarDecl) if n.name == "v"]
    uses = [n for n in user_nodes(prog, ast.PathExpr) if n.name == "v"]
    assert isinstance(uses[0].decl, ast.Param)
    assert {u.decl for u in uses[1:]} == set(outer)
    assert [u.type for u in uses[1:]] == [T.BitsType(16), T.BitsType(8)]


def test_table_apply_and_switch_on_action_run():
    prog = check(control(
        "switch (t.apply().action_run) { a1: { } default: { } }"
        " if (t.apply().hit) { hdr.h.a = 1; }",
        "action a1() {} action a2(bit<8> p) { hdr.h.a = p; }"
        " table t { key = { hdr.h.a : exact; } actions = { a1; a2; }"
        " const entries = { 1 : a2(3); _ : a1(); } default_action = a1; }"))
    calls = [n.resolved for n in user_nodes(prog, ast.Call)]
    assert [c.kind for c in calls] == ["table_apply", "table_apply"]
    sw = user_nodes(prog, ast.SwitchStmt)[0]
    assert isinstance(sw.expr.type, T.ActionEnumType)
    assert isinstance(sw.cases[0].label.decl, ast.ActionDecl)
    entries = user_nodes(prog, ast.TableEntry)
    assert entries[0].keys.type == T.BitsType(8) or entries[0].keys.const == 1
    assert entries[0].action.call.args[0].type == T.BitsType(8)


def test_generic_extern_functions_and_objects_are_inferred():
    prog = check(control(
        "hash(m.x, HashAlgorithm.crc32, 32w0, { hdr.h.a, hdr.h.b }, 32w1024);"
        " r.read(hdr.h.b, 2); r.write(1, hdr.h.b);",
        "register<bit<16>>(8) r;"))
    calls = {n.resolved.decl.name: n.resolved for n in user_nodes(prog, ast.Call)
             if isinstance(n.resolved, CallInfo)}
    h = calls["hash"]
    assert h.kind == "extern_function"
    assert h.type_args["O"] == T.BitsType(32)
    assert h.type_args["T"] == T.BitsType(32)
    assert h.type_args["D"] == T.TupleType((T.BitsType(8), T.BitsType(16)))
    read = calls["read"]
    assert read.kind == "extern_method" and read.extern.type_args == (T.BitsType(16),)
    assert read.args[1].type == T.BitsType(32)
    inst = user_nodes(prog, ast.InstanceDecl)[0]
    assert inst.instance_type == T.ExternType("register", inst.instance_type.decl,
                                              (T.BitsType(16),))


def test_named_arguments_are_put_in_parameter_order():
    prog = check("""
        bit<8> f(in bit<8> x, in bit<8> y) { return x - y; }
    """ + control("hdr.h.a = f(y = 1, x = hdr.h.a);"))
    call = [n for n in user_nodes(prog, ast.Call) if n.resolved.kind == "function"][0]
    assert [describe_arg(a) for a in call.resolved.args] == ["hdr.h.a", "1"]


def describe_arg(e: ast.Expr) -> str:
    from softswitch.frontend.checkbase import describe
    return describe(e)


def test_header_methods_and_stack_operations():
    prog = check(control("if (hdr.h.isValid()) { hdr.stack.push_front(1); "
                         "hdr.stack[0].setValid(); } hdr.h.a = (bit<8>)hdr.stack.size;"))
    kinds = [n.resolved.builtin for n in user_nodes(prog, ast.Call)]
    assert kinds == ["isValid", "push_front", "setValid"]


def test_main_package_infers_its_type_arguments():
    src = """
    parser P(packet_in p, out headers h, inout meta_t m, inout standard_metadata_t s) {
        state start { p.extract(h.h); transition select(h.h.a) { 1: accept; default: reject; } }
    }
    control V(inout headers h, inout meta_t m) { apply { } }
    control I(inout headers h, inout meta_t m, inout standard_metadata_t s) { apply { } }
    control D(packet_out p, in headers h) { apply { p.emit(h.h); } }
    V1Switch(P(), V(), I(), I(), V(), D()) main;
    """
    prog = check(src)
    main = [d for d in user_nodes(prog, ast.InstanceDecl) if d.name == "main"][0]
    assert main.instance_type.kind == "package"
    assert [str(t) for t in main.instance_type.type_args] == ["headers", "meta_t"]


REJECTS = [
    (control("hdr.h.a = nope;"), "nope: declaration not found"),
    (control("hdr.h.a = hdr.h.b;"), "cannot assign"),
    (control("hdr.h.a = true;"), "cannot assign"),
    (control("if (hdr.h.a) { }"), "does not evaluate to a bool"),
    (control("hdr.h.a = 8w1 + 16w1;"), "different types"),
    (control("bit<8> x; bit<8> x;"), "Duplicates declaration x"),
    (control("hdr.h.a = hdr.h.b[16:1];"), "greater than width"),
    (control("hdr.h.a = hdr.h.a / 0;"), "Division by zero"),
    (control("hdr.h.zz = 1;"), "not a member"),
    (control("hdr.h.a = (bit<8>)\"s\";"), "cast"),
    (control("a(1, 2);", "action a(bit<8> x) {}"), "arguments"),
    (control("t.apply();", "action a() { t.apply(); } table t { actions = { a; } }"),
     "declaration not found"),
    (control("", "action a() {} table t { actions = { a; } default_action = b; }"),
     "declaration not found"),
    (control("", "table t { key = { hdr.h.a : fuzzy; } actions = { } }"),
     "fuzzy: declaration not found"),
    ("bit<8> f(in bit<8> x) { if (x == 1) { return 2; } }", "does not return"),
    (control("3 = hdr.h.a;"), ""),
    ("bit<8> f(in bit<8> x) { return f(x); }\n" + control("hdr.h.a = f(1);"),
     "f: declaration not found"),
    ("parser P(packet_in p) { state start { transition s1; } state s1 { transition start; } }",
     "never reaches accept"),
    ("parser P(packet_in p) { state s1 { transition accept; } }", "no 'start' state"),
    (control("hdr.stack.next.a = 1;"), "can only be used in a parser"),
    ("parser P(packet_in p, out headers h) { state start { h.stack.push_front(1); "
     "transition accept; } }", "cannot be used in a parser"),
    ("control D(in headers h) { apply { h.h.setValid(); } }", "left-value"),
    (control("hdr.h.s = hdr.h.s / 2;"), "signed values"),
    (control("hdr.h.a = hdr.h.isValid() ? 1 : 2;"), "Width must be specified"),
    (control("register<bit<8>>(4) r;"), "instances cannot be in"),
    ("struct headers2 { bit<8> x; }\nconst bit<8> headers2 = 1;", "Duplicates declaration"),
    ('@name(3) action a() {}', "@name: should contain a string"),
    ('@name(".x") action a() {}\n@name(".x") action b() {}', "conflicting control plane name"),
    ("enum bit<2> E { A = 7 }", "out of bounds"),
    (control("", "action a() {} table t { key = { hdr.h.a : exact; } "
                 "actions = { a; } const entries = { 1 : a(); 1 : a(); } }"),
     "Duplicate entry keys"),
    (control("", "action a() { switch (hdr.h.a) { 1: { } } }"), "not supported in actions"),
    ("control D(packet_out p, in headers h) { apply { p.emit(h.h.a); } }",
     "argument must be a header"),
    (control("r.read(m, 1);").replace("apply {", "register<meta_t>(4) r; apply {"),
     "writing to a structure"),
]


@pytest.mark.parametrize("src, message", REJECTS)
def test_rejections_carry_a_message_and_user_location(src, message):
    with pytest.raises(P4Error) as info:
        check(src)
    err = info.value
    assert message in str(err)
    assert err.loc is not None and err.loc.file.endswith("t.p4") and err.loc.line > 0


BIG_PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
typedef bit<48> mac_t;
type bit<32> ip_t;
enum bit<16> EthT { IPV4 = 0x800, ARP = 0x806 }
enum Color { RED, GREEN }
header eth_t { mac_t dst; mac_t src; EthT type; }
header ip4_t { bit<4> ver; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id; bit<3> flags;
  bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum; ip_t src; bit<32> dst;
  varbit<320> opts; }
header vlan_t { bit<3> pcp; bit<1> cfi; bit<12> vid; bit<16> type; }
header_union u_t { eth_t e; vlan_t v; }
struct pair_t { bit<8> a; bit<8> b; }
struct headers { eth_t eth; vlan_t[2] vlans; ip4_t ip; u_t u; }
struct meta_t { bit<32> x; pair_t p; bit<16> l4; Color c; bool flag; error err; }
const int K = 4;
const bit<8> TTL = (bit<8>)K * 2;
bit<8> max8(in bit<8> a, in bit<8> b) { return a > b ? a : b; }
parser P(packet_in pk, out headers h, inout meta_t m, inout standard_metadata_t s) {
  value_set<bit<16>>(4) vs;
  bit<8> cnt = 0;
  state start {
    pk.extract(h.eth);
    m.l4 = pk.lookahead<bit<16>>();
    transition select(h.eth.type) {
      EthT.IPV4: ip; 0x8100 &&& 0xEFFF: vl; vs: accept; default: accept; }
  }
  state vl { pk.extract(h.vlans.next); cnt = cnt + 1;
    transition select(h.vlans.last.type, cnt) { (0x8100, 1): vl; (_, _): accept; } }
  state ip { pk.extract(h.ip, (bit<32>)(((bit<16>)h.ip.ihl - 5) * 32));
    verify(h.ip.ver == 4, error.PacketTooShort);
    pk.advance(8);
    transition select(h.ip.proto) { 1 .. 5: accept; default: reject; } }
}
control V(inout headers h, inout meta_t m) {
  apply { verify_checksum(h.ip.isValid(), { h.ip.ver, h.ip.ihl, h.ip.tos }, h.ip.csum,
                          HashAlgorithm.csum16); }
}
control I(inout headers h, inout meta_t m, inout standard_metadata_t s) {
  direct_counter(CounterType.packets) dc;
  counter(32w1024, CounterType.bytes) c;
  register<bit<32>>(32w16) r;
  meter(64, MeterType.packets) mt;
  action_selector(HashAlgorithm.crc16, 32w64, 32w14) sel;
  action drop() { mark_to_drop(s); }
  action fwd(bit<9> port, mac_t dst) { s.egress_spec = port; h.eth.dst = dst; dc.count(); }

  table t1 {
    key = { h.eth.dst : exact; h.ip.dst : lpm @name("dst"); h.eth.isValid() : exact; }
    actions = { fwd; drop; NoAction; }
    default_action = drop();
    size = 1024;
    counters = dc;
    const entries = { (1, 0x0a000000 &&& 0xff000000, true) : fwd(1, 2);
                      (2, _, false) : drop(); }
  }
  table t2 { key = { m.x : ternary; h.ip.proto: selector; } actions = { drop; fwd; }
             implementation = sel; }
  table t3 { key = { h.ip.src: exact; } actions = { drop; } }
  apply {
    bit<32> v;
    bit<8> mx = max8(h.ip.ttl, TTL);
    r.read(v, 3);
    r.write(1, v + 1);
    c.count((bit<32>)s.ingress_port);
    mt.execute_meter(32w1, m.x);
    hash(m.x, HashAlgorithm.crc32, 32w0, { h.eth.src, h.ip.src }, 32w65536);
    random(m.x, 0, 100);
    digest(1, { h.eth.src, s.ingress_port });
    clone3(CloneType.I2E, 5, { m.x });
    log_msg("x={}", { m.x });
    if (h.u.e.isValid() || h.u.isValid()) { h.u.v.setValid(); }
    switch (t1.apply().action_run) { fwd: { exit; } drop: default: { } }
    if (!t2.apply().hit) { t3.apply(); }
    switch (h.ip.proto) { 1: 2: { m.x = 1; } default: { } }
    switch (m.c) { Color.RED: { } }
    h.ip.ttl = h.ip.ttl |-| 1;
    h.ip.tos[3:0] = 4w0;
    m.p = { 1, 2 };
    m.p = { a = 1, b = h.ip.ttl };
    h.vlans.push_front(1);
    h.vlans[0] = { 0, 0, 1, 0x800 };
    h.eth = {#};
    m.flag = m.p == { 1, 2 } && h.ip.src == (ip_t)32w5;
    m.x = (bit<32>)(h.ip.src) ++ 16w0 > 0 ? 32w1 : 2;
    m.x = 8w1 ++ 8w2 ++ 16w3;
    m.x = m.x << 2 >> h.ip.ttl;
    m.x = (bit<32>)(int<32>)-1;
    m.err = error.NoError;
    bit<16> s16 = m.x[15:0] + (bit<16>)h.ip.ttl;
    int<8> neg = -1;
    neg = neg >> 1;
    m.l4 = (bit<16>)EthT.ARP;
    if (h.eth.type == EthT.IPV4) { return; }
    for (bit<8> i = 0; i < 4; i = i + 1) { m.x = m.x + (bit<32>)i; }
    m.x = h.ip.minSizeInBits() > 100 ? 32w1 : 32w0;
  }
}
control E(inout headers h, inout meta_t m, inout standard_metadata_t s) { apply { truncate(64); } }
control C(inout headers h, inout meta_t m) {
  apply { update_checksum(true, { h.ip.src, h.ip.dst }, h.ip.csum, HashAlgorithm.csum16); }
}
control D(packet_out pk, in headers h) { apply { pk.emit(h); pk.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_a_feature_rich_program_is_accepted_with_every_expression_typed():
    from dataclasses import fields

    prog = check_program(parse_text(BIG_PROGRAM, "big.p4")).program
    untyped = []

    def visit(n: object) -> None:
        if isinstance(n, ast.Annotation):
            return
        if isinstance(n, ast.Node):
            if isinstance(n, ast.Expr) and n.type is None:
                untyped.append((type(n).__name__, n.loc))
            for f in fields(n):
                if f.name != "loc":
                    visit(getattr(n, f.name))
        elif isinstance(n, (list, tuple)):
            for x in n:
                visit(x)

    visit(prog)
    assert untyped == []
    line = next(i for i, t in enumerate(BIG_PROGRAM.splitlines(), 1) if "random(" in t)
    lits = [n for n in ast.walk(prog) if isinstance(n, ast.IntLiteral) and n.loc is not None
            and n.loc.file == "big.p4" and n.loc.line == line and n.text == "100"]
    assert [str(n.type) for n in lits] == ["bit<32>"]  # random(m.x, 0, 100)


def test_default_initializers_with_dots():
    prog = check("""
        struct s_t { bit<8> x; bit<16> y; }
    """ + control("s_t s = { x = 1, ... }; s_t s2 = { 1, ... }; hdr.h = { 1, ... };"))
    dots = user_nodes(prog, ast.DotsExpr)
    assert [str(d.type) for d in dots] == ["s_t", "s_t", "h_t"]
    with pytest.raises(P4Error):
        check("struct s_t { bit<8> x; }\n" + control("s_t s = { z = 1, ... };"))


SECOND_PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> x; }
header b_t { bit<16> y; }
header_union ab_t { a_t a; b_t b; }
struct G<T> { T f; bit<8> g; }
header H<T> { T v; }
typedef bit<9> port_t;
@p4runtime_translation("p4.org/psa/v1/PortId_t", 32)
type bit<9> PortId_t;
struct hdrs { a_t a; a_t[4] st; ab_t u; H<bit<16>> hh; }
struct meta { G<bit<32>> g; tuple<bit<8>, bool> t; PortId_t p; bit<8> idx; }
extern Virt<T> {
  Virt();
  abstract T run(in T x);
  T call(in T x);
}
extern void myext<T>(in T a, @optional in bit<8> b);
bit<8> twice(in bit<8> v) { return v + v; }
void outs(out bit<8> o, inout bit<8> io) { o = io; io = io + 1; }
parser SubP(packet_in pk, out a_t a) { state start { pk.extract(a); transition accept; } }
parser P(packet_in pk, out hdrs h, inout meta m, inout standard_metadata_t s) {
  SubP() sub;
  state start {
    sub.apply(pk, h.a);
    transition select(pk.lookahead<a_t>().x, h.a.x) {
      (1, _): stack; (2 &&& 3, 4 .. 5): un; default: accept; }
  }
  state stack {
    pk.extract(h.st.next);
    m.idx = (bit<8>)h.st.lastIndex;
    transition select(h.st.last.x) { 0: accept; default: stack; }
  }
  state un { pk.extract(h.u.a); transition accept; }
}
control Sub(inout hdrs h, in bit<8> v) { apply { h.a.x = v; } }
control I(inout hdrs h, inout meta m, inout standard_metadata_t s) {
  Virt<bit<8>>() vv = { bit<8> run(in bit<8> x) { return x + 1; } };
  direct_meter<bit<2>>(MeterType.bytes) dm;
  register<bit<8>>(16) r4;
  Sub() sub;
  action set_p(PortId_t p) { m.p = p; s.egress_spec = (bit<9>)p; }
  action meter_act() { bit<2> c; dm.read(c); }
  action ret_early(inout bit<8> v) { if (v == 0) { return; } v = 1; }
  table tp { key = { m.p : exact; h.a.isValid(): exact @name("valid"); }
             actions = { set_p; meter_act; @defaultonly NoAction; }
             meters = dm; default_action = NoAction(); size = 32w16; }
  apply {
    bit<8> o;
    bit<8> io = 3;
    outs(o, io);
    ret_early(io);
    sub.apply(h, twice(o));
    Sub.apply(h, 8w1);
    myext(h.a.x);
    myext(h.a, 3);
    m.t = { 1, true };
    if (m.t[1]) { h.a.x = m.t[0]; }
    m.g = { f = 1, g = 2 };
    h.hh.v = (bit<16>)vv.call(h.a.x);
    h.hh.setValid();
    h.st[m.idx].x = 1;
    h.st[2] = { 5 };
    h.u.b.setValid();
    if (h.u.a.isValid()) { h.u.a = {#}; }
    h.st.pop_front(2);
    r4.write(3, 8w1);
    if (tp.apply().miss) { exit; }
    if (s.parser_error == error.PacketTooShort) { mark_to_drop(s); }
    for (bit<8> k in 0 .. 3) { h.a.x = h.a.x + k; }
    h.a.x = h.a.isValid() ? 8w1 : 0;
    h.a.x[3:0] = 0xF;
    h.a.x = (bit<8>)(h.a.minSizeInBytes() + 1);
    m.g.f = (bit<32>)(bit<1>)true;
    bool bb = (bool)1w1;

    log_msg("val {} {}", { h.a.x, m.idx });
    assert(h.a.x > 0);
  }
}
control V(inout hdrs h, inout meta m) { apply { } }
control E(inout hdrs h, inout meta m, inout standard_metadata_t s) { apply { } }
control D(packet_out pk, in hdrs h) { apply { pk.emit(h.a); pk.emit(h.st); pk.emit(h.u); } }
V1Switch(P(), V(), I(), E(), V(), D()) main;
"""


def test_generics_unions_subblocks_and_abstract_methods_are_accepted():
    prog = check_program(parse_text(SECOND_PROGRAM, "second.p4")).program
    calls = [n for n in ast.walk(prog) if isinstance(n, ast.Call) and n.loc is not None
             and n.loc.file == "second.p4"]
    kinds = {n.resolved.kind for n in calls}
    assert {"control_apply", "parser_apply", "function", "action", "extern_method",
            "extern_function", "builtin", "table_apply"} <= kinds
    opt = [n for n in calls if n.resolved.kind == "extern_function"
           and n.resolved.decl.name == "myext" and len(n.args) == 1][0]
    assert opt.resolved.args[1] is None  # omitted @optional parameter
    inst = [d for d in ast.walk(prog) if isinstance(d, ast.InstanceDecl) and d.name == "vv"][0]
    assert inst.instance_type.type_args == (T.BitsType(8),)


def test_cascading_errors_are_reported_once():
    with pytest.raises(P4Error) as info:
        check(control("r.write(1, 8w1);", "register<bit<8>, bit<4>, bit<1>>(16) r;"))
    assert len(info.value.diagnostics) == 1


def test_default_parameter_values_fill_omitted_arguments():
    prog = check("bit<8> f(in bit<8> a, in bit<8> b = 5) { return a + b; }\n"
                 + control("hdr.h.a = f(1); hdr.h.a = f(b = 2, a = 3);"))
    calls = [n.resolved for n in user_nodes(prog, ast.Call) if n.resolved.kind == "function"]
    assert [[a.const for a in c.args] for c in calls] == [[1, 5], [3, 2]]
    assert all(a.type == T.BitsType(8) for c in calls for a in c.args)


THIRD_PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
enum bit<8> E { A = 1, B = 2 }
enum Mode { M1, M2 }
header h_t { bit<8> a; bit<16> b; E e; }
header v_t { bit<8> len; varbit<64> opt; }
header_union u_t { h_t h; v_t v; }
struct inner_t { h_t[3] s; }
struct hdrs { h_t h; v_t v; inner_t in1; u_t[2] us; }
struct meta { bit<8> i; Mode mode; bit<16> csum; }
const bit<32> C = 1 << 20;
T id<T>(in T x) { return x; }
tuple<bit<8>, bit<16>> pair(in h_t h) { return { h.a, h.b }; }
parser P(packet_in pk, out hdrs h, inout meta m, inout standard_metadata_t s) {
  bit<8> cnt = 0;
  state start {
    pk.extract<h_t>(h.h);
    verify(h.h.a != 0, error.NoMatch);
    cnt = cnt + 1;
    if (h.h.a == 3) { m.i = 1; } else { m.i = 2; }
    transition select(h.h.a[3:0], h.h.e) {
      (4w1, E.A): opt;
      (_, E.B): stk;
      default: accept;
    }
  }
  state opt { pk.extract(h.v, (bit<32>)h.v.len * 8); transition accept; }
  state stk {
    pk.extract(h.in1.s.next);
    transition select(h.in1.s.last.a) { 0: accept; default: stk; }
  }
}
control I(inout hdrs h, inout meta m, inout standard_metadata_t s) {
  Checksum16() ck;
  direct_counter(CounterType.packets_and_bytes) dc;
  action a1(bit<8> v) { h.h.a = v; dc.count(); }
  action a2() { exit; }
  action a3(E e) { h.h.e = e; }
  action resub() { resubmit_preserving_field_list(0); s.mcast_grp = 1; }
  table t1 {
    key = { h.h.a & 0xF0 : ternary @name("a_hi"); h.h.b : range; m.mode : exact; }
    actions = { a1; a2; a3; resub; }
    const entries = {
      (0x10 &&& 0xF0, 1 .. 100, Mode.M1) : a1(1);
      (_, _, Mode.M2) : a3(E.B);
      (default, 5, Mode.M1) : a2() ;
    }
    counters = dc;
    support_timeout = true;
    size = 64;
  }
  table t2 { key = { h.h.b : lpm; } actions = { a1; } implementation = action_profile(32w128); }
  apply {
    h.h.a = id(h.h.a);
    h.h.b = id<bit<16>>(7);
    tuple<bit<8>, bit<16>> t = pair(h.h);
    hash(m.csum, HashAlgorithm.crc16, 16w0, t, 32w65535);
    m.csum = ck.get({ h.h.a, h.h.b });
    switch (h.h.e) { E.A: { h.h.a = 1; } E.B: { } default: { } }
    switch (m.mode) { Mode.M1: { } Mode.M2: { } }
    bit<8> x = h.in1.s[m.i].a;
    int<8> sv = -8;
    sv = sv >> 1;
    bit<32> sh = 32w1 << h.h.a;
    h.h.b = (bit<16>)h.h.a << 8;
    h.h.a = (bit<8>)(h.h.b >> 8);
    if (h.us[0].h.isValid() && !h.us[1].isValid()) { h.us[1].v.setValid(); }
    h.h.a = h.h.isValid() ? x : 8w0;
    t1.apply();
    t2.apply();
    if (C > 5) { s.egress_spec = (bit<9>)(bit<32>)C; }
  }
}
control V(inout hdrs h, inout meta m) { apply { } }
control E2(inout hdrs h, inout meta m, inout standard_metadata_t s) { apply { } }
control D(packet_out pk, in hdrs h) { apply { pk.emit(h); } }
V1Switch(P(), V(), I(), E2(), V(), D()) main;
"""


def test_generic_functions_ranges_unions_stacks_and_entries_are_typed():
    prog = check_program(parse_text(THIRD_PROGRAM, "third.p4")).program
    ident = [n.resolved for n in ast.walk(prog) if isinstance(n, ast.Call)
             and isinstance(n.resolved, CallInfo) and n.resolved.kind == "function"
             and n.resolved.decl.name == "id"]
    assert sorted(str(c.result) for c in ident) == ["bit<16>", "bit<8>"]
    entries = [n for n in ast.walk(prog) if isinstance(n, ast.TableEntry)]
    masks = [i for e in entries for i in e.keys.items
             if isinstance(i, ast.Binary) and i.op in ("&&&", "..")]
    assert {str(m.type) for m in masks} == {"bit<8>", "bit<16>"}
    assert all(str(m.left.type) == str(m.type) for m in masks)
