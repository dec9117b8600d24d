"""The fast path's C for extern calls: the helpers, and core.p4's externs.

The C emissions of core.p4's calls (``extract``, ``lookahead``, ``advance``,
``length``, ``emit``, ``verify``, ``log_msg``, ``static_assert``), the C side of the
interpreter's :mod:`softswitch.core.extern_calls`, and the helpers an architecture's
extern table (:mod:`softswitch.v1model.externs`) builds its C emissions on. Hash,
checksum and digest data are flattened at generation time into the fields BMv2
serializes; fields of headers that may be invalid are skipped at run time, as BMv2's
field-list builder does. What needs the interpreter's own Python state (``random``,
meters, digests, ``log_msg``) calls back into Python, so results stay identical.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from softswitch.core.exprwalk import other_members
from softswitch.core.extern_calls import arg, emitted_items, extract_into
from softswitch.core.extern_table import Emission
from softswitch.core.fieldlist import data_fields, guarded, validity_runs
from softswitch.fastpath.cexpr import CFnCtx
from softswitch.fastpath.ctypes_ import Unsupported, fit, is_wide, scalar, scalar_bits
from softswitch.frontend import ast
from softswitch.frontend import types as T

if TYPE_CHECKING:
    from softswitch.fastpath.ccontracts import CLowering

HASHES = {"crc16": "H_CRC16", "crc32": "H_CRC32", "crc16_custom": "H_CRC16C",
          "crc32_custom": "H_CRC32C", "csum16": "H_CSUM16", "xor16": "H_XOR16",
          "identity": "H_IDENTITY"}


# ---------------------------------------------------------------- helpers
def flatten(lw: CLowering, e: ast.Expr, fn: CFnCtx) -> list[tuple[str, int, str | None, Any]]:
    """(C value, width, validity or None, type) of every field in e, in order (width -1:
    a varbit)."""
    out: list[tuple[str, int, str | None, Any]] = []
    for code, t, valid in data_fields(lw, e, fn):
        if isinstance(t, T.BoolType):
            out.append((f"((uint64_t)({code}))", 1, valid, t))
        elif isinstance(t, T.VarbitType):
            out.append((code, -1, valid, t))
        elif is_wide(t):
            out.append((code, t.width, valid, t))
        else:
            b = scalar_bits(t)
            if b is None and scalar(t) is None:
                raise Unsupported(f"a {t} value cannot be serialized by the C back end")
            out.append((code, b[0] if b else 0, valid, t))
    return out


def packed(lw: CLowering, e: ast.Expr, fn: CFnCtx) -> tuple[str, str, int]:
    """Pack the data argument e like BMv2: (buffer, byte-count expression, max bytes)."""
    items = flatten(lw, e, fn)
    total = sum(w if w >= 0 else _t.max_width for _, w, _, _t in items)
    nbytes = (total + 7) // 8
    buf, n = lw.tmp("pk"), lw.tmp("pn")
    fn.buf.emit(f"uint8_t {buf}[{nbytes} + PAD];")
    fn.buf.emit(f"memset({buf}, 0, sizeof {buf});")
    fn.buf.emit(f"uint64_t {n} = 0;")
    for valid, run in validity_runs(items):
        with guarded(fn.buf, valid):
            for code, w, _, _t in run:
                _pack_one(buf, n, code, w, _t, fn)
    return buf, f"(size_t)(({n} + 7) >> 3)", nbytes


def _pack_one(buf: str, n: str, code: str, w: int, t: Any, fn: CFnCtx) -> None:
    """Write one field at bit ``n`` of ``buf`` and advance ``n``."""
    if is_wide(t):
        fn.buf.emit(f"wr_varbit({buf}, {n}, ({code}).b, {w});")
        fn.buf.emit(f"{n} += {w};")
    elif w < 0:
        fn.buf.emit(f"wr_varbit({buf}, {n}, ({code}).b, ({code}).w);")
        fn.buf.emit(f"{n} += ({code}).w;")
    elif w > 0:
        if w > 64:
            fn.buf.emit(f"wr_bits128({buf}, {n}, (u128)({code}), {w});")
        else:
            fn.buf.emit(f"wr_bits({buf}, {n}, (uint64_t)({code}), {w});")
        fn.buf.emit(f"{n} += {w};")


def hash_value(lw: CLowering, algo: str, buf: str, nbytes: str, e: ast.Node, fn: CFnCtx) -> str:
    """A C expression for the named hash over buf (a callback for 'random')."""
    if algo == "random":
        r = lw.tmp("h")
        fn.buf.emit(f"uint64_t {r} = 0;")
        fn.buf.emit(f"st = cb_hash_random(c, {buf}, {nbytes}, &{r});")
        lw.check(fn)
        return r
    code = HASHES.get(algo)
    if code is None:
        raise lw.fail(f"hash algorithm '{algo}' is not supported by the v1model target", e)
    return f"rt_hash({code}, {buf}, {nbytes})"


def receiver(lw: CLowering, info: Any, fn: CFnCtx) -> Any:
    """The extern object a method is called on (an ExternRef), or a packet pointer."""
    recv = info.receiver
    decl = getattr(recv, "decl", None)
    ref = lw.externs.get(id(decl))
    if ref is None and decl is not None:
        ref = lw.global_instance(decl)
    if ref is not None:
        return ref
    return lw.expr(recv, fn)


def index_ok(lw: CLowering, idx: str, t: Any, size: int) -> str:
    return lw.index_in(idx, t, size)


def extern_ref(lw: CLowering, info: Any, fn: CFnCtx, kind: str, e: ast.Call) -> Any:
    r = receiver(lw, info, fn)
    if isinstance(r, str) or r.kind != kind:
        raise lw.fail(f"cannot resolve the {kind} this call uses", e)
    return r


# ---------------------------------------------------------------- packet_in / packet_out
def _extract(lw: CLowering, e: ast.Call, info: Any, fn: CFnCtx) -> str | None:
    pkt = receiver(lw, info, fn)
    target = info.args[0]
    tt = T.strip_newtype(info.params[0].type if info.params else target.type)
    if not isinstance(tt, T.HeaderType):
        raise lw.fail("only headers can be extracted by the v1model target", target)
    ext = lw.prog.extractor(tt)
    vb = "0"
    if len(info.args) > 1 and info.args[1] is not None:
        vb = f"(i128)({lw.expr(info.args[1], fn)})"
    oob = lw.prog.error_code("StackOutOfBounds", 3)
    into = extract_into(target)
    if into == "next":
        st = T.strip_newtype(target.expr.type)
        stack = lw.expr(target.expr, fn)
        lw.perr(fn, f"{stack}.nxt >= {st.size}", oob)
        fn.buf.emit(f"st = {ext}(c, {pkt}, &{stack}.items[{stack}.nxt], {vb});")
        lw.check(fn)
        fn.buf.emit(f"{stack}.nxt += 1;")
        return None
    if into == "next_member":
        st = T.strip_newtype(target.expr.expr.type)
        stack = lw.expr(target.expr.expr, fn)
        lw.perr(fn, f"{stack}.nxt >= {st.size}", oob)
        elem = lw.tmp("p")
        fn.buf.emit(f"{lw.ct(st.element)} *{elem} = &{stack}.items[{stack}.nxt];")
        fn.buf.emit(f"st = {ext}(c, {pkt}, &{elem}->f_{target.name}, {vb});")
        lw.check(fn)
        for other in other_members(target):
            fn.buf.emit(f"{elem}->f_{other}._v = 0;")
        fn.buf.emit(f"{stack}.nxt += 1;")
        return None
    if isinstance(target, ast.DontCareExpr):
        h = lw.declare(fn, tt)
    else:
        h = lw.ref(target, fn)
    fn.buf.emit(f"st = {ext}(c, {pkt}, &{h}, {vb});")
    lw.check(fn)
    lw.after_header_write(target, fn)
    return None


def _lookahead(lw: CLowering, e: ast.Call, info: Any, fn: CFnCtx) -> str | None:
    pkt = receiver(lw, info, fn)
    t = T.strip_newtype(e.type)
    short = lw.prog.error_code("PacketTooShort", 1)
    if isinstance(t, T.HeaderType | T.StructType):
        ext = lw.prog.extractor(t)
        h = lw.declare(fn, t)
        sv = lw.tmp("pos")
        fn.buf.emit(f"uint64_t {sv} = {pkt}->pos;")
        fn.buf.emit(f"st = {ext}(c, {pkt}, &{h}, 0);")
        fn.buf.emit(f"{pkt}->pos = {sv};")
        lw.check(fn)
        return h
    if isinstance(t, T.BoolType):
        lw.perr(fn, f"{pkt}->pos + 1 > {pkt}->nbits", short)
        return f"((int)rd_bits({pkt}->data, {pkt}->pos, 1))"
    b = scalar_bits(t)
    if b is None:
        raise lw.fail(f"lookahead of {t} is not supported", e)
    w = b[0]
    lw.perr(fn, f"{pkt}->pos + {w} > {pkt}->nbits", short)
    rd = (f"rd_bits128({pkt}->data, {pkt}->pos, {w})" if w > 64
          else f"rd_bits({pkt}->data, {pkt}->pos, {w})")
    v = lw.declare(fn, t, fit(rd, t) if b[1] else rd)
    return v


def _advance(lw: CLowering, e: ast.Call, info: Any, fn: CFnCtx) -> str | None:
    pkt = receiver(lw, info, fn)
    n = lw.expr(info.args[0], fn)
    short = lw.prog.error_code("PacketTooShort", 1)
    bad = lw.prog.error_code("ParserInvalidArgument", 6)
    t = lw.tmp("adv")
    fn.buf.emit(f"u128 {t} = (u128)({n});")
    # BMv2 (ParserOpAdvance): whole bytes only, then enough packet left
    lw.perr(fn, f"{t} % 8", bad)
    lw.perr(fn, f"(u128){pkt}->pos + {t} > (u128){pkt}->nbits", short)
    fn.buf.emit(f"{pkt}->pos += (uint64_t){t};")
    return None


def _length(lw: CLowering, e: ast.Call, info: Any, fn: CFnCtx) -> str | None:
    return f"((uint64_t)({receiver(lw, info, fn)}->nbits >> 3))"


def _emit_one(lw: CLowering, pkt: str, t: Any, code: str, item: ast.Expr, fn: CFnCtx) -> None:
    em = lw.prog.emitter(t)
    if lw.is_lvalue(item):
        ptr = f"&({code})"
    else:
        ptr = "&" + lw.declare(fn, t, code)
    fn.buf.emit(f"st = {em}(c, {pkt}, {ptr});")
    lw.check(fn)


def _emit(lw: CLowering, e: ast.Call, info: Any, fn: CFnCtx) -> str | None:
    pkt = receiver(lw, info, fn)
    for item in emitted_items(info.args[0]):
        _emit_one(lw, pkt, T.strip_newtype(item.type), lw.expr(item, fn), item, fn)
    return None


# ---------------------------------------------------------------- core functions
def _verify(lw: CLowering, e: ast.Call, info: Any, fn: CFnCtx) -> str | None:
    cond = lw.expr(info.args[0], fn)
    err = lw.expr(info.args[1], fn)
    lw.perr(fn, f"!({cond})", f"(int64_t)({err})")
    return None


def py_value(lw: CLowering, code: str, t: Any) -> str:
    """C expression making a new Python int of a C scalar (NULL on failure)."""
    sc = scalar(t)
    if sc is not None and sc.signed:
        return f"i128_to_py((i128)({code}))"
    return f"u128_to_py((u128)({code}))"


def py_tuple(lw: CLowering, vals: list[str], fn: CFnCtx) -> str:
    tup = lw.tmp("tp")
    fn.buf.emit(f"PyObject *{tup} = PyTuple_New({len(vals)});")
    fn.buf.emit(f"if (!{tup}) return ST_ABORT;")
    for i, v in enumerate(vals):
        x = lw.tmp("o")
        fn.buf.emit(f"PyObject *{x} = {v};")
        fn.buf.emit(f"if (!{x}) {{ Py_DECREF({tup}); return ST_ABORT; }}")
        fn.buf.emit(f"PyTuple_SET_ITEM({tup}, {i}, {x});")
    return tup


def _log_msg(lw: CLowering, e: ast.Call, info: Any, fn: CFnCtx) -> str | None:
    m = info.args[0]
    msg = m.const if isinstance(m.const, str) else (
        m.value if isinstance(m, ast.StringLiteral) else None)
    if msg is None:
        raise lw.fail("log_msg needs a constant string", e)
    data = arg(info, 1)
    vals: list[str] = []
    if data is not None:
        for code, w, _v, t in flatten(lw, data, fn):
            if w < 0 or is_wide(t):
                raise lw.fail("varbit or >128-bit values in log_msg are not supported by the "
                              "C back end", e)
            vals.append(py_value(lw, code, t))
    tup = py_tuple(lw, vals, fn)
    mo = lw.prog.obj(msg)
    fn.buf.emit(f"{{ PyObject *_r = PyObject_CallMethod(PyTuple_GET_ITEM(c->objs, 0), \"log\", "
                f"\"ON\", PyTuple_GET_ITEM(c->objs, {mo}), {tup}); "
                f"if (!_r) return ST_ABORT; Py_DECREF(_r); }}")
    return None


def _static_assert(lw: CLowering, e: ast.Call, info: Any, fn: CFnCtx) -> str | None:
    return "1"


#: C emissions of core.p4's calls, by the keys of :data:`softswitch.core.extern_calls.CORE`.
CORE_FUNCTIONS: dict[str, Emission] = {
    "verify": _verify,
    "static_assert": _static_assert,
    "log_msg": _log_msg,
}

CORE_METHODS: dict[tuple[str, str], Emission] = {
    ("packet_in", "extract"): _extract,
    ("packet_in", "lookahead"): _lookahead,
    ("packet_in", "advance"): _advance,
    ("packet_in", "length"): _length,
    ("packet_out", "emit"): _emit,
}
