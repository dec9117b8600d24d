"""Lowering of typed P4 expressions into C: the C spelling of the shared rules of
:class:`softswitch.core.exprwalk.ExprWalk` (the interpreter, :mod:`softswitch.core.lower`,
spells them in Python and stays the oracle), and C's own integer arithmetic.

Every expression becomes a side-effect-free C expression; whatever has effects (a
call, a table apply, a bounds check that may fail the packet) is emitted first as
statements into the function's :class:`CBuf`, in P4's left-to-right order, with the
same hoisting of already-evaluated left operands as the interpreter, so C's unspecified
operand order can never show. Generated functions return a status (``ST_OK``,
``ST_EXIT``, ``ST_PERR`` with ``c->perr``, ``ST_ABORT`` with a Python exception set)
that callers propagate (``if (st) return st;``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from softswitch.core.codebuf import LineBuf
from softswitch.core.exprwalk import ExprWalk, saturation_bounds, slice_masks
from softswitch.fastpath.ctypes_ import (
    Unsupported,
    fit,
    is_aggregate,
    is_wide,
    lit,
    mask_lit,
    scalar,
    scalar_bits,
)
from softswitch.frontend import ast
from softswitch.frontend import types as T
from softswitch.frontend.ast import NOT_CONST

if TYPE_CHECKING:
    from softswitch.fastpath.ccontracts import CProgramHost


class CBuf(LineBuf):
    """C source: blocks in braces."""

    def __init__(self, level: int = 1) -> None:
        super().__init__(level)

    @contextmanager
    def block(self, head: str) -> Iterator[None]:
        self.emit(head + " {")
        self.level += 1
        try:
            yield
        finally:
            self.level -= 1
            self.emit("}")

    def if_(self, cond: str) -> AbstractContextManager[None]:
        return self.block(f"if ({cond})")

    def else_(self) -> AbstractContextManager[None]:
        return self.block("else")


@dataclass
class CFnCtx:
    buf: CBuf
    kind: str                       # action | function | control | state
    has_value: bool = False         # function with a return value (*ret)
    outs: list[str] = field(default_factory=list)


_SIMPLE = re.compile(r"^\(?-?(0x[0-9a-f]+ULL|\d+LL|\d+)\)?$")


def is_simple(code: str) -> bool:
    """Literals: values that a later call cannot change."""
    return bool(_SIMPLE.match(code)) or code in ("0", "1")




class ExprGen(ExprWalk):
    unsupported_where = "by the C back end"

    def __init__(self, prog: CProgramHost) -> None:
        self.prog = prog
        self.error_codes: dict[str, int] = prog.pb.env.error_codes
        self.types = prog.types
        self.names: dict[Any, str] = {}
        self._tmp = 0

    # ------------------------------------------------------------ helpers
    def tmp(self, prefix: str = "t") -> str:
        self._tmp += 1
        return f"{prefix}{self._tmp}"

    def fail(self, msg: str, node: Any) -> Unsupported:
        return Unsupported(msg, getattr(node, "loc", None))

    def ct(self, t: Any) -> str:
        return self.types.c(t)

    def zero(self, t: Any) -> str:
        return self.types.zero(t)

    def declare(self, fn: CFnCtx, t: Any, init: str | None = None, prefix: str = "t",
                at: int | None = None) -> str:
        name = self.tmp(prefix)
        line = f"{self.ct(t)} {name} = {init if init is not None else self.zero(t)};"
        if at is None:
            fn.buf.emit(line)
        else:
            fn.buf.insert(at, line)
        return name

    def check(self, fn: CFnCtx) -> None:
        fn.buf.emit("if (st) return st;")

    def perr(self, fn: CFnCtx, cond: str, code: int | str) -> None:
        """Fail the parser (or the packet, outside one) with error ``code`` if cond."""
        with fn.buf.block(f"if ({cond})"):
            fn.buf.emit(f"c->perr = {code};")
            fn.buf.emit("return ST_PERR;")

    # ------------------------------------------------------------ constants
    def const_literal(self, c: Any, t: Any) -> str | None:
        if is_wide(t):
            raise Unsupported(f"constants of {T.strip_newtype(t)} (wider than 128 bits) are "
                              "not supported by the C back end")
        if isinstance(c, bool):
            if isinstance(T.strip_newtype(t), T.BitsType):
                return lit(int(c), scalar(t))
            return "1" if c else "0"
        if isinstance(c, int):
            from softswitch.core.lower import wrap_int
            return lit(wrap_int(c, t), scalar(t))
        if isinstance(c, str):
            return None
        value = getattr(c, "value", None)
        if isinstance(value, int) and hasattr(c, "type_name"):
            if c.type_name == "error":
                return str(self.prog.error_code(c.name))
            sc = scalar(t)
            return lit(value, sc if sc is not None and sc.kind == "bits" else None) \
                if sc is not None and sc.kind == "bits" else f"{value}U"
        return None

    # ------------------------------------------------------------ expressions
    def value(self, e: ast.Expr, fn: CFnCtx) -> str:
        return self.expr(e, fn)

    def x_IntLiteral(self, e: ast.IntLiteral, fn: CFnCtx) -> str:
        from softswitch.core.lower import wrap_int
        return lit(wrap_int(e.value, e.type), scalar(e.type))

    def x_BoolLiteral(self, e: ast.BoolLiteral, fn: CFnCtx) -> str:
        return "1" if e.value else "0"

    def x_PathExpr(self, e: ast.PathExpr, fn: CFnCtx) -> str:
        decl = e.decl
        name = self.names.get(id(decl))
        if name is not None:
            if name.startswith("@"):
                raise self.fail(f"'{e.name}' cannot be used as a value by the C back end", e)
            return name
        if isinstance(decl, ast.ConstDecl):
            return self.expr(decl.value, fn)
        raise self.fail(f"'{e.name}' cannot be used as a value here", e)

    def stack_end(self, base: str, st: T.StackType, which: str, fn: CFnCtx) -> str:
        oob = self.prog.error_code("StackOutOfBounds", 3)
        if which == "next":
            self.perr(fn, f"{base}.nxt >= {st.size}", oob)
            return f"{base}.items[{base}.nxt]"
        self.perr(fn, f"{base}.nxt == 0 || {base}.nxt > {st.size}", oob)
        return f"{base}.items[{base}.nxt - 1]"

    def index_in(self, idx: str, t: Any, size: int) -> str:
        sc = scalar(t)
        if sc is not None and sc.signed:
            return f"((i128)({idx}) >= 0 && (i128)({idx}) < {size})"
        return f"((u128)({idx}) < {size})"

    def x_Index(self, e: ast.Index, fn: CFnCtx) -> str:
        base = self.expr(e.expr, fn)
        t = T.strip_newtype(e.expr.type)
        if isinstance(t, T.StackType):
            if e.index.const is not NOT_CONST:
                i = int(e.index.const)
                if not 0 <= i < t.size:
                    raise self.fail(f"index {i} out of range for a stack of {t.size}", e)
                return f"{base}.items[{i}]"
            idx = self.expr(e.index, fn)
            return (f"({self.index_in(idx, e.index.type, t.size)} ? "
                    f"{base}.items[(size_t)({idx})] : {self.zero(t.element)})")
        if isinstance(t, T.TupleType | T.ListType) and e.index.const is not NOT_CONST:
            return f"{base}.e{int(e.index.const)}"
        raise self.fail(f"indexing {t} is not supported", e)

    def x_Slice(self, e: ast.Slice, fn: CFnCtx) -> str:
        if is_wide(e.expr.type):
            raise self.fail("slices of values wider than 128 bits are not supported by the C "
                            "back end", e)
        hi, lo = int(e.hi.const), int(e.lo.const)
        v = self.expr(e.expr, fn)
        sc = scalar(e.expr.type)
        ut = sc.utype if sc is not None else "u128"
        w = hi - lo + 1
        out = f"(({ut})({v}) >> {lo})" if lo else f"(({ut})({v}))"
        rs = scalar(e.type)
        rt = rs.utype if rs is not None else ut
        return f"(({rt})({out} & {mask_lit(w)}))"

    def binop(self, op: str, a: str, b: str, e: ast.Binary) -> str:
        t = e.type
        bits = scalar_bits(t)
        sc = scalar(t)
        if op in ("==", "!="):
            lt = T.strip_newtype(e.left.type)
            if is_aggregate(lt) or isinstance(lt, T.VarbitType) or is_wide(lt):
                ct = self.ct(lt)
                eq = self.types.eq(lt)
                code = f"({{ {ct} _a = {a}; {ct} _b = {b}; {eq}(&_a, &_b); }})"
                return code if op == "==" else f"(!{code})"
            return f"(({a}) {op} ({b}))"
        if is_wide(e.left.type) or is_wide(e.right.type):
            raise self.fail(f"operator '{op}' on values wider than 128 bits is not supported "
                            "by the C back end", e)
        if op in ("<", "<=", ">", ">="):
            return f"(({a}) {op} ({b}))"
        ut = sc.utype if sc is not None else "u128"
        if op in ("+", "-", "*"):
            if bits is None:
                return f"((i128)({a}) {op} (i128)({b}))"
            return fit(f"({ut})({a}) {op} ({ut})({b})", t)
        if op in ("/", "%"):
            fnm = "rt_fdiv" if op == "/" else "rt_fmod"
            if bits is not None and not bits[1]:
                cop = op
                return fit(f"(({ut})({b}) ? ({ut})({a}) {cop} ({ut})({b}) : 0)", t)
            code = f"{fnm}((i128)({a}), (i128)({b}))"
            return fit(code, t) if bits else code
        if op in ("&", "|", "^"):
            return f"(({a}) {op} ({b}))"
        if op == "<<":
            if bits is None:
                return f"((i128)({a}) << ({b}))"
            w = bits[0]
            if e.right.const is not NOT_CONST and isinstance(e.right.const, int):
                k = e.right.const
                return "0" if k >= w else fit(f"({ut})({a}) << {k}", t)
            rs = scalar(e.right.type)
            amt = f"(u128)({b})" if rs is None or not rs.signed else f"(u128)(i128)({b})"
            return f"(({amt} >= {w}) ? 0 : {fit(f'({ut})({a}) << (unsigned)({b})', t)})"
        if op == ">>":
            ls = scalar(e.left.type)
            lw = 128 if ls is None or ls.wide else 64
            rs = scalar(e.right.type)
            amt = f"(u128)({b})" if rs is None or not rs.signed else f"(u128)(i128)({b})"
            if ls is not None and ls.signed or ls is None:
                return (f"(({amt} >= {lw}) ? (({a}) < 0 ? -1 : 0) : "
                        f"(({a}) >> (unsigned)({b})))")
            return f"(({amt} >= {lw}) ? 0 : (({a}) >> (unsigned)({b})))"
        if op in ("|+|", "|-|"):
            if bits is None:
                return f"((i128)({a}) {op[1]} (i128)({b}))"
            w, signed = bits
            if w > 64:
                raise self.fail("saturating arithmetic wider than 64 bits is not supported "
                                "by the C back end", e)
            lo, hi = saturation_bounds(w, signed)
            code = f"sat128((i128)({a}) {op[1]} (i128)({b}), {lit(lo, None)}, {lit(hi, None)})"
            return f"(({sc.ctype})({code}))"
        if op == "++":
            lb, rb = self.concat_bits(e)
            ua = f"(({ut})({a}) & {mask_lit(lb[0])})" if lb[1] else f"({ut})({a})"
            ub = f"(({ut})({b}) & {mask_lit(rb[0])})" if rb[1] else f"({ut})({b})"
            return fit(f"({ua} << {rb[0]}) | {ub}", t)
        raise self.fail(f"operator '{op}' is not supported here", e)

    def x_Cast(self, e: ast.Cast, fn: CFnCtx) -> str:
        if is_wide(e.type) or is_wide(e.expr.type):
            raise self.fail("casts of values wider than 128 bits are not supported by the C "
                            "back end", e)
        return super().x_Cast(e, fn)

    def cast(self, kind: str, v: str, e: ast.Cast) -> str:
        if kind == "to_bool":
            return f"(({v}) != 0)"
        if kind == "from_bool" or scalar(e.type) is not None and scalar(e.expr.type) is not None:
            return f"(({self.ct(T.strip_newtype(e.type))})({v}))"
        return v

    def x_ListExpr(self, e: ast.ListExpr, fn: CFnCtx) -> str:
        t = T.strip_newtype(e.type)
        vals = self.values_in_order(e.items, fn)
        if isinstance(t, T.StructLikeType):
            return self.build_struct(t, [f.name for f in t.fields], vals)
        if isinstance(t, T.TupleType | T.ListType):
            ct = self.ct(t)
            sets = "".join(f" _s.e{i} = {v};" for i, v in enumerate(vals))
            return f"({{ {ct} _s = {self.zero(t)};{sets} _s; }})"
        raise self.fail("list expression without a type", e)

    def x_StructExpr(self, e: ast.StructExpr, fn: CFnCtx) -> str:
        t = T.strip_newtype(e.type)
        vals = self.values_in_order([v for _, v in e.fields], fn)
        if isinstance(t, T.StructLikeType):
            return self.build_struct(t, [n for n, _ in e.fields], vals)
        raise self.fail("struct expression without a struct type", e)

    def build_struct(self, t: T.StructLikeType, names: list[str], vals: list[str]) -> str:
        ct = self.ct(t)
        sets = "".join(f" _s.f_{n} = {v};" for n, v in zip(names, vals, strict=True))
        valid = " _s._v = 1;" if isinstance(t, T.HeaderType) else ""
        return f"({{ {ct} _s = {self.zero(t)};{sets}{valid} _s; }})"

    def invalid_value(self, t: T.StructLikeType) -> str:
        return self.zero(t)

    # ------------------------------------------------------------ ExprWalk's emitters
    spelling = {
        "choose": "(({cond}) ? ({a}) : ({b}))", "set": "{target} = {value};",
        "truth_set": "{var} = ({code}) != 0;", "not": "!{cond}",
        "&&": "(({left}) && ({right}))", "||": "(({left}) || ({right}))",
        "hit": "{result}.hit", "miss": "(!{result}.hit)", "action_run": "{result}.action",
        "false": "0", "true": "1", "discard": "(void)({value});", "call_stmt": "(void)({value});",
        "!": "(!({v}))", "key_bits": "((u128)({v}) & {mask})",
        "key_bool": "(u128)(int)({v})", "bool_int": "(int)({v})",
        "incr": "{var} += 1;", "break": "break;", "exit": "return ST_EXIT;",
        "continue": "continue;", "element": "{base}.e{i}",
        "stack_size": "0x{size:x}ULL", "next_index": "((uint64_t){base}.nxt)",
        "last_index": "(((uint64_t){base}.nxt - 1) & 0xFFFFFFFFULL)",
    }

    is_simple = staticmethod(is_simple)
    bits = staticmethod(scalar_bits)
    mask_literal = staticmethod(mask_lit)
    fit_to = staticmethod(fit)

    def negation(self, v: str, t: Any) -> str:
        sc = scalar(t)
        ut = sc.utype if sc is not None else "u128"
        return fit(f"({ut})0 - ({ut})({v})", t) if scalar_bits(t) else f"(-({v}))"

    def spill(self, fn: CFnCtx, t: Any, code: str, at: int) -> str:
        return self.declare(fn, t, code, at=at)

    def result_var(self, fn: CFnCtx, t: Any) -> str:
        return self.declare(fn, t)

    def truth_var(self, fn: CFnCtx, code: str) -> str:
        res = self.tmp()
        fn.buf.emit(f"int {res} = ({code}) != 0;")
        return res

    def enum_member(self, t: T.EnumType, name: str) -> str:
        v = t.members.get(name, 0)
        return f"{v}U" if t.underlying is None else lit(v, scalar(t))

    def field(self, base: str, name: str) -> str:
        return f"{base}.f_{name}"

    def place(self, e: ast.Expr, fn: CFnCtx) -> str:
        return self.ref(e, fn)

    def assign_aggregate(self, fn: CFnCtx, base: str, t: Any, value: str) -> None:
        tv = self.tmp("v")
        fn.buf.emit(f"{{ {self.ct(t)} {tv} = {value}; {self.types.asg(t)}(&{base}, &{tv}); }}")

    def named(self, fn: CFnCtx, t: Any, code: str) -> str:
        return code if code.replace("_", "a").isalnum() else self.declare(fn, t, code)

    # ------------------------------------------------------------ l-values
    def stack_end_place(self, base: str, st: T.StackType, e: ast.Member, fn: CFnCtx) -> str:
        return self.stack_end(base, st, e.name, fn)

    def index_place(self, e: ast.Index, fn: CFnCtx) -> str:
        base = self.expr(e.expr, fn)
        t = T.strip_newtype(e.expr.type)
        if isinstance(t, T.StackType):
            if e.index.const is NOT_CONST:
                idx = self.expr(e.index, fn)
                oob = self.prog.error_code("StackOutOfBounds", 3)
                self.perr(fn, f"!{self.index_in(idx, e.index.type, t.size)}", oob)
                ti = self.tmp()
                fn.buf.emit(f"size_t {ti} = (size_t)({idx});")
                return f"{base}.items[{ti}]"
            i = int(e.index.const)
            if not 0 <= i < t.size:
                raise self.fail(f"index {i} out of range for a stack of {t.size}", e)
            return f"{base}.items[{i}]"
        if isinstance(t, T.TupleType | T.ListType) and e.index.const is not NOT_CONST:
            return self.element(base, int(e.index.const))
        raise self.fail(f"cannot assign into {t}", e)

    def ref(self, e: ast.Expr, fn: CFnCtx) -> str:
        if isinstance(e, ast.Index) and e.index.const is NOT_CONST and isinstance(
                T.strip_newtype(e.expr.type), T.StackType):
            st = T.strip_newtype(e.expr.type)
            base = self.ref(e.expr, fn)
            idx = self.expr(e.index, fn)
            et = self.ct(st.element)
            scratch = self.declare(fn, st.element, prefix="z")
            p = self.tmp("p")
            fn.buf.emit(f"{et} *{p} = {self.index_in(idx, e.index.type, st.size)} ? "
                        f"&{base}.items[(size_t)({idx})] : &{scratch};")
            return f"(*{p})"
        if isinstance(e, ast.Member) and isinstance(
                T.strip_newtype(e.expr.type), T.StructLikeType):
            return f"{self.ref(e.expr, fn)}.f_{e.name}"
        return self.expr(e, fn)

    def slice_update(self, target: ast.Slice, base: str, value: str) -> str:
        if is_wide(target.expr.type):
            raise self.fail("slices of values wider than 128 bits are not supported by "
                            "the C back end", target)
        sc = scalar(target.expr.type)
        ut = sc.utype if sc is not None else "u128"
        lo, mask, keep = slice_masks(target)
        new = (f"(({ut})({base}) & {mask_lit_v(keep, ut)}) | "
               f"((({ut})({value}) << {lo}) & {mask_lit_v(mask, ut)})")
        return fit(new, target.expr.type)



def mask_lit_v(v: int, ut: str) -> str:
    if ut == "u128" or v >= (1 << 64):
        from softswitch.fastpath.ctypes_ import u_lit
        return u_lit(v, True)
    return f"0x{v:x}ULL"
