"""C representation of P4 types for the fast path.

Scalars: ``bit<W>``/``int<W>`` up to 64 bits are ``uint64_t``/``int64_t``, up to 128
bits ``u128``/``i128`` (``unsigned __int128``), kept masked (unsigned) or sign-extended
(signed) exactly like the interpreter's Python ints; ``bool`` is ``uint8_t``; errors and
non-serializable enums ``uint32_t``; compile-time ``int`` ``i128``. Aggregates are C
structs made once per P4 type: ``f_<field>`` members, ``_v`` the valid bit of a header,
``items``/``nxt`` for a stack. All-zero memory is every type's default value, as in
BMv2. Per aggregate type the module also gets ``asg_*`` (BMv2's assign_header /
assign_header_stack: an invalid source header only clears the destination's valid
bit) and ``eq_*`` (the interpreter's ``__eq__``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from softswitch.core.exprwalk import fit_with
from softswitch.diagnostics import SourceLoc
from softswitch.frontend import types as T


class Unsupported(Exception):
    """A construct the C back end does not implement: the interpreter runs instead."""

    def __init__(self, message: str, loc: SourceLoc | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.loc = loc

    def __str__(self) -> str:
        return f"{self.loc}: {self.message}" if self.loc is not None else self.message


@dataclass(frozen=True)
class Scalar:
    kind: str      # bits | bool | enum | error | int
    width: int
    signed: bool

    @property
    def wide(self) -> bool:
        return self.width > 64

    @property
    def ctype(self) -> str:
        if self.kind == "bool":
            return "uint8_t"
        if self.kind in ("enum", "error"):
            return "uint32_t"
        if self.kind == "int":
            return "i128"
        if self.width > 64:
            return "i128" if self.signed else "u128"
        return "int64_t" if self.signed else "uint64_t"

    @property
    def utype(self) -> str:
        """The unsigned C type of the same size (arithmetic is done unsigned)."""
        if self.kind == "int" or self.width > 64:
            return "u128"
        return "uint64_t"


MAX_WIDTH = 128


def scalar(t: Any) -> Scalar | None:
    t = T.strip_newtype(t)
    if isinstance(t, T.EnumType):
        if t.underlying is not None:
            t = t.underlying
        else:
            return Scalar("enum", 32, False)
    if isinstance(t, T.BitsType):
        if t.width > MAX_WIDTH:
            raise Unsupported(f"{t} is wider than {MAX_WIDTH} bits")
        return Scalar("bits", t.width, t.signed)
    if isinstance(t, T.BoolType):
        return Scalar("bool", 1, False)
    if isinstance(t, T.ErrorType):
        return Scalar("error", 32, False)
    if isinstance(t, T.IntType):
        return Scalar("int", 128, True)
    return None


def scalar_bits(t: Any) -> tuple[int, bool] | None:
    """(width, signed) of a fixed-width integer type (the interpreter's scalar_bits)."""
    t = T.strip_newtype(t)
    if isinstance(t, T.EnumType) and t.underlying is not None:
        t = t.underlying
    if isinstance(t, T.BitsType):
        if t.width > MAX_WIDTH:
            raise Unsupported(f"arithmetic on {t} (wider than {MAX_WIDTH} bits) is not "
                              "supported by the C back end")
        return t.width, t.signed
    return None


def is_wide(t: Any) -> bool:
    """bit<W>/int<W> wider than 128 bits: opaque bytes in C (extract, emit, copy,
    equality, hashing), any arithmetic refused."""
    t = T.strip_newtype(t)
    return isinstance(t, T.BitsType) and t.width > MAX_WIDTH


def mask_lit(w: int) -> str:
    if w <= 0:
        return "0"
    if w <= 64:
        return f"0x{(1 << w) - 1:x}ULL"
    if w >= 128:
        return "(~(u128)0)"
    return f"((((u128)1) << {w}) - 1)"


def u_lit(v: int, wide: bool = False) -> str:
    """A C literal of the unsigned value v (< 2^128)."""
    v &= (1 << 128) - 1
    if v < (1 << 64) and not wide:
        return f"0x{v:x}ULL"
    hi, lo = v >> 64, v & ((1 << 64) - 1)
    if hi == 0:
        return f"((u128)0x{lo:x}ULL)"
    return f"((((u128)0x{hi:x}ULL) << 64) | (u128)0x{lo:x}ULL)"


def lit(v: int, sc: Scalar | None) -> str:
    """A C literal of Python int v in the representation of scalar type sc."""
    if sc is None or sc.kind == "int":
        if -(1 << 63) <= v < (1 << 63):
            return f"((i128){v}LL)" if v != -(1 << 63) else "((i128)INT64_MIN)"
        if -(1 << 127) <= v < (1 << 127):
            return f"((i128){u_lit(v % (1 << 128), True)})"
        raise Unsupported(f"integer constant {v} does not fit in 128 bits")
    if sc.kind == "bool":
        return "1" if v else "0"
    if sc.signed:
        if sc.wide:
            return f"((i128){u_lit(v % (1 << 128), True)})"
        if v == -(1 << 63):
            return "INT64_MIN"
        return f"({v}LL)"
    if sc.wide:
        return u_lit(v, True)
    if v < 0 or v >= (1 << 64):
        v &= (1 << 64) - 1
    return f"0x{v:x}ULL"


def fit(code: str, t: Any) -> str:
    """Wrap a C integer expression into the range of type t (the interpreter's fit)."""
    return fit_with(code, scalar_bits(t), _wrap, _mask)


def _wrap(code: str, w: int) -> str:
    if w > 64:
        return f"sext128((u128)({code}), {w})"
    return f"sext64((uint64_t)({code}), {w})"


def _mask(code: str, w: int) -> str:
    if w > 64:
        return f"((u128)({code}) & {mask_lit(w)})" if w < 128 else f"((u128)({code}))"
    if w == 64:
        return f"((uint64_t)({code}))"
    return f"((uint64_t)({code}) & {mask_lit(w)})"


_IDENT = re.compile(r"[^A-Za-z0-9_]")


def ident(name: str) -> str:
    return _IDENT.sub("_", name)


def is_aggregate(t: Any) -> bool:
    t = T.strip_newtype(t)
    return isinstance(t, T.StructLikeType | T.StackType | T.TupleType | T.ListType)


class CTypes:
    """C struct definitions (in dependency order) and their asg/eq helpers."""

    def __init__(self) -> None:
        self._names: dict[Any, str] = {}
        self.defs: list[str] = []
        self.funcs: list[str] = []

    def key(self, t: Any) -> Any:
        t = T.strip_newtype(t)
        if is_wide(t):
            return ("wide", t.width)
        if isinstance(t, T.StructLikeType):
            return (type(t).__name__, t.name, id(t.decl), t.type_args)
        if isinstance(t, T.StackType):
            return ("stack", self.key(t.element), t.size)
        if isinstance(t, T.TupleType | T.ListType):
            return ("tuple", tuple(self.key(e) for e in t.elements))
        if isinstance(t, T.VarbitType):
            return ("varbit", t.max_width)
        sc = scalar(t)
        if sc is not None:
            return ("scalar", sc.ctype)
        raise Unsupported(f"values of type {t} are not supported by the C back end")

    def c(self, t: Any) -> str:
        """The C type of P4 type t."""
        t = T.strip_newtype(t)
        if is_wide(t):
            k = self.key(t)
            return self._names.get(k) or self._define(t, k)
        sc = scalar(t)
        if sc is not None:
            return sc.ctype
        k = self.key(t)
        name = self._names.get(k)
        if name is None:
            name = self._define(t, k)
        return name

    def zero(self, t: Any) -> str:
        t = T.strip_newtype(t)
        if is_wide(t):
            return f"(({self.c(t)}){{0}})"
        if scalar(t) is not None:
            return "0"
        return f"(({self.c(t)}){{0}})"

    # ------------------------------------------------------------------ definitions
    def _define(self, t: Any, k: Any) -> str:
        if isinstance(t, T.StructLikeType):
            kind = {"HeaderType": "H", "HeaderUnionType": "U", "StructType": "S"}[
                type(t).__name__]
            name = f"{kind}{len(self._names)}_{ident(t.name)}"
            self._names[k] = name
            members = []
            for i, f in enumerate(t.fields):
                try:
                    members.append((f"f_{f.name}", self.c(f.type)))
                except Unsupported as e:
                    fdecls = getattr(t.decl, "fields", None) or []
                    loc = e.loc or (fdecls[i].loc if i < len(fdecls) else None)
                    raise Unsupported(f"field '{f.name}' of {t.name}: {e.message}", loc) \
                        from None
            body = "".join(f"    {ct} {m};\n" for m, ct in members)
            if isinstance(t, T.HeaderType):
                body += "    uint8_t _v;\n"
            if not body:
                body = "    uint8_t _empty;\n"
            self.defs.append(f"typedef struct {{\n{body}}} {name};\n")
            self._struct_funcs(t, name)
            return name
        if isinstance(t, T.StackType):
            elem = self.c(t.element)
            name = f"K{len(self._names)}"
            self._names[k] = name
            self.defs.append(f"typedef struct {{\n    {elem} items[{t.size}];\n"
                             f"    uint32_t nxt;\n}} {name};\n")
            self._stack_funcs(t, name, elem)
            return name
        if isinstance(t, T.TupleType | T.ListType):
            elems = [self.c(e) for e in t.elements]
            name = f"L{len(self._names)}"
            self._names[k] = name
            body = "".join(f"    {ct} e{i};\n" for i, ct in enumerate(elems)) or \
                "    uint8_t _empty;\n"
            self.defs.append(f"typedef struct {{\n{body}}} {name};\n")
            self._tuple_funcs(t, name)
            return name
        if is_wide(t):
            n = (t.width + 7) // 8
            name = f"WB{len(self._names)}"
            self._names[k] = name
            self.defs.append(f"typedef struct {{\n    uint8_t b[{n}];\n}} {name};\n")
            self.funcs.append(
                f"static inline void asg_{name}({name} *d, const {name} *o) {{ *d = *o; }}\n"
                f"static inline int eq_{name}(const {name} *a, const {name} *b) {{\n"
                f"    return !memcmp(a->b, b->b, {n});\n}}\n")
            return name
        if isinstance(t, T.VarbitType):
            if t.max_width > 65536:
                raise Unsupported(f"{t} is too wide for the C back end")
            n = max(1, (t.max_width + 7) // 8)
            name = f"VB{len(self._names)}"
            self._names[k] = name
            self.defs.append(f"typedef struct {{\n    uint32_t w;\n    uint8_t b[{n}];\n}} "
                             f"{name};\n")
            self.funcs.append(
                f"static inline void asg_{name}({name} *d, const {name} *o) {{ *d = *o; }}\n"
                f"static inline int eq_{name}(const {name} *a, const {name} *b) {{\n"
                f"    return a->w == b->w && !memcmp(a->b, b->b, {n});\n}}\n")
            return name
        raise Unsupported(f"values of type {t} are not supported by the C back end")

    def asg(self, t: Any) -> str:
        self.c(t)
        return "asg_" + self.c(t)

    def eq(self, t: Any) -> str:
        self.c(t)
        return "eq_" + self.c(t)

    def _field_asg(self, ft: Any, d: str, o: str) -> str:
        ft = T.strip_newtype(ft)
        if isinstance(ft, T.StructLikeType | T.StackType):
            return f"{self.asg(ft)}(&{d}, &{o});"
        return f"{d} = {o};"

    def _field_eq(self, ft: Any, a: str, b: str) -> str:
        ft = T.strip_newtype(ft)
        if is_aggregate(ft) or isinstance(ft, T.VarbitType) or is_wide(ft):
            return f"{self.eq(ft)}(&{a}, &{b})"
        return f"({a} == {b})"

    def _struct_funcs(self, t: T.StructLikeType, name: str) -> None:
        is_header = isinstance(t, T.HeaderType)
        lines = [f"static inline void asg_{name}({name} *d, const {name} *o) {{"]
        if is_header:
            lines += ["    if (!o->_v) { d->_v = 0; return; }", "    d->_v = 1;"]
        for f in t.fields:
            lines.append("    " + self._field_asg(f.type, f"d->f_{f.name}", f"o->f_{f.name}"))
        lines.append("}")
        eq = [f"static inline int eq_{name}(const {name} *a, const {name} *b) {{"]
        if is_header:
            eq += ["    if (a->_v != b->_v) return 0;", "    if (!a->_v) return 1;"]
        conds = [self._field_eq(f.type, f"a->f_{f.name}", f"b->f_{f.name}") for f in t.fields]
        eq.append(f"    return {' && '.join(conds) or '1'};")
        eq.append("}")
        self.funcs.append("\n".join(lines + eq) + "\n")

    def _stack_funcs(self, t: T.StackType, name: str, elem: str) -> None:
        et = T.strip_newtype(t.element)
        lines = [f"static inline void asg_{name}({name} *d, const {name} *o) {{",
                 "    d->nxt = o->nxt;",
                 f"    for (int i = 0; i < {t.size}; i++) "
                 + self._field_asg(et, "d->items[i]", "o->items[i]"), "}",
                 f"static inline int eq_{name}(const {name} *a, const {name} *b) {{",
                 f"    for (int i = 0; i < {t.size}; i++) if (!"
                 + self._field_eq(et, "a->items[i]", "b->items[i]") + ") return 0;",
                 "    return 1;", "}"]
        self.funcs.append("\n".join(lines) + "\n")

    def _tuple_funcs(self, t: Any, name: str) -> None:
        lines = [f"static inline void asg_{name}({name} *d, const {name} *o) {{ *d = *o; }}",
                 f"static inline int eq_{name}(const {name} *a, const {name} *b) {{"]
        conds = [self._field_eq(e, f"a->e{i}", f"b->e{i}") for i, e in enumerate(t.elements)]
        lines.append(f"    return {' && '.join(conds) or '1'};")
        lines.append("}")
        self.funcs.append("\n".join(lines) + "\n")
