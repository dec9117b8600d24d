"""Name resolution, typing, literal inference and call resolution on small programs."""

import pytest

from softswitch.diagnostics import P4Error
from softswitch.frontend import ast
from softswitch.frontend import types as T
from softswitch.frontend.calls import CallInfo
from softswitch.frontend.checks import walk
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
    found = [n for n in walk(prog) if isinstance(n, cls) and n.loc is not None
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
    from softswitch.frontend.typecheck import describe
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
]


@pytest.mark.parametrize("src, message", REJECTS)
def test_rejections_carry_a_message_and_user_location(src, message):
    with pytest.raises(P4Error) as info:
        check(src)
    err = info.value
    assert message in str(err)
    assert err.loc is not None and err.loc.file.endswith("t.p4") and err.loc.line > 0
