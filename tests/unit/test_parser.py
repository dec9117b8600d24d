"""One small program per tricky construct; each asserts the AST shape the parser builds."""

import pytest

from softswitch.diagnostics import P4Error
from softswitch.frontend import ast
from softswitch.frontend.parser import parse_text

PRELUDE = """
extern packet_in { void extract<T>(out T hdr); }
header h_t { bit<8> f; bit<16> g; }
struct m_t { bit<8> a; }
enum E { A, B }
"""


def parse(src: str) -> ast.Program:
    return parse_text(src, filename="t.p4")


def decls(src: str) -> list[ast.Node]:
    return parse(PRELUDE + src).decls[4:]


def one(src: str) -> ast.Node:
    (d,) = decls(src)
    return d


def apply_stmts(body: str, locals_: str = "") -> list[ast.Stmt]:
    ctrl = one(f"control c(inout h_t h, inout m_t m) {{ {locals_} apply {{ {body} }} }}")
    assert isinstance(ctrl, ast.ControlDecl)
    return ctrl.apply.stmts


def expr(text: str) -> ast.Expr:
    (stmt,) = apply_stmts(f"m.a = {text};")
    assert isinstance(stmt, ast.AssignStmt)
    return stmt.value


# --- types and type declarations ---------------------------------------------------

def test_typedef_newtype_and_generic_struct():
    td, nt, gs, use = decls("typedef bit<9> port_t; type bit<32> id_t;"
                            "struct pair<T> { T first; T second; }"
                            "const pair<bit<8>> P = { first = 1, second = 2 };")
    assert isinstance(td, ast.TypedefDecl) and not td.newtype
    assert isinstance(td.type_ref, ast.BitTypeRef) and td.type_ref.width.value == 9
    assert isinstance(nt, ast.TypedefDecl) and nt.newtype
    assert isinstance(gs, ast.StructDecl) and [p.name for p in gs.type_params] == ["T"]
    assert isinstance(gs.fields[0].type_ref, ast.NamedTypeRef)
    assert isinstance(use.type_ref, ast.NamedTypeRef) and use.type_ref.name == "pair"
    assert isinstance(use.type_ref.type_args[0], ast.BitTypeRef)
    assert isinstance(use.value, ast.StructExpr) and [f for f, _ in use.value.fields] == [
        "first", "second"]


def test_enums_error_match_kind():
    se, er, mk = decls("enum bit<8> SE { X = 1, Y = 0x2, }"
                       "error { Oops, Bad } match_kind { fancy }")
    assert isinstance(se, ast.EnumDecl) and isinstance(se.underlying, ast.BitTypeRef)
    assert [(m.name, m.value.value) for m in se.members] == [("X", 1), ("Y", 2)]
    assert isinstance(er, ast.ErrorDecl) and [m.name for m in er.members] == ["Oops", "Bad"]
    assert isinstance(mk, ast.MatchKindDecl) and mk.members[0].name == "fancy"


def test_header_stacks_tuples_lists_varbit():
    s = one("struct s { h_t[4] stack; tuple<bit<8>, bool> t; varbit<32> v; int<4> i;"
            " int big; bit b; list<bit<8>> l; }")
    types = [f.type_ref for f in s.fields]
    assert isinstance(types[0], ast.StackTypeRef) and types[0].size.value == 4
    assert isinstance(types[1], ast.TupleTypeRef) and len(types[1].elements) == 2
    assert isinstance(types[2], ast.VarbitTypeRef)
    assert isinstance(types[3], ast.BitTypeRef) and types[3].signed
    assert isinstance(types[4], ast.IntTypeRef)
    assert isinstance(types[5], ast.BitTypeRef) and types[5].width is None
    assert isinstance(types[6], ast.ListTypeRef)


def test_header_union_and_nested_generic_closing_angles():
    hu, _, c = decls("header_union u_t { h_t a; h_t b; }"
                     "extern R<T> { R(bit<32> n); }"
                     "control c() { R<bit<8>>(4) r; R<R<bit<8>>>(2) rr; apply {} }")
    assert isinstance(hu, ast.HeaderUnionDecl)
    r, rr = c.locals
    assert isinstance(r, ast.InstanceDecl) and r.type_ref.type_args[0].width.value == 8
    inner = rr.type_ref.type_args[0]
    assert inner.name == "R" and isinstance(inner.type_args[0], ast.BitTypeRef)


def test_typedef_of_derived_type_declares_both():
    hd, td, sd, nt = decls("typedef header x_t { bit<8> f; } xd_t;"
                           "type struct y_t { bit<8> f; } yd_t;")
    assert isinstance(hd, ast.HeaderDecl) and hd.name == "x_t"
    assert isinstance(td, ast.TypedefDecl) and td.type_ref.name == "x_t" and not td.newtype
    assert isinstance(sd, ast.StructDecl) and nt.newtype and nt.type_ref.name == "y_t"


# --- externs, parser/control/package types, instantiation ----------------------------

def test_extern_object_constructor_overloads_generic_abstract():
    ext = one("extern Reg<T, I> { Reg(bit<32> size); Reg(bit<32> size, T init);"
              " void read(out T v, in I i); R get<R>(in R x); abstract T cb(in T x); }")
    assert isinstance(ext, ast.ExternDecl) and [p.name for p in ext.type_params] == ["T", "I"]
    ctors = [m for m in ext.methods if m.return_type is None]
    assert len(ctors) == 2 and all(m.name == "Reg" for m in ctors)
    get = next(m for m in ext.methods if m.name == "get")
    assert [p.name for p in get.type_params] == ["R"]
    assert next(m for m in ext.methods if m.name == "cb").abstract


def test_extern_function_with_type_param_return():
    f = one("extern T pick<T>(in bool c, in T a, in T b);")
    assert isinstance(f, ast.ExternFunctionDecl) and f.return_type.name == "T"
    assert [p.direction for p in f.params] == ["in", "in", "in"]


def test_parser_control_package_types_and_main():
    p, c, pkg, pi, ci, main = decls(
        "parser P<H>(packet_in b, out H h); control C<H>(inout H h);"
        "package Pkg<H>(P<H> p, C<H> c = ...);".replace(" = ...", "") +
        "parser MyP(packet_in b, out h_t h) { state start { transition accept; } }"
        "control MyC(inout h_t h)(bit<8> k) { apply {} }"
        "Pkg(MyP(), MyC(8w1)) main;")
    assert isinstance(p, ast.ParserTypeDecl) and p.type_params[0].name == "H"
    assert isinstance(c, ast.ControlTypeDecl)
    assert isinstance(pkg, ast.PackageTypeDecl) and pkg.params[0].type_ref.type_args
    assert isinstance(ci, ast.ControlDecl) and ci.ctor_params[0].name == "k"
    assert isinstance(main, ast.InstanceDecl) and main.name == "main"
    arg0 = main.args[0].value
    assert isinstance(arg0, ast.Call) and isinstance(arg0.target, ast.TypeNameExpr)
    assert arg0.target.type_ref.name == "MyP"


def test_instantiation_with_initializer_block():
    c = decls("extern V { V(); abstract bit<16> f(in bit<16> x); }"
              "control c() { V() v = { bit<16> f(in bit<16> x) { return x + 1; } };"
              " apply {} }")[1]
    inst = c.locals[0]
    assert isinstance(inst, ast.InstanceDecl) and inst.initializer is not None
    (fn,) = inst.initializer
    assert isinstance(fn, ast.FunctionDecl) and fn.name == "f"


def test_constructor_call_with_type_args_as_argument():
    c = decls("extern R<T, I> { R(bit<32> n); } extern Wrap { Wrap(R<bit<8>, bit<32>> r); }"
              "control c() { Wrap(R<bit<8>, bit<32>>(16)) w; apply {} }")[2]
    inst = c.locals[0]
    call = inst.args[0].value
    assert isinstance(call, ast.Call) and isinstance(call.target, ast.TypeNameExpr)
    ref = call.target.type_ref
    assert ref.name == "R" and len(ref.type_args) == 2 and call.args[0].value.value == 16


def test_params_directions_defaults_annotations():
    a = one("action a(in bit<8> x, out bit<8> y, inout bit<8> z, bit<8> w,"
            " @optional bit<8> o = 3) {}")
    assert [p.direction for p in a.params] == ["in", "out", "inout", "", ""]
    assert a.params[4].default.value == 3 and ast.annotation(a.params[4], "optional")


def test_function_declaration_generic():
    f = one("T id<T>(in T x) { return x; }")
    assert isinstance(f, ast.FunctionDecl) and f.type_params[0].name == "T"
    assert isinstance(f.body.stmts[0], ast.ReturnStmt)


# --- parsers --------------------------------------------------------------------------

def test_parser_states_select_keysets():
    p = one("""
    parser p(packet_in b, out h_t h) {
        value_set<bit<8>>(4) vs;
        bit<8> tmp;
        state start {
            b.extract(h);
            transition select(h.f, h.g) {
                (1, 0x800): next;
                (2 &&& 3, 1 .. 5): next;
                (vs, _): accept;
                (default, 7): reject;
                default: accept;
            }
        }
        state next { transition select(h.f) { 0 &&& 0xF0: accept; _: reject; } }
        state last { }
    }""")
    assert isinstance(p, ast.ParserDecl)
    assert isinstance(p.locals[0], ast.ValueSetDecl) and p.locals[0].size.value == 4
    start, nxt, last = p.states
    sel = start.transition
    assert isinstance(sel, ast.SelectExpr) and len(sel.keys) == 2
    ks = [c.keyset for c in sel.cases]
    assert isinstance(ks[0], ast.ListExpr) and [i.value for i in ks[0].items] == [1, 0x800]
    assert ks[1].items[0].op == "&&&" and ks[1].items[1].op == ".."
    assert isinstance(ks[2].items[1], ast.DontCareExpr)
    assert isinstance(ks[3].items[0], ast.DefaultExpr)
    assert isinstance(ks[4], ast.DefaultExpr) and sel.cases[4].state == "accept"
    assert nxt.transition.cases[0].keyset.op == "&&&"
    assert isinstance(nxt.transition.cases[1].keyset, ast.DontCareExpr)
    assert last.transition is None


def test_parser_state_rejects_return():
    with pytest.raises(P4Error, match="unexpected `return`"):
        parse("parser p() { state start { return; } }")


# --- controls and tables ---------------------------------------------------------------

def test_table_properties():
    c = one("""
    control c(inout h_t h) {
        action a(bit<8> v) { h.f = v; }
        action b() {}
        table t {
            key = { h.f : exact @name("f"); h.g & 0xF : ternary; }
            actions = { a; @defaultonly b(); }
            const default_action = a(1);
            const entries = {
                1 &&& 0xF : a(2);
                priority = 10 : (2, _) : b();
                @priority(3) 5 : a(3) @foo;
            }
            size = 1024;
            implementation = action_profile(32w128);
            largest_priority_wins = false;
        }
        apply { t.apply(); }
    }""")
    t = c.locals[2]
    assert isinstance(t, ast.TableDecl)
    key = t.prop("key").value
    assert [k.match_kind for k in key] == ["exact", "ternary"]
    assert key[0].annotations[0].name == "name" and key[1].expr.op == "&"
    acts = t.prop("actions").value
    assert [a.name.name for a in acts] == ["a", "b"]
    assert acts[1].annotations[0].name == "defaultonly"
    da = t.prop("default_action")
    assert da.is_const and da.value.name.name == "a" and da.value.args[0].value.value == 1
    ents = t.prop("entries")
    assert ents.is_const and len(ents.value) == 3 and all(e.is_const for e in ents.value)
    assert ents.value[0].keys.op == "&&&"
    assert ents.value[1].priority.value == 10 and isinstance(ents.value[1].keys, ast.ListExpr)
    assert ents.value[2].annotations[0].name == "priority"
    assert [a.name for a in ents.value[2].annotations] == ["priority", "foo"]
    assert t.prop("size").value.value == 1024
    impl = t.prop("implementation").value
    assert isinstance(impl, ast.Call) and impl.target.name == "action_profile"
    assert isinstance(t.prop("largest_priority_wins").value, ast.BoolLiteral)


def test_control_locals_and_switch_fallthrough():
    c = one("""
    control c(inout h_t h) {
        action a() {} action b() {}
        table t { actions = { a; b; } }
        const bit<8> K = 3;
        bit<8> v = 1;
        apply {
            switch (t.apply().action_run) {
                a:
                b: { h.f = K; }
                default: { exit; }
            }
            if (t.apply().hit) { return; } else if (v == 1) { v = 2; } else ;
        }
    }""")
    kinds = [type(d).__name__ for d in c.locals]
    assert kinds == ["ActionDecl", "ActionDecl", "TableDecl", "ConstDecl", "VarDecl"]
    sw, iff = c.apply.stmts
    assert isinstance(sw, ast.SwitchStmt)
    assert sw.cases[0].body is None and isinstance(sw.cases[0].label, ast.PathExpr)
    assert isinstance(sw.cases[2].label, ast.DefaultExpr)
    assert isinstance(sw.cases[2].body.stmts[0], ast.ExitStmt)
    assert isinstance(sw.expr, ast.Member) and sw.expr.name == "action_run"
    assert isinstance(iff.otherwise, ast.IfStmt)
    assert isinstance(iff.otherwise.otherwise, ast.EmptyStmt)


# --- statements -------------------------------------------------------------------------

def test_for_loops_break_continue():
    s1, s2 = apply_stmts("""
        for (bit<8> i = 0, bit<8> j = 1; i < 4; i = i + 1, j = j << 1) {
            if (i == 2) { continue; }
            break;
        }
        for (bit<8> k in 1 .. 3) { m.a = m.a + k; }
    """)
    assert isinstance(s1, ast.ForStmt) and len(s1.init) == 2 and len(s1.update) == 2
    assert isinstance(s1.init[0], ast.VarDecl) and s1.cond.op == "<"
    assert isinstance(s1.body.stmts[0].then.stmts[0], ast.ContinueStmt)
    assert isinstance(s1.body.stmts[1], ast.BreakStmt)
    assert isinstance(s2, ast.ForInStmt) and s2.var.name == "k"
    assert s2.collection.op == ".."


def test_compound_assignment_desugars():
    (s,) = apply_stmts("m.a += 1; ".strip())
    assert isinstance(s, ast.AssignStmt) and s.value.op == "+"
    assert isinstance(s.value.left, ast.Member) and s.value.left is not s.target
    (s,) = apply_stmts("m.a >>= 2;")
    assert s.value.op == ">>"


def test_declarations_in_blocks():
    stmts = apply_stmts("h_t tmp; E e = E.A; bit<8>[2] arr; error err = error.NoError;"
                        " tuple<bit<8>, bool> tp = {1, true};")
    assert all(isinstance(s, ast.VarDecl) for s in stmts)
    assert isinstance(stmts[1].init, ast.Member)
    assert isinstance(stmts[1].init.expr, ast.TypeNameExpr)
    assert isinstance(stmts[2].type_ref, ast.StackTypeRef)
    assert isinstance(stmts[3].init.expr.type_ref, ast.ErrorTypeRef)
    assert isinstance(stmts[4].init, ast.ListExpr)


def test_annotated_block_and_unstructured_annotations():
    (blk,) = apply_stmts('@atomic { m.a = 1; }')
    assert isinstance(blk, ast.BlockStmt) and blk.annotations[0].name == "atomic"
    d = one('@name("x.y") @id(3) @tag[k = 1, j = "s"] @free(a b, c) @noargs\n'
            "const bit<8> K = 1;")
    name, id_, tag, free, noargs = d.annotations
    assert name.exprs[0].value == "x.y" and name.body == '"x.y"'
    assert id_.exprs[0].value == 3
    assert tag.structured and set(tag.kv) == {"k", "j"}
    assert free.exprs is None and free.body == "a b, c"
    assert noargs.body == "" and noargs.exprs is None


def test_structured_annotations_are_parsed_strictly():
    d = one("@empty[] @list[1, \"a\", true] const bit<8> K = 1;")
    assert d.annotations[0].structured and d.annotations[0].exprs == []
    assert [e.value for e in d.annotations[1].exprs] == [1, "a", True]
    with pytest.raises(P4Error, match="unexpected integer `5`") as exc:
        parse("@mix[key=4, 5]\nconst bit<8> K = 1;")
    assert (exc.value.loc.line, exc.value.loc.col) == (1, 13)
    with pytest.raises(P4Error, match="Duplicates declaration k"):
        parse("@twice[k=1, k=2]\nconst bit<8> K = 1;")


def test_pragma_annotation_runs_to_end_of_line():
    d = one("@pragma my_pragma 1 2\nconst bit<8> K = 1;")
    (a,) = d.annotations
    assert a.name == "my_pragma" and a.body == "1 2"


def test_free_form_annotation_accepts_any_token():
    d = one("@scrabble(what's 6 x 9 ? $ 42)\nconst bit<8> K = 1;")
    assert d.annotations[0].body == "what's 6 x 9 ? $ 42"
    d = one("@odd(a[ (b } c) ]) const bit<8> K = 1;")  # only parentheses must balance
    assert d.annotations[0].body == "a[ (b } c) ]"


def test_p4runtime_translation_body_like_p4c():
    t1, t2, t3 = decls('@p4runtime_translation("u/a", 32) type bit<9> a_t;'
                       '@p4runtime_translation("u/b", bit<12>) type bit<9> b_t;'
                       '@p4runtime_translation("u/c", string) type bit<9> c_t;')
    assert [e.value for e in t1.annotations[0].exprs] == ["u/a", 32]
    assert [e.value for e in t2.annotations[0].exprs] == ["u/b", 12]
    assert [e.value for e in t3.annotations[0].exprs] == ["u/c", ""]
    with pytest.raises(P4Error, match="unexpected `bool`") as exc:
        parse('@p4runtime_translation("u", bool) type bit<9> a_t;')
    assert exc.value.loc.col == 29


def test_annotation_bodies_p4c_parses():
    with pytest.raises(P4Error, match="@hidden should not have any arguments"):
        parse("@hidden(1) const bit<8> K = 1;")
    with pytest.raises(P4Error, match="@name"):
        parse('@name("a", "b") const bit<8> K = 1;')
    d = one('@pkginfo(name = "x", version = "1") const bit<8> K = 1;')
    assert set(d.annotations[0].kv) == {"name", "version"}
    d = one("@unknown(bit<8> is fine here) const bit<8> K = 1;")
    assert d.annotations[0].exprs is None


def test_objects_hide_type_names_like_p4c():
    # The parameter `m_t` hides the struct type inside the control: `m_t.a` is a field.
    c = one("control c(inout m_t m_t) { apply { m_t.a = 1; } }")
    (s,) = c.apply.stmts
    assert isinstance(s.target.expr, ast.PathExpr) and s.target.expr.name == "m_t"
    # ... but only there: outside, `m_t` is a type again.
    c2 = decls("control c(inout m_t m_t) { apply {} }"
               "control d(inout m_t m) { apply { m_t x; x.a = m.a; } }")[1]
    assert isinstance(c2.apply.stmts[0], ast.VarDecl)


def test_extern_forward_declaration_declares_a_type():
    (d,) = decls("extern Fwd; control c() { Fwd() f; apply {} }")
    assert isinstance(d, ast.ControlDecl) and isinstance(d.locals[0], ast.InstanceDecl)


def test_direct_application_of_types():
    c = decls("control Sub<T>(inout T x) { apply {} }"
              "control c(inout m_t m) { apply { Sub<m_t>.apply(m); } }")[1]
    (s,) = c.apply.stmts
    assert isinstance(s, ast.CallStmt) and isinstance(s.call.target, ast.Member)
    tne = s.call.target.expr
    assert isinstance(tne, ast.TypeNameExpr) and tne.type_ref.type_args[0].name == "m_t"


def test_statements_start_with_an_lvalue():
    with pytest.raises(P4Error, match="unexpected `\\+`"):
        parse(PRELUDE + "control c(inout m_t m) { apply { m.a + 1 = 2; } }")
    with pytest.raises(P4Error, match="unexpected `\\(`"):
        parse(PRELUDE + "control c(inout m_t m) { apply { (m.a) = 2; } }")


def test_default_initializer_dots():
    stmts = apply_stmts("m = {a = 1, ...}; tuple<bit<8>, bool> t = {1, ...}; m = ...;")
    assert stmts[0].value.fields[-1][0] == "..."
    assert isinstance(stmts[0].value.fields[-1][1], ast.DotsExpr)
    assert isinstance(stmts[1].init.items[-1], ast.DotsExpr)
    assert isinstance(stmts[2].value, ast.DotsExpr)
    with pytest.raises(P4Error, match="must be the last element"):
        apply_stmts("tuple<bit<8>, bool> t = {..., true};")


# --- expressions -------------------------------------------------------------------------

def test_precedence_follows_p4_not_c():
    e = expr("1 + 2 * 3 == 7 && 4 | 1 == 5")
    assert e.op == "&&"
    assert e.left.op == "==" and e.left.left.op == "+" and e.left.left.right.op == "*"
    # `|` binds tighter than `==` in P4.
    assert e.right.op == "==" and e.right.left.op == "|"


def test_shifts_ternary_concat_saturating():
    e = expr("m.a >> 2 << 1")
    assert e.op == "<<" and e.left.op == ">>"
    e = expr("m.a > 1 ? 8w1 ++ 8w2 : 16w3 |+| 16w4")
    assert isinstance(e, ast.Ternary) and e.cond.op == ">"
    assert e.then.op == "++" and e.otherwise.op == "|+|"


def test_unary_casts_slices_indices():
    e = expr("(bit<8>) -m.a")
    assert isinstance(e, ast.Cast) and isinstance(e.to, ast.BitTypeRef)
    assert isinstance(e.expr, ast.Unary) and e.expr.op == "-"
    e = expr("(m_t) {a = 1}")
    assert isinstance(e, ast.Cast) and isinstance(e.expr, ast.StructExpr)
    e = expr("(m.a) - 1")  # a parenthesized expression, not a cast
    assert isinstance(e, ast.Binary) and e.op == "-"
    e = expr("h.g[7:0]")
    assert isinstance(e, ast.Slice) and e.hi.value == 7 and e.lo.value == 0
    e = expr("h.g[8 +: 4]")
    assert isinstance(e, ast.Slice) and e.lo.value == 8 and e.hi.op == "-"


def test_literals_and_special_expressions():
    stmts = apply_stmts('h.setInvalid(); h = {#}; m = {a = 8w5}; m.a = ~4s3 ? 1 : 0;'
                        ' bool t = true; m.a = this.x;')
    assert isinstance(stmts[0], ast.CallStmt)
    assert isinstance(stmts[1].value, ast.InvalidHeaderExpr)
    lit = stmts[2].value.fields[0][1]
    assert (lit.value, lit.width, lit.signed, lit.text) == (5, 8, False, "8w5")
    assert isinstance(stmts[4].init, ast.BoolLiteral)
    assert isinstance(stmts[5].value.expr, ast.ThisExpr)


def test_generic_calls_named_and_dontcare_arguments():
    (s1, s2, s3) = apply_stmts("f<bit<8>>(m.a); g(x = 1, y = _); h.minSizeInBits();")
    call = s1.call
    assert isinstance(call.target, ast.PathExpr) and isinstance(call.type_args[0],
                                                                 ast.BitTypeRef)
    args = s2.call.args
    assert [a.name for a in args] == ["x", "y"] and isinstance(args[1].value, ast.DontCareExpr)
    assert isinstance(s3.call.target, ast.Member)


def test_less_than_is_not_a_type_argument():
    e = expr("m.a < 3 && h.f > 2")
    assert e.op == "&&" and e.left.op == "<" and e.right.op == ">"


def test_type_name_expressions():
    e = expr("h_t.minSizeInBits()")
    assert isinstance(e.target.expr, ast.TypeNameExpr)
    e = expr(".E.A == E.B ? 1 : 0")
    assert e.cond.left.expr.type_ref.top_level


def test_top_level_path():
    e = expr(".m_const")
    assert isinstance(e, ast.PathExpr) and e.top_level


def test_every_node_has_a_location():
    prog = parse(PRELUDE + """
    control c(inout h_t h) {
        action a(bit<8> v) { h.f = v + (bit<8>) 1; }
        table t { key = { h.f : exact; } actions = { a; } }
        apply { if (t.apply().hit) { h.g = h.g[15:8] ++ 8w0; } }
    }""")

    def walk(node, seen):
        if id(node) in seen:
            return
        seen.add(id(node))
        if isinstance(node, ast.Node):
            assert node.loc is not None, type(node).__name__
            assert node.loc.file == "t.p4" and node.loc.line > 0
            for v in vars(node).values():
                walk(v, seen)
        elif isinstance(node, (list, tuple)):
            for v in node:
                walk(v, seen)
        elif isinstance(node, dict):
            for v in node.values():
                walk(v, seen)

    walk(prog, set())


# --- errors ---------------------------------------------------------------------------------

@pytest.mark.parametrize("src, line, col, fragment", [
    ("const bit<8> x = ;", 1, 18, "unexpected `;`"),
    ("header h { bit<8> f }", 1, 21, "unexpected `}`"),
    ("control c() {\n apply { x = 1 }\n}", 2, 16, "unexpected `}`"),
    ("struct s { _ f; }", 1, 12, "unexpected `_`"),
    ("const bit<8> x = 1 $ 2;", 1, 20, "character `$`"),
    ("control c() { apply { h = { # }; } }", 1, 29, "unexpected character `#`"),
    ("const bit<32> x = bit;", 1, 19, "unexpected `bit`"),
    ("control c() { apply {", 1, 22, "end of file"),
    ("control c() { bit<8> x; }", 1, 25, "expected an `apply` block"),
    ("parser p() { bit<8> x; }", 1, 24, "expected `state`"),
    ("parser p() { state s {} bit<8> x; }", 1, 25, "expected `state`"),
    ("control c() { table t { } apply {} }", 1, 25, "unexpected `}`"),
    ("@a error { E1 }", 1, 4, "unexpected `error`"),
    ("control c() { table t { actions = { x.y; } } apply {} }", 1, 38, "unexpected `.`"),
    ("typedef bit<8> T; const T x = T + 1;", 1, 33, "after the type name"),
])
def test_syntax_errors_are_located(src, line, col, fragment):
    with pytest.raises(P4Error) as exc:
        parse(src)
    err = exc.value
    assert (err.loc.file, err.loc.line, err.loc.col) == ("t.p4", line, col)
    assert "syntax error" in err.message and fragment in err.message


@pytest.mark.parametrize("src, line", [
    ("struct s {\n bit<8> a;\n bit<8> a;\n}", 3),
    ("action a(bit<8> x,\n bit<8> x) {}", 2),
    ("enum E2 { A,\n A }", 2),
    ("extern T f<T,\n T>();", 2),
    ("control c() {\n bit<8> v;\n apply { bit<8> w;\n bit<8> w; } }", 4),
    ("control c() {\n bit<8> v;\n bit<8> v;\n apply {} }", 3),
    ("control c() { action a() {}\n table t { actions = { a; \n a; } } apply {} }", 3),
    ("control c() { table t { size = 1;\n size = 2; } apply {} }", 2),
    ("const m_t K = { a = 1,\n a = 2 };", 2),
])
def test_duplicate_names_in_one_list_are_rejected_while_parsing(src, line):
    # p4c reports these from its parser (IndexedVector), before any other check.
    with pytest.raises(P4Error, match="Duplicates declaration") as exc:
        parse(PRELUDE + "\n" * 3 + src)
    assert exc.value.loc.line == PRELUDE.count("\n") + 3 + line


def test_deep_nesting_is_a_clean_error_or_parses():
    deep = "const bit<8> x = " + "(" * 3000 + "1" + ")" * 3000 + ";"
    (c,) = parse(deep).decls
    assert c.value.value == 1
    with pytest.raises(P4Error, match="nested too deeply"):
        parse("const bit<8> x = " + "(" * 20000 + "1" + ")" * 20000 + ";")


def test_truncated_inline_program_raises_only_p4error():
    # Corpus-independent twin of the corpus robustness test: every prefix of a program
    # either parses or fails with a located P4Error (never a Python exception).
    from softswitch.frontend.parser import parse_preprocessed
    from softswitch.frontend.preprocess import Preprocessed, preprocess_text

    pre = preprocess_text(PRELUDE + """
    control c(inout h_t h)(bit<8> k) {
        action a(bit<8> v) { h.f = v + (bit<8>) k; }
        table t { key = { h.f : exact; } actions = { a; } const entries = { 1 : a(2); } }
        apply { switch (t.apply().action_run) { a: {} default: { h.g[7:0] = 8w1; } } }
    }""", filename="t.p4")
    for cut in range(0, len(pre.text), 7):
        try:
            parse_preprocessed(Preprocessed(pre.text[:cut], pre.lines))
        except P4Error as exc:
            assert exc.loc is not None
