"""BMv2 expressions as typed P4 expressions.

BMv2 evaluates expressions on unbounded integers and truncates on assignment; p4c
masks every result whose width matters (``& 0xff``). The translation types each
subexpression as ``bit<W>``/``int<W>``: ring operations (``+ - * & | ^ ~``) take the
wider operand's width, a left shift by a constant widens by the shift so bits p4c moves
up for a concatenation survive, and a comparison widens both sides to one width — so
the low bits BMv2 keeps are the ones P4's modular arithmetic computes. ``convert`` casts
an expression to the type its use needs (assignment, parameter, condition).
"""

from __future__ import annotations

from softswitch.bmv2json.context import BOOL, LIT, Context, P4Text, Ty, ident
from softswitch.bmv2json.reader import JsonNode

ARITH = {"+", "-", "*", "&", "|", "^"}
COMPARE = {"==", "!=", ">", ">=", "<", "<="}
VARIABLE_SHIFT_WIDTH = 64


class Unconvertible(Exception):
    """An expression used where its type cannot go (the caller names the object)."""


def literal(value: int, ty: Ty) -> str:
    """``value`` as a literal of type ``ty`` (wrapped to its width)."""
    if ty.kind == "bit":
        return f"{ty.width}w{value % (1 << ty.width)}"
    if ty.kind == "int":
        v = value % (1 << ty.width)
        if v >= 1 << (ty.width - 1):
            v -= 1 << ty.width
        return f"{ty.width}s{v}" if v >= 0 else f"(-{ty.width}s{-v})"
    if ty.kind == "bool":
        return "true" if value else "false"
    return str(value)


def convert(e: P4Text, ty: Ty) -> str:
    """The code of ``e`` as a value of ``ty``."""
    src = e.ty
    if e.value is not None and src == LIT:
        return literal(e.value, ty)
    if ty == src or ty.kind in ("lit", "header", "stack", "varbit", "error"):
        return e.code
    if ty.kind == "bool":
        if e.boolean is not None:
            return e.boolean
        return e.code if src.kind == "bool" else f"({e.code} != 0)"
    if src.kind == "bool":
        return convert(P4Text(f"({e.code} ? 1w1 : 1w0)", Ty("bit", 1)), ty)
    if src.kind == ty.kind:
        return f"(({ty.kind}<{ty.width}>){e.code})"
    if src.kind == "bit":  # bit -> int: zero-extend, then reinterpret
        return f"((int<{ty.width}>)(bit<{ty.width}>){e.code})"
    if src.kind == "int":  # int -> bit: sign-extend, then reinterpret
        return f"((bit<{ty.width}>)(int<{ty.width}>){e.code})"
    raise Unconvertible(f"cannot convert a {src.kind} value to {ty.kind}")


def _width_of(e: P4Text) -> int:
    if e.value is not None:
        return max(1, (e.value if e.value >= 0 else ~e.value).bit_length()
                   + (1 if e.value < 0 else 0))
    return e.ty.width


def _common(a: P4Text, b: P4Text, extra: int = 0) -> Ty:
    width = max(_width_of(a), _width_of(b)) + extra
    signed = a.ty.kind == "int" or b.ty.kind == "int"
    return Ty("int" if signed else "bit", width)


def hexstr(node: JsonNode, text: object) -> int:
    if not isinstance(text, str):
        raise node.error(f"expected a hex string, got {text!r}")
    try:
        return int(text, 16) if "0x" in text.lower() else int(text, 0)
    except ValueError:
        raise node.error(f"bad hex string {text!r}") from None


class Translator:
    """Translates expressions of one action, parser or control (``params``: runtime data)."""

    def __init__(self, ctx: Context, node: JsonNode, params: list[tuple[str, Ty]] | None = None):
        self.ctx = ctx
        self.node = node
        self.params = params or []

    def error(self, message: str) -> Exception:
        return self.node.error(message)

    def field(self, ref: object) -> P4Text:
        if not (isinstance(ref, list) and len(ref) == 2):
            raise self.error(f"malformed field reference {ref!r}")
        if isinstance(ref[0], dict):  # a field of a computed header (a stack element)
            return self.computed_field(self.op(ref[0]), ref[1])
        inst = self.ctx.instance(self.node, ref[0])
        if ref[1] == "$valid$":
            return P4Text(f"{inst.access}.isValid()", BOOL)
        got = inst.htype.field(ref[1])
        if got is None:
            raise self.error(f"header {ref[0]!r} has no field {ref[1]!r}")
        p4name, ty = got
        if inst.kind in ("std", "stdcopy"):
            p4name = ref[1]
            if p4name == "parser_error":
                ty = Ty("error")
        return P4Text(f"{inst.access}.{p4name}", ty)

    def computed_field(self, header: P4Text, name: object) -> P4Text:
        if name == "$valid$":
            return P4Text(f"{header.code}.isValid()", BOOL)
        got = header.htype.field(name) if header.htype is not None and isinstance(
            name, str) else None
        if got is None:
            raise self.error(f"{header.code} has no field {name!r}")
        return P4Text(f"{header.code}.{got[0]}", got[1])

    def header(self, name: object) -> P4Text:
        if isinstance(name, dict):  # a computed header: a stack element by index
            return self.op(name)
        inst = self.ctx.instance(self.node, name)
        return P4Text(inst.access, Ty("stack" if inst.kind == "stack" else "header"),
                    htype=inst.htype)

    def __call__(self, e: object) -> P4Text:
        if not isinstance(e, dict) or "type" not in e:
            raise self.error(f"malformed expression {e!r}")
        kind, value = e["type"], e.get("value")
        if kind == "field":
            return self.field(value)
        if kind == "hexstr":
            v = hexstr(self.node, value)
            if isinstance(e.get("bitwidth"), int):
                ty = Ty("bit", e["bitwidth"])
                return P4Text(literal(v, ty), ty)
            return P4Text(str(v), LIT, v)
        if kind == "bool":
            return P4Text("true" if value else "false", BOOL)
        if kind in ("local", "runtime_data"):
            if not isinstance(value, int) or not 0 <= value < len(self.params):
                raise self.error(f"runtime data index {value!r} out of range")
            name, ty = self.params[value]
            return P4Text(name, ty)
        if kind in ("header", "header_stack"):
            return self.header(value)
        if kind == "header_union_stack":
            access = f"hdr.{ident(value, 'us_')}" if isinstance(value, str) else ""
            if access not in self.ctx.union_stacks:
                raise self.error(f"unknown header union stack {value!r}")
            return P4Text(access, Ty("stack"))
        if kind == "header_union":
            if value not in self.ctx.union_instances:
                raise self.error(f"unknown header union {value!r}")
            return P4Text(self.ctx.union_instances[value][0], Ty("header"))
        if kind == "stack_field":
            if not (isinstance(value, list) and len(value) == 2):
                raise self.error(f"malformed stack field {value!r}")
            inst = self.ctx.instance(self.node, value[0])
            got = inst.htype.field(value[1])
            if got is None and value[1] == "last":  # p4c's name for the last element
                return P4Text(f"{inst.access}.last", Ty("header"), htype=inst.htype)
            if got is None:
                raise self.error(f"stack {value[0]!r} has no field {value[1]!r}")
            return P4Text(f"{inst.access}.last.{got[0]}", got[1])
        if kind == "expression":
            return self.op(value)
        if kind == "lookahead":
            return self.lookahead(value)
        raise self.error(f"expression type {kind!r} is not supported")

    def lookahead(self, value: object) -> P4Text:
        if not (isinstance(value, list) and len(value) == 2
                and all(isinstance(v, int) and v >= 0 for v in value) and value[1] > 0):
            raise self.error(f"malformed lookahead {value!r}")
        offset, width = value
        ty = Ty("bit", width)
        if offset == 0:
            return P4Text(f"pkt.lookahead<bit<{width}>>()", ty)
        return P4Text(f"pkt.lookahead<bit<{offset + width}>>()[{width - 1}:0]", ty)

    def op(self, v: object) -> P4Text:
        if isinstance(v, dict) and "type" in v and "op" not in v:
            return self(v)
        if not isinstance(v, dict) or "op" not in v:
            raise self.error(f"malformed expression {v!r}")
        op = v["op"]
        if op in ("?:", "?"):
            c = convert(self(v.get("cond")), BOOL)
            a, b = self(v.get("left")), self(v.get("right"))
            if a.ty.kind in ("bool", "header"):
                return P4Text(f"({c} ? {a.code} : {convert(b, a.ty)})", a.ty)
            ty = _common(a, b)
            return P4Text(f"({c} ? {convert(a, ty)} : {convert(b, ty)})", ty)
        unary = _UNARY.get(op)
        if unary is not None:
            raw = v.get("right")
            return unary(self, raw if op in ("valid", "valid_union") else self(raw))
        if op in ("sat_cast", "usat_cast"):
            return self.saturate(op == "sat_cast", v.get("left"), self(v.get("right")))
        if op == "two_comp_mod":
            return self.cast(op, self(v.get("left")), self(v.get("right")))
        if op == "access_field":
            return self.access_field(self(v.get("left")), v.get("right"))
        left, right = self(v.get("left")), self(v.get("right"))
        return self.binary(op, left, right)

    def saturate(self, signed: bool, raw: object, width: P4Text) -> P4Text:
        """``sat_cast``/``usat_cast``: the value (computed without wrapping) clamped to
        ``width`` bits."""
        if width.value is None:
            raise self.error("a saturating cast to a computed width is not supported")
        w = width.value
        inner = raw.get("value") if isinstance(raw, dict) else None
        while isinstance(inner, dict) and "op" not in inner and inner.get("type") == \
                "expression":
            inner = inner.get("value")
        if isinstance(inner, dict) and inner.get("op") in ("+", "-"):
            a, b = self(inner.get("left")), self(inner.get("right"))
            wide = Ty("int", max(_width_of(a), _width_of(b), w) + 2)
            value = f"({convert(a, wide)} {inner['op']} {convert(b, wide)})"
        else:
            e = self(raw)
            wide = Ty("int", max(_width_of(e), w) + 2)
            value = convert(e, wide)
        ty = Ty("int" if signed else "bit", w)
        lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
        clamp = convert(P4Text(value, wide), ty)
        return P4Text(f"(({value} < {literal(lo, wide)}) ? {literal(lo, ty)} : "
                    f"(({value} > {literal(hi, wide)}) ? {literal(hi, ty)} : {clamp}))", ty)

    def cast(self, op: str, e: P4Text, width: P4Text) -> P4Text:
        if width.value is None or op != "two_comp_mod":
            raise self.error(f"operation {op!r} is not supported")
        ty = Ty("int", width.value)
        return P4Text(convert(e, ty), ty)

    def binary(self, op: str, a: P4Text, b: P4Text) -> P4Text:
        if op in ("and", "or"):
            sym = "&&" if op == "and" else "||"
            return P4Text(f"({convert(a, BOOL)} {sym} {convert(b, BOOL)})", BOOL)
        if op in COMPARE:
            return self.compare(op, a, b)
        if op in ARITH:
            if a.value is not None and b.value is not None:
                return _fold(op, a.value, b.value)
            ty = _common(a, b)
            return P4Text(f"({convert(a, ty)} {op} {convert(b, ty)})", ty)
        if op in ("<<", ">>"):
            return self.shift(op, a, b)
        if op in ("/", "%"):
            ty = _common(a, b)
            return P4Text(f"({convert(a, ty)} {op} {convert(b, ty)})", ty)
        if op in ("dereference_header_stack", "dereference_union_stack"):
            return P4Text(f"{a.code}[{convert(b, Ty('bit', 32))}]", Ty("header"), htype=a.htype)
        raise self.error(f"operation {op!r} is not supported")

    def compare(self, op: str, a: P4Text, b: P4Text) -> P4Text:
        if a.ty.kind == "error" or b.ty.kind == "error":
            err, lit = (a, b) if a.ty.kind == "error" else (b, a)
            if lit.value is None or op not in ("==", "!="):
                raise self.error("only comparisons of parser_error with a constant are "
                                 "supported")
            return P4Text(f"({err.code} {op} error.{self.ctx.error_name(self.node, lit.value)})",
                        BOOL)
        if a.ty.kind == "varbit" and b.ty.kind == "varbit" and op in ("==", "!="):
            return P4Text(f"({a.code} {op} {b.code})", BOOL)
        if a.ty.kind in ("varbit", "stack") or b.ty.kind in ("varbit", "stack"):
            raise self.error(f"operation {op!r} on varbit or stack values is not supported")
        if a.ty.kind == "bool" and b.ty.kind == "bool":
            return P4Text(f"({a.code} {op} {b.code})", BOOL)
        if a.ty.kind == "header" or b.ty.kind == "header":
            raise self.error("comparing headers is not supported")
        ty = _common(a, b)
        if a.ty.kind != b.ty.kind and "lit" not in (a.ty.kind, b.ty.kind):
            ty = Ty("int", ty.width + 1)
        return P4Text(f"({convert(a, ty)} {op} {convert(b, ty)})", BOOL)

    def shift(self, op: str, a: P4Text, b: P4Text) -> P4Text:
        if a.value is not None and b.value is not None:
            return _fold(op, a.value, b.value)
        width = _width_of(a)
        if op == "<<" and b.value is not None:
            width += b.value
        elif op == "<<":  # bits a variable shift moves up survive up to 128 (C's widest)
            width = max(width, min(width + VARIABLE_SHIFT_WIDTH, 128))
        ty = Ty(a.ty.kind if a.ty.kind != "lit" else "bit", width)
        amount = str(b.value) if b.value is not None else convert(b, Ty("bit", b.ty.width or 8))
        return P4Text(f"({convert(a, ty)} {op} {amount})", ty)

    def access_field(self, a: P4Text, index: object) -> P4Text:
        fields = a.htype.fields if a.htype is not None else []
        if not isinstance(index, int) or not 0 <= index < len(fields):
            raise self.error(f"access_field: no field {index!r} in {a.code}")
        _, p4name, ty = fields[index]
        return P4Text(f"{a.code}.{p4name}", ty)


def _fold(op: str, x: int, y: int) -> P4Text:
    value = {"+": x + y, "-": x - y, "*": x * y, "&": x & y, "|": x | y, "^": x ^ y,
             "<<": x << y, ">>": x >> y}[op]
    return P4Text(str(value), LIT, value)


def _not(t: Translator, e: P4Text) -> P4Text:
    return P4Text(f"(!{convert(e, BOOL)})", BOOL)


def _neg(t: Translator, e: P4Text) -> P4Text:
    if e.value is not None:
        return P4Text(str(~e.value), LIT, ~e.value)
    return P4Text(f"(~{e.code})", e.ty)


def _valid(t: Translator, raw: object) -> P4Text:
    if isinstance(raw, dict) and raw.get("type") == "header":
        return P4Text(f"{t.header(raw.get('value')).code}.isValid()", BOOL)
    return P4Text(f"{t(raw).code}.isValid()", BOOL)


def _d2b(t: Translator, e: P4Text) -> P4Text:
    return P4Text(convert(e, BOOL), BOOL)


def _b2d(t: Translator, e: P4Text) -> P4Text:
    ty = Ty("bit", 1)
    return P4Text(convert(e, ty), ty, boolean=e.code if e.ty == BOOL else None)


def _last_index(t: Translator, e: P4Text) -> P4Text:
    return P4Text(f"{e.code}.lastIndex", Ty("bit", 32))


_UNARY = {"not": _not, "~": _neg, "valid": _valid, "valid_union": _valid, "d2b": _d2b, "b2d": _b2d,
          "last_stack_index": _last_index}
