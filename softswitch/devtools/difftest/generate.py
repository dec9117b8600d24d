"""Seeded small whole programs, each exercising a few areas of the language at random.

Mutating the corpus' programs only reaches what those programs already use. These
programs are built from *pieces*: each piece is one language area (casts, slices,
compile-time evaluation, switch statements, generics, header stacks and unions,
abstract methods, parser value sets, comparisons, select keysets, table entries,
tuples, shifts) with its types, widths, values and forms drawn at random, near the
edges of what the spec allows, so that about as many are wrong as right. p4test
decides which; the differential run checks that softswitch decides the same.

A program is a fixed v1model skeleton (headers, a union, stacks, metadata, a parser,
an ingress control ``I``) with one to three pieces spliced into it: top-level
declarations, parser locals and states, control locals and apply statements.
:func:`programs` yields them deterministically from a seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from softswitch.devtools.difftest.mutate import Mutant

_HEAD = """#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<16> c; }
header g_t { bit<16> x; }
header_union u_t { h_t h; g_t g; }
struct headers { h_t h; g_t g; u_t u; u_t[2] us; h_t[3] hs; }
struct meta_t { bit<8> m; bit<16> n; int<8> s; bool f; bit<1> i; bit<32> w; }
enum bit<8> E8 { A = 1, B = 2, C = 255 }
enum Color { Red, Green }
typedef bit<8> T8;
type bit<8> N8;
"""

_TAIL = """
control VC(inout headers hdr, inout meta_t m) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


@dataclass
class Piece:
    """One language area's contribution to a program."""

    what: str
    top: str = ""             # top-level declarations
    parser_locals: str = ""   # parser P's locals (value sets, variables)
    start: str = ""           # statements of state start, before its transition
    transition: str = ""      # state start's transition (default: accept)
    states: str = ""          # further parser states
    locals: str = ""          # control I's locals (actions, tables, instances)
    apply: str = ""           # control I's apply statements


@dataclass
class _Gen:
    rng: random.Random
    n: int = 0
    names: list[str] = field(default_factory=list)

    def fresh(self, stem: str) -> str:
        self.n += 1
        return f"{stem}{self.n}"

    def pick(self, *options: str) -> str:
        return self.rng.choice(options)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p


# Typed expressions the pieces draw from: (type as written, expression).
_VALUES = (
    ("bit<8>", "m.m"), ("bit<16>", "m.n"), ("int<8>", "m.s"), ("bool", "m.f"),
    ("bit<1>", "m.i"), ("bit<32>", "m.w"), ("bit<8>", "8w3"), ("int<8>", "(-8s3)"),
    ("int", "3"), ("int", "300"), ("int", "-1"), ("bool", "true"), ("E8", "E8.B"),
    ("Color", "Color.Red"), ("error", "error.NoError"), ("T8", "(T8)m.m"),
    ("N8", "(N8)m.m"), ("bit<8>", "hdr.h.a"), ("bit<16>", "hdr.h.c"), ("h_t", "hdr.h"),
    ("u_t", "hdr.u"), ("h_t[3]", "hdr.hs"), ("headers", "hdr"), ("bit<4>", "4w15"),
    ("int<4>", "4s7"), ("bit<8>", "m.m[7:0]"), ("bit<4>", "m.n[3:0]"),
)
_TYPES = ("bit<8>", "bit<16>", "bit<4>", "bit<1>", "bit<32>", "int<8>", "int<4>", "int<16>",
          "bool", "int", "E8", "Color", "error", "T8", "N8", "h_t", "varbit<8>", "bit<0>")
_SCALARS = ("bit<8>", "bit<16>", "bit<4>", "int<8>", "int<16>", "bool", "T8", "N8", "E8")


def _value(g: _Gen, of: tuple[str, ...] | None = None) -> tuple[str, str]:
    pool = [v for v in _VALUES if of is None or v[0] in of]
    return g.rng.choice(pool or _VALUES)


def _local_type(g: _Gen) -> str:
    """A type a local variable may (usually) have."""
    return g.pick(*_SCALARS, "bit<8>", "bit<16>")


# --- the pieces -------------------------------------------------------------------------

def cast(g: _Gen) -> Piece:
    """Spec 8.11 casts: between bit/int/bool/enum/typedef/type, widths changing."""
    dst = g.pick(*_TYPES)
    src_type, src = _value(g)
    v = g.fresh("c")
    return Piece(f"cast ({dst})({src_type})",
                 apply=f"{dst} {v} = ({dst})({src});")


def slice_(g: _Gen) -> Piece:
    """Spec 8.6 bit slices: bounds, widths, l-value slices, slices of int and int<N>."""
    src_type, src = _value(g, ("bit<8>", "bit<16>", "int<8>", "int", "bit<32>", "bool",
                               "E8", "T8"))
    hi = g.pick("7", "3", "15", "8", "0", "31", "2w1", "m.m", "(3+4)", "-1")
    lo = g.pick("0", "4", "3", "8", "1", "m.i", "-1")
    v = g.fresh("s")
    if g.chance(0.3):
        rhs_type, rhs = _value(g, ("bit<4>", "bit<8>", "int", "int<4>"))
        return Piece(f"slice l-value {src}[{hi}:{lo}] = {rhs_type}",
                     apply=f"m.n[{hi}:{lo}] = {rhs};")
    dst = g.pick("bit<8>", "bit<4>", "bit<1>", "bit<16>", "int<8>")
    return Piece(f"slice {src_type}[{hi}:{lo}] into {dst}",
                 apply=f"{dst} {v} = {src}[{hi}:{lo}];")


_CONST_LEAVES = ("0", "1", "7", "8", "255", "256", "-1", "-8", "8w255", "8w1", "4w15",
                 "8s127", "8s-128", "16w0x1ff", "32w1", "true", "false", "E8.A", "2s1")
_CONST_OPS = ("+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "++", "|+|", "|-|",
              "==", "!=", "<", ">=", "&&", "||")


def _const_expr(g: _Gen, depth: int) -> str:
    if depth == 0 or g.chance(0.3):
        return g.pick(*_CONST_LEAVES)
    kind = g.rng.random()
    if kind < 0.6:
        return f"({_const_expr(g, depth - 1)} {g.pick(*_CONST_OPS)} {_const_expr(g, depth - 1)})"
    if kind < 0.75:
        return f"({g.pick('bit<8>', 'int<8>', 'bit<4>', 'bit<16>', 'int', 'bool')})" \
               f"{_const_expr(g, depth - 1)}"
    if kind < 0.85:
        return f"({_const_expr(g, depth - 1)} ? {_const_expr(g, depth - 1)} : " \
               f"{_const_expr(g, depth - 1)})"
    if kind < 0.93:
        return f"{g.pick('-', '~', '!')}{_const_expr(g, depth - 1)}"
    return f"{_const_expr(g, depth - 1)}[{g.pick('3:0', '7:4', '0:0', '8:1')}]"


def consteval(g: _Gen) -> Piece:
    """Spec 18 compile-time evaluation: constants folded through every operator, and used
    where a compile-time known value is required (widths, stack sizes, value set sizes)."""
    t = g.pick("bit<8>", "int<8>", "int", "bit<16>", "bool", "bit<4>", "E8")
    c = g.fresh("K")
    e = _const_expr(g, g.rng.choice((1, 2, 2, 3)))
    top = f"const {t} {c} = {e};\n"
    use = g.rng.random()
    if use < 0.3:
        return Piece(f"const {t} = {e}", top=top, apply=f"m.m = (bit<8>)({c});")
    if use < 0.5:
        return Piece(f"const {t} = {e} as a width", top=top + f"typedef bit<({c})> W{c};\n",
                     apply=f"W{c} w{c} = 0;")
    if use < 0.65:
        return Piece(f"const {t} = {e} as a stack size", top=top,
                     locals=f"h_t[{c}] st{c};")
    if use < 0.8:
        return Piece(f"const {t} = {e} in a condition", top=top,
                     apply=f"if ({c} == {g.pick('1', '8w1', 'true', '0')}) {{ m.m = 1; }}")
    return Piece(f"const {t} = {e} as a shift amount", top=top,
                 apply=f"m.n = m.n {g.pick('<<', '>>')} {c};")


def _actions(g: _Gen, k: int) -> tuple[list[str], str]:
    names = [g.fresh("act") for _ in range(k)]
    decls = "".join(f"action {a}() {{ m.m = {i}; }}\n" for i, a in enumerate(names))
    return names, decls


def switch(g: _Gen) -> Piece:
    """Spec 12.7 switch statements: on a table's action_run (labels are the table's
    actions) or on an integer/enum expression (labels are constants); duplicates,
    fall-through, default not last, labels of the wrong kind."""
    if g.chance(0.5):
        acts, decls = _actions(g, 3)
        t = g.fresh("t")
        listed = acts[:2] if g.chance(0.4) else acts
        decls += (f"table {t} {{ key = {{ m.m : exact; }} actions = {{ "
                  + " ".join(f"{a};" for a in listed) + " } }\n")
        pool = list(acts) + ["NoAction", "default", acts[0], "m.m", "1"]
        labels = [g.rng.choice(pool) for _ in range(g.rng.randint(1, 4))]
        arms = " ".join(f"{lab}:" + ("" if g.chance(0.2) else " { m.n = 1; }")
                        for lab in labels)
        if arms.endswith(":"):
            arms += " { }"
        return Piece(f"switch on action_run labels {labels}", locals=decls,
                     apply=f"switch ({t}.apply().action_run) {{ {arms} }}")
    sel_type, sel = _value(g, ("bit<8>", "bit<16>", "E8", "Color", "int<8>", "bool", "int",
                               "error", "bit<4>"))
    pool = ["1", "2", "8w3", "255", "256", "-1", "E8.A", "E8.B", "Color.Red",
            "Color.Green", "default", "error.NoError", "m.m", "4w1", "true", "16w7"]
    labels = [g.rng.choice(pool) for _ in range(g.rng.randint(1, 4))]
    arms = " ".join(f"{lab}:" + ("" if g.chance(0.2) else " { m.n = 2; }")
                    for lab in labels)
    if arms.endswith(":"):
        arms += " { }"
    return Piece(f"switch on {sel_type} labels {labels}",
                 apply=f"switch ({sel}) {{ {arms} }}")


def generics(g: _Gen) -> Piece:
    """Spec 7.2.x/9 generic functions, structs and headers: type arguments given, inferred,
    too many or too few, and of types the declaration cannot take."""
    kind = g.rng.random()
    if kind < 0.45:
        f = g.fresh("gf")
        body = g.pick("return x;", "return y;", "T z = x; return z;",
                      "return x + x;", "return (T)0;", "if (x == x) { return x; } return x;")
        params = g.pick("in T x", "in T x, in T y", "in T x, in bit<8> y", "inout T x")
        targs = g.pick("", "<bit<8>>", "<bit<16>>", "<bit<8>, bit<8>>", "<bool>", "<h_t>",
                       "<int>", "<E8>")
        arg_type, arg = _value(g, ("bit<8>", "bit<16>", "int", "bool", "E8", "h_t", "int<8>"))
        args = arg if "y" not in params else f"{arg}, {_value(g)[1]}"
        dst = g.pick("bit<8>", "bit<16>", "bool", "h_t", "int<8>")
        return Piece(f"generic function {params} called{targs}({arg_type})",
                     top=f"T {f}<T>({params}) {{ {body} }}\n",
                     apply=f"{dst} r{f} = {f}{targs}({args});")
    s = g.fresh("GS")
    member = g.pick("T f;", "T f; bit<8> g;", "T f; U h;")
    tparams = "<T, U>" if "U" in member else "<T>"
    kw = g.pick("struct", "header", "struct")
    targs = g.pick("<bit<8>>", "<bit<8>, bit<16>>", "", "<bool>", "<h_t>", "<int>",
                   "<varbit<8>>", "<E8>", "<bit<8>[2]>")
    v = g.fresh("gv")
    init = g.pick("", " = { f = 1 }", " = {1}", " = { f = 1, g = 2 }")
    if kw == "header":
        init = ""
    return Piece(f"generic {kw}{tparams} {{{member}}} as {s}{targs}{init}",
                 top=f"{kw} {s}{tparams} {{ {member} }}\n",
                 apply=f"{s}{targs} {v}{init};")


def stack_union(g: _Gen) -> Piece:
    """Spec 8.18/8.19 header stacks and unions: indices, next/last/lastIndex (parsers
    only), push/pop amounts, size, union member validity and assignment."""
    ctl = [
        "hdr.hs[0].a = 1;", "hdr.hs[2].setValid();", "hdr.hs[3].a = 1;", "hdr.hs[-1].a = 1;",
        "hdr.hs[m.m].a = 1;", "hdr.hs[m.i].setInvalid();", "hdr.hs.push_front(1);",
        "hdr.hs.push_front(4);", "hdr.hs.pop_front(m.m);", "hdr.hs.pop_front(0);",
        "m.w = hdr.hs.size;", "m.w = hdr.hs.lastIndex;", "hdr.hs.next.a = 1;",
        "hdr.hs.last.a = 1;", "hdr.u.h.setValid();", "hdr.u.h.a = hdr.u.g.x[7:0];",
        "if (hdr.u.isValid()) { m.m = 1; }", "hdr.u.setValid();", "hdr.u = hdr.u;",
        "hdr.u = hdr.h;", "hdr.u.h = hdr.h;", "hdr.us[1].g.x = 1;", "hdr.us[2].g.x = 1;",
        "hdr.us[m.i].h.a = 2;", "hdr.us.push_front(1);", "hdr.hs[1] = hdr.h;",
        "hdr.hs = hdr.hs;", "m.f = hdr.hs[0].isValid();", "hdr.us[0] = hdr.u;",
        "m.w = hdr.us.size;", "hdr.hs[0].minSizeInBits();",
        "m.w = hdr.hs[0].minSizeInBytes();", "m.w = (bit<32>)hdr.u.minSizeInBits();",
    ]
    prs = [
        "pkt.extract(hdr.hs.next);", "pkt.extract(hdr.hs.last);", "pkt.extract(hdr.hs[0]);",
        "pkt.extract(hdr.hs[m.m]);", "m.w = hdr.hs.lastIndex;", "hdr.hs.last.a = 1;",
        "pkt.extract(hdr.u.h);", "pkt.extract(hdr.u);", "pkt.extract(hdr.us[0].g);",
        "pkt.extract(hdr.us.next.h);", "pkt.extract(hdr.us[m.i].h);", "m.m = hdr.hs.next.a;",
        "pkt.extract(hdr.hs);", "hdr.hs.push_front(1);",
    ]
    if g.chance(0.4):
        stmts = [g.rng.choice(prs) for _ in range(g.rng.randint(1, 2))]
        return Piece(f"parser stack/union {stmts}", start=" ".join(stmts))
    stmts = [g.rng.choice(ctl) for _ in range(g.rng.randint(1, 3))]
    return Piece(f"control stack/union {stmts}", apply=" ".join(stmts))


def abstract(g: _Gen) -> Piece:
    """Spec 7.2.12.1 abstract methods: an extern's abstract method implemented where the
    extern is instantiated; missing, extra, mistyped implementations, and ``this``."""
    x = g.fresh("Virt")
    ret = g.pick("bit<16>", "void", "bit<8>")
    decl = (f"extern {x} {{ {x}(); abstract {ret} f(in bit<16> ix); "
            f"bit<16> run(in bit<16> ix); }}\n")
    impl_ret = g.pick(ret, ret, ret, "bit<32>", "bool")
    impl_name = g.pick("f", "f", "f", "g")
    body = "" if impl_ret == "void" else g.pick(
        "return ix;", "return (bit<16>)ix;", "return ix + 1;", "return this.run(ix);",
        "return 1;", "")
    if impl_ret != "bit<16>" and body.startswith("return ix"):
        body = f"return ({impl_ret})ix;"
    impl = f"{impl_ret} {impl_name}(in bit<16> ix) {{ {body} }}"
    if g.chance(0.15):
        impl = ""
    elif g.chance(0.1):
        impl += " bit<16> extra(in bit<16> ix) { return ix; }"
    v = g.fresh("vi")
    return Piece(f"abstract {ret} f implemented as {impl!r}", top=decl,
                 locals=f"{x}() {v} = {{ {impl} }};",
                 apply=f"m.n = {v}.run(m.n);")


def value_set(g: _Gen) -> Piece:
    """Spec 12.11 parser value sets: element types, sizes, and selects that use them."""
    v = g.fresh("pvs")
    elem = g.pick("bit<8>", "bit<16>", "bit<8>", "PV", "bool", "int", "E8", "h_t",
                  "tuple<bit<8>, bit<8>>", "bit<4>")
    size = g.pick("4", "4", "0", "m.m", "-1", "8w2", "true", "1")
    top = "struct PV { bit<8> a; bit<8> b; }\n"
    keys = g.pick("hdr.h.a", "hdr.h.a", "hdr.h.a, hdr.h.b", "hdr.h.c", "m.f")
    label = g.pick(v, v, f"{v} &&& 0xff", f"({v}, 1)")
    return Piece(f"value_set<{elem}>({size}) selecting ({keys}) with {label}", top=top,
                 parser_locals=f"value_set<{elem}>({size}) {v};",
                 transition=f"transition select({keys}) {{ {label}: accept; default: accept; }}")


def compare(g: _Gen) -> Piece:
    """Spec 8.x equality and order per type: which pairs of types may be compared."""
    (ta, a), (tb, b) = _value(g), _value(g)
    op = g.pick("==", "!=", "<", ">=", "==", "!=")
    extra = g.pick(a, a, "{1, 2}", "{ a = 1 }", "hdr.hs[0]", "hdr.us[0]")
    if g.chance(0.2):
        a = extra
    return Piece(f"compare {ta} {op} {tb}", apply=f"if ({a} {op} {b}) {{ m.m = 9; }}")


def keysets(g: _Gen) -> Piece:
    """Spec 12.6 select keysets: masks, ranges, default/``_``, tuple keysets of the wrong
    arity, constants wider than the key."""
    keys = g.pick("hdr.h.a", "hdr.h.a, hdr.h.b", "hdr.h.c", "m.f", "m.s")
    arity = keys.count(",") + 1
    atoms = ("1", "8w1", "0xff", "0x1ff", "16w1", "1 &&& 0xf", "8w1 &&& 8w3", "1 .. 5",
             "5 .. 1", "_", "default", "true", "-1", "E8.A", "8s1", "m.m")
    arms = []
    for _ in range(g.rng.randint(1, 3)):
        n = arity if g.chance(0.8) else arity + 1
        ks = [g.pick(*atoms) for _ in range(n)]
        arms.append(ks[0] if n == 1 else "(" + ", ".join(ks) + ")")
    body = " ".join(f"{k}: accept;" for k in arms)
    if g.chance(0.5):
        body += " default: reject;"
    return Piece(f"select({keys}) on {arms}", transition=f"transition select({keys}) {{ {body} }}")


def entries(g: _Gen) -> Piece:
    """Spec 14.2.1.4 constant entries: key values per match kind, masks, ranges,
    priorities, ``_``/``default``, widths, and entries naming actions not in the table."""
    kinds = [g.pick("exact", "ternary", "lpm", "range", "optional")
             for _ in range(g.rng.randint(1, 2))]
    fields = ["hdr.h.a", "hdr.h.c"][:len(kinds)]
    acts, decls = _actions(g, 2)
    acts_p = g.fresh("ap")
    decls += f"action {acts_p}(bit<8> v) {{ m.m = v; }}\n"
    atoms = ("1", "0x1ff", "8w1", "_", "default", "1 &&& 0xf", "0x10 &&& 0xf0", "1 .. 9",
             "9 .. 1", "0 &&& 0", "-1", "16w5", "255", "0x0f &&& 0xff")
    lines = []
    for _ in range(g.rng.randint(1, 3)):
        ks = [g.pick(*atoms) for _ in kinds]
        key = ks[0] if len(ks) == 1 else "(" + ", ".join(ks) + ")"
        prio = f"priority={g.pick('1', '10', '0', '-1', '1 + 1')}: " if g.chance(0.2) else ""
        call = g.pick(f"{acts[0]}()", f"{acts[1]}", f"{acts_p}(3)", f"{acts_p}(m.m)",
                      f"{acts_p}(0x1ff)", f"{acts_p}()", "NoAction()")
        lines.append(f"{prio}{key} : {call};")
    t = g.fresh("te")
    keydecl = " ".join(f"{f} : {k};" for f, k in zip(fields, kinds, strict=True))
    const = "const " if g.chance(0.8) else ""
    decls += (f"table {t} {{ key = {{ {keydecl} }} actions = {{ {acts[0]}; {acts[1]}; "
              f"{acts_p}; }} {const}entries = {{ {' '.join(lines)} }} }}\n")
    return Piece(f"entries {kinds}: {lines}", locals=decls, apply=f"{t}.apply();")


def tuples(g: _Gen) -> Piece:
    """Spec 7.2.8/8.12 tuples and list expressions: element access by constant index,
    out-of-range and run-time indices, assignment between shapes."""
    v = g.fresh("tp")
    tt = g.pick("tuple<bit<8>, bool>", "tuple<bit<8>>", "tuple<>", "tuple<h_t, bit<16>>")
    init = g.pick("{1, true}", "{1}", "{}", "{8w1, 2}", "{hdr.h, 3}", "{1, true, 3}")
    use = g.pick(f"m.m = {v}[0];", f"m.f = {v}[1];", f"m.m = {v}[2];", f"m.m = {v}[m.i];",
                 f"{v}[0] = 2;", f"{v} = {{2, false}};", f"m.m = {v}.f0;", "")
    return Piece(f"{tt} = {init}; {use}", apply=f"{tt} {v} = {init}; {use}")


def shifts(g: _Gen) -> Piece:
    """Spec 8.5/8.7 shifts: unsigned and signed amounts, ``int`` operands, negative or
    over-wide constant amounts."""
    a_type, a = _value(g, ("bit<8>", "bit<16>", "int<8>", "int", "bit<4>"))
    b_type, b = _value(g, ("bit<8>", "int", "int<8>", "bit<4>", "bit<1>"))
    op = g.pick("<<", ">>")
    dst = g.pick("bit<8>", "int<8>", "bit<16>")
    v = g.fresh("sh")
    return Piece(f"shift {a_type} {op} {b_type}", apply=f"{dst} {v} = ({dst})({a} {op} {b});")


def functions(g: _Gen) -> Piece:
    """Spec 10 functions and actions: return paths, directions of arguments
    (l-values for out/inout), calls with too many or too few arguments."""
    f = g.fresh("fn")
    body = g.pick("return x + 1;", "if (x == 0) { return 1; }", "x = 1; return x;",
                  "return;", "if (x == 0) { return 1; } else { return 2; }", "y = x; return y;")
    params = g.pick("in bit<8> x", "inout bit<8> x", "in bit<8> x, out bit<8> y",
                    "bit<8> x")
    args = g.pick("m.m", "1", "m.m, m.m", "m.m, 1", "", "(bit<8>)m.n")
    return Piece(f"function ({params}) {{ {body} }} called ({args})",
                 top=f"bit<8> {f}({params}) {{ {body} }}\n",
                 apply=f"m.m = {f}({args});")


PIECES: tuple[Callable[[_Gen], Piece], ...] = (
    cast, slice_, consteval, switch, generics, stack_union, abstract, value_set, compare,
    keysets, entries, tuples, shifts, functions)


def program(rng: random.Random) -> Mutant:
    """One program of one to three pieces (each piece's ``what`` in its description)."""
    g = _Gen(rng)
    pieces = [g.rng.choice(PIECES)(g) for _ in range(g.rng.choice((1, 1, 2, 3)))]
    transitions = [p.transition for p in pieces if p.transition]
    transition = transitions[0] if transitions else "transition accept;"
    text = (_HEAD + "".join(p.top for p in pieces)
            + "\nparser P(packet_in pkt, out headers hdr, inout meta_t m, "
              "inout standard_metadata_t sm) {\n    "
            + " ".join(p.parser_locals for p in pieces)
            + "\n    state start { pkt.extract(hdr.h); "
            + " ".join(p.start for p in pieces) + f" {transition} }}\n"
            + "".join(p.states for p in pieces) + "}\n"
            + "\ncontrol I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {\n"
            + "".join(p.locals for p in pieces)
            + "    apply {\n        " + "\n        ".join(p.apply for p in pieces if p.apply)
            + "\n    }\n}\n" + _TAIL)
    return Mutant(text, "; ".join(p.what for p in pieces))


def programs(seed: int, count: int) -> Iterator[Mutant]:
    """``count`` programs, deterministic in ``seed``."""
    rng = random.Random(seed)
    for _ in range(count):
        yield program(rng)
