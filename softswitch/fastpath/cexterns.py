"""C for calls of core and v1model externs (the interpreter's
:mod:`softswitch.core.extern_calls`, rule for rule).

Hash, checksum and digest data are flattened at generation time into the fields BMv2
serializes; fields of headers that may be invalid are skipped at run time, as BMv2's
field-list builder does. What needs the interpreter's own Python state — ``random``
(its seeded generator), meters (its clock and float token buckets), digests and
``log_msg`` (its queues), value sets — calls back into Python, so results stay
identical.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from softswitch.core.extern_calls import enum_name
from softswitch.fastpath.cexpr import FnCtx
from softswitch.fastpath.ctypes_ import Unsupported, fit, is_wide, scalar, scalar_bits
from softswitch.frontend import ast
from softswitch.frontend import types as T
from softswitch.frontend.cpnames import digest_data_type

if TYPE_CHECKING:
    from softswitch.fastpath.cblock import CBlock

Handler = Callable[["CBlock", ast.Call, Any, FnCtx], str | None]

HASHES = {"crc16": "H_CRC16", "crc32": "H_CRC32", "crc16_custom": "H_CRC16C",
          "crc32_custom": "H_CRC32C", "csum16": "H_CSUM16", "xor16": "H_XOR16",
          "identity": "H_IDENTITY"}


def lower_extern_call(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx,
                      want_value: bool) -> str | None:
    if info.kind == "extern_function":
        name = info.decl.name
        h = FUNCTIONS.get(name)
        if h is None:
            raise lw.fail(f"extern function '{name}' is not supported by the C back end", e)
        return h(lw, e, info, fn)
    ext = info.extern.name if info.extern is not None else ""
    h = METHODS.get((ext, info.decl.name))
    if h is None:
        raise lw.fail(f"method '{ext}.{info.decl.name}' is not supported by the C back end", e)
    return h(lw, e, info, fn)


# ---------------------------------------------------------------- helpers
def arg(info: Any, i: int) -> ast.Expr | None:
    return info.args[i] if i < len(info.args) else None


def flatten(lw: CBlock, e: ast.Expr, fn: FnCtx) -> list[tuple[str, int, str | None, Any]]:
    """(C value, width, validity or None, type) of every field in e, in order."""
    out: list[tuple[str, int, str | None, Any]] = []
    if isinstance(e, ast.ListExpr) and not isinstance(
            T.strip_newtype(e.type), T.StructLikeType):
        for item in e.items:
            out.extend(flatten(lw, item, fn))
        return out
    t = T.strip_newtype(e.type)
    code = lw.expr(e, fn)
    _flatten_value(lw, code, t, None, out, fn)
    return out


def _flatten_value(lw: CBlock, code: str, t: Any, valid: str | None,
                   out: list[tuple[str, int, str | None, Any]], fn: FnCtx) -> None:
    t = T.strip_newtype(t)
    if isinstance(t, T.StructLikeType | T.StackType | T.TupleType | T.ListType):
        if not code.replace("_", "a").isalnum():
            tmp = lw.declare(fn, t, code)
            code = tmp
    if isinstance(t, T.HeaderType):
        v = f"{code}._v"
        for f in t.fields:
            _flatten_value(lw, f"{code}.f_{f.name}", f.type, v, out, fn)
    elif isinstance(t, T.StructType | T.HeaderUnionType):
        for f in t.fields:
            _flatten_value(lw, f"{code}.f_{f.name}", f.type, valid, out, fn)
    elif isinstance(t, T.StackType):
        for i in range(t.size):
            _flatten_value(lw, f"{code}.items[{i}]", t.element, valid, out, fn)
    elif isinstance(t, T.TupleType | T.ListType):
        for i, et in enumerate(t.elements):
            _flatten_value(lw, f"{code}.e{i}", et, valid, out, fn)
    elif isinstance(t, T.BoolType):
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


def packed(lw: CBlock, e: ast.Expr, fn: FnCtx) -> tuple[str, str, int]:
    """Pack the data argument e like BMv2: (buffer, byte-count expression, max bytes)."""
    items = flatten(lw, e, fn)
    total = sum(w if w >= 0 else _t.max_width for _, w, _, _t in items)
    nbytes = (total + 7) // 8
    buf, n = lw.tmp("pk"), lw.tmp("pn")
    fn.buf.emit(f"uint8_t {buf}[{nbytes} + PAD];")
    fn.buf.emit(f"memset({buf}, 0, sizeof {buf});")
    fn.buf.emit(f"uint64_t {n} = 0;")
    i = 0
    while i < len(items):
        valid = items[i][2]
        j = i
        while j < len(items) and items[j][2] == valid:
            j += 1
        run = items[i:j]
        if valid is not None:
            fn.buf.emit(f"if ({valid}) {{")
            fn.buf.level += 1
        for code, w, _, _t in run:
            if is_wide(_t):
                fn.buf.emit(f"wr_varbit({buf}, {n}, ({code}).b, {w});")
                fn.buf.emit(f"{n} += {w};")
                continue
            if w < 0:
                fn.buf.emit(f"wr_varbit({buf}, {n}, ({code}).b, ({code}).w);")
                fn.buf.emit(f"{n} += ({code}).w;")
                continue
            if w == 0:
                continue
            if w > 64:
                fn.buf.emit(f"wr_bits128({buf}, {n}, (u128)({code}), {w});")
            else:
                fn.buf.emit(f"wr_bits({buf}, {n}, (uint64_t)({code}), {w});")
            fn.buf.emit(f"{n} += {w};")
        if valid is not None:
            fn.buf.level -= 1
            fn.buf.emit("}")
        i = j
    return buf, f"(size_t)(({n} + 7) >> 3)", nbytes


def hash_value(lw: CBlock, algo: str, buf: str, nbytes: str, e: ast.Node, fn: FnCtx) -> str:
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


def receiver(lw: CBlock, info: Any, fn: FnCtx) -> Any:
    """The extern object a method is called on (an ExternRef), or a packet pointer."""
    recv = info.receiver
    decl = getattr(recv, "decl", None)
    ref = lw.externs.get(id(decl))
    if ref is None and decl is not None:
        ref = lw.global_instance(decl)
    if ref is not None:
        return ref
    return lw.expr(recv, fn)


def out_assign(lw: CBlock, target: ast.Expr | None, code: str, fn: FnCtx) -> None:
    if target is None or isinstance(target, ast.DontCareExpr):
        fn.buf.emit(f"(void)({code});")
        return
    lw.assign(target, fit(code, target.type), fn)


def _index_ok(lw: CBlock, idx: str, t: Any, size: int) -> str:
    return lw._index_in(idx, t, size)


# ---------------------------------------------------------------- packet_in / packet_out
def _extract(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
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
    if isinstance(target, ast.Member) and target.name == "next" and isinstance(
            T.strip_newtype(target.expr.type), T.StackType):
        st = T.strip_newtype(target.expr.type)
        stack = lw.expr(target.expr, fn)
        lw.perr(fn, f"{stack}.nxt >= {st.size}", oob)
        fn.buf.emit(f"st = {ext}(c, {pkt}, &{stack}.items[{stack}.nxt], {vb});")
        lw.check(fn)
        fn.buf.emit(f"{stack}.nxt += 1;")
        return None
    if (isinstance(target, ast.Member) and isinstance(target.expr, ast.Member)
            and target.expr.name == "next"
            and isinstance(T.strip_newtype(target.expr.expr.type), T.StackType)):
        st = T.strip_newtype(target.expr.expr.type)
        stack = lw.expr(target.expr.expr, fn)
        lw.perr(fn, f"{stack}.nxt >= {st.size}", oob)
        elem = lw.tmp("p")
        fn.buf.emit(f"{lw.ct(st.element)} *{elem} = &{stack}.items[{stack}.nxt];")
        fn.buf.emit(f"st = {ext}(c, {pkt}, &{elem}->f_{target.name}, {vb});")
        lw.check(fn)
        ut = T.strip_newtype(target.expr.type)
        if isinstance(ut, T.HeaderUnionType):
            for f in ut.fields:
                if f.name != target.name:
                    fn.buf.emit(f"{elem}->f_{f.name}._v = 0;")
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


def _lookahead(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
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


def _advance(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
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


def _length(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return f"((uint64_t)({receiver(lw, info, fn)}->nbits >> 3))"


def _emit_one(lw: CBlock, pkt: str, t: Any, code: str, item: ast.Expr, fn: FnCtx) -> None:
    em = lw.prog.emitter(t)
    if lw.is_lvalue(item):
        ptr = f"&({code})"
    else:
        ptr = "&" + lw.declare(fn, t, code)
    fn.buf.emit(f"st = {em}(c, {pkt}, {ptr});")
    lw.check(fn)


def _emit(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    pkt = receiver(lw, info, fn)
    target = info.args[0]
    t = T.strip_newtype(target.type)
    if isinstance(target, ast.ListExpr) and not isinstance(t, T.StructLikeType):
        for item in target.items:
            it = T.strip_newtype(item.type)
            _emit_one(lw, pkt, it, lw.expr(item, fn), item, fn)
        return None
    _emit_one(lw, pkt, t, lw.expr(target, fn), target, fn)
    return None


# ---------------------------------------------------------------- core / v1model functions
def _verify(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    cond = lw.expr(info.args[0], fn)
    err = lw.expr(info.args[1], fn)
    lw.perr(fn, f"!({cond})", f"(int64_t)({err})")
    return None


def _mark_to_drop(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    sm = lw.expr(info.args[0], fn)
    fn.buf.emit(f"{sm}.f_egress_spec = 511;")
    fn.buf.emit(f"{sm}.f_mcast_grp = 0;")
    return None


def _hash(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    algo = enum_name(arg(info, 1))
    base = lw.expr(info.args[2], fn)
    buf, nbytes, _ = packed(lw, info.args[3], fn)
    mx = lw.expr(info.args[4], fn)
    h = hash_value(lw, algo, buf, nbytes, e, fn)
    bt = lw.tmp("hb")
    mt = lw.tmp("hm")
    fn.buf.emit(f"i128 {bt} = (i128)({base});")
    fn.buf.emit(f"i128 {mt} = (i128)({mx});")
    code = f"({mt} == 0 ? {bt} : {bt} + rt_fmod((i128)({h}), {mt}))"
    out_assign(lw, info.args[0], code, fn)
    return None


def _random(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    lo = lw.expr(info.args[1], fn)
    hi = lw.expr(info.args[2], fn)
    r = lw.tmp("rnd")
    fn.buf.emit(f"i128 {r} = 0;")
    fn.buf.emit(f"st = cb_random(c, (i128)({lo}), (i128)({hi}), &{r});")
    lw.check(fn)
    out_assign(lw, info.args[0], r, fn)
    return None


def _py_value(lw: CBlock, code: str, t: Any) -> str:
    """C expression making a new Python int of a C scalar (NULL on failure)."""
    sc = scalar(t)
    if sc is not None and sc.signed:
        return f"i128_to_py((i128)({code}))"
    return f"u128_to_py((u128)({code}))"


def _py_tuple(lw: CBlock, vals: list[str], fn: FnCtx) -> str:
    tup = lw.tmp("tp")
    fn.buf.emit(f"PyObject *{tup} = PyTuple_New({len(vals)});")
    fn.buf.emit(f"if (!{tup}) return ST_ABORT;")
    for i, v in enumerate(vals):
        x = lw.tmp("o")
        fn.buf.emit(f"PyObject *{x} = {v};")
        fn.buf.emit(f"if (!{x}) {{ Py_DECREF({tup}); return ST_ABORT; }}")
        fn.buf.emit(f"PyTuple_SET_ITEM({tup}, {i}, {x});")
    return tup


def _digest(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    recv = lw.expr(info.args[0], fn)
    data = info.args[1]
    items = flatten(lw, data, fn)
    vals = []
    for code, w, _, _t in items:
        if w < 0 or is_wide(_t):
            raise lw.fail("varbit or >128-bit values in a digest are not supported by the C "
                          "back end", e)
        if w > 0:
            vals.append(f"u128_to_py(((u128)({code})) & "
                        f"{'(~(u128)0)' if w >= 128 else f'((((u128)1) << {w}) - 1)'})")
        else:
            vals.append(_py_value(lw, code, _t))
    tup = _py_tuple(lw, vals, fn)
    # named as the interpreter and P4Info name it (cpnames.digest_names)
    tname = lw.prog.obj(lw.pb.elab.digest_names.get(id(e)) or str(digest_data_type(e)))
    rv = lw.tmp("o")
    fn.buf.emit(f"PyObject *{rv} = {_py_value(lw, recv, info.args[0].type)};")
    fn.buf.emit(f"if (!{rv}) {{ Py_DECREF({tup}); return ST_ABORT; }}")
    fn.buf.emit(f"{{ PyObject *_r = PyObject_CallMethod(PyTuple_GET_ITEM(c->objs, 0), "
                f"\"digest\", \"NON\", {rv}, PyTuple_GET_ITEM(c->objs, {tname}), {tup}); "
                f"if (!_r) return ST_ABORT; Py_DECREF(_r); }}")
    return None


def _clone(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    kind = enum_name(arg(info, 0))
    session = lw.expr(info.args[1], fn)
    has_fl = info.decl.name == "clone_preserving_field_list"
    fl = lw.expr(info.args[2], fn) if has_fl else "0"
    fn.buf.emit(f"c->pkt.clone_session = (uint64_t)({session});")
    fn.buf.emit(f"c->pkt.clone_type = {2 if kind == 'E2E' else 1};")
    fn.buf.emit(f"c->pkt.has_clone_fl = {1 if has_fl else 0};")
    fn.buf.emit(f"c->pkt.clone_fl = (int64_t)({fl});")
    return None


def _resubmit(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    fl = "-1"
    if info.decl.name.endswith("preserving_field_list"):
        fl = f"(int64_t)({lw.expr(info.args[0], fn)})"
    what = "resubmit" if info.decl.name.startswith("resubmit") else "recirc"
    fn.buf.emit(f"c->pkt.has_{what} = 1;")
    fn.buf.emit(f"c->pkt.{what}_fl = {fl};")
    return None


def _truncate(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    n = lw.expr(info.args[0], fn)
    fn.buf.emit("c->pkt.has_trunc = 1;")
    fn.buf.emit(f"c->pkt.trunc = (uint64_t)({n});")
    return None


def _checksum(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    name = info.decl.name
    cond = lw.expr(info.args[0], fn)
    algo = enum_name(arg(info, 3))
    target = info.args[2]
    b = scalar_bits(target.type)
    mask = (1 << b[0]) - 1 if b else 0xFFFF
    if mask >= (1 << 64):
        raise lw.fail("checksums wider than 64 bits are not supported by the C back end", e)
    with fn.buf.block(f"if ({cond})"):
        buf, nbytes, _ = packed(lw, info.args[1], fn)
        if name.endswith("_with_payload"):
            nb = lw.tmp("nb")
            sb = lw.tmp("sb")
            fn.buf.emit(f"size_t {nb} = {nbytes};")
            fn.buf.emit(f"uint8_t *{sb} = rt_scratch(c, {nb} + c->payload_len + PAD);")
            fn.buf.emit(f"if (!{sb}) {{ PyErr_NoMemory(); return ST_ABORT; }}")
            fn.buf.emit(f"memcpy({sb}, {buf}, {nb});")
            fn.buf.emit(f"if (c->payload_len) memcpy({sb} + {nb}, c->payload, c->payload_len);")
            buf, nbytes = sb, f"({nb} + c->payload_len)"
        h = f"((uint64_t)({hash_value(lw, algo, buf, nbytes, e, fn)}) & 0x{mask:x}ULL)"
        if name.startswith("verify"):
            cur = lw.expr(target, fn)
            with fn.buf.block(f"if ({h} != ((uint64_t)({cur}) & 0x{mask:x}ULL))"):
                fn.buf.emit("c->pkt.checksum_error = 1;")
        else:
            lw.assign(target, fit(h, target.type), fn)
    return None


def _assert(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    cond = lw.expr(info.args[0], fn)
    what = lw.prog.obj(info.decl.name)
    where = lw.prog.obj(e.loc)
    with fn.buf.block(f"if (!({cond}))"):
        fn.buf.emit(f"return cb_abort(c, {what}, {where}, \"abort\");")
    return None


def _log_msg(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
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
            vals.append(_py_value(lw, code, t))
    tup = _py_tuple(lw, vals, fn)
    mo = lw.prog.obj(msg)
    fn.buf.emit(f"{{ PyObject *_r = PyObject_CallMethod(PyTuple_GET_ITEM(c->objs, 0), \"log\", "
                f"\"ON\", PyTuple_GET_ITEM(c->objs, {mo}), {tup}); "
                f"if (!_r) return ST_ABORT; Py_DECREF(_r); }}")
    return None


def _static_assert(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return "1"


# ---------------------------------------------------------------- stateful externs
def _ref(lw: CBlock, info: Any, fn: FnCtx, kind: str, e: ast.Call) -> Any:
    r = receiver(lw, info, fn)
    if isinstance(r, str) or r.kind != kind:
        raise lw.fail(f"cannot resolve the {kind} this call uses", e)
    return r


def _reg_read(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = _ref(lw, info, fn, "register", e)
    idx = lw.expr(info.args[1], fn)
    size, width, signed = r.obj.size, r.obj.width, r.obj.signed
    cell = f"c->registers[{r.index}].cells[(size_t)({idx})]"
    val = f"sext128({cell}, {width})" if signed else cell
    code = f"({_index_ok(lw, idx, info.args[1].type, size)} ? (i128)({val}) : (i128)0)"
    out_assign(lw, info.args[0], code, fn)
    return None


def _reg_write(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = _ref(lw, info, fn, "register", e)
    idx = lw.expr(info.args[0], fn)
    val = lw.expr(info.args[1], fn)
    size, width = r.obj.size, r.obj.width
    m = "(~(u128)0)" if width >= 128 else f"((((u128)1) << {width}) - 1)"
    with fn.buf.block(f"if ({_index_ok(lw, idx, info.args[0].type, size)})"):
        fn.buf.emit(f"c->registers[{r.index}].cells[(size_t)({idx})] = (u128)({val}) & {m};")
    return None


def _count(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = _ref(lw, info, fn, "counter", e)
    idx = lw.expr(info.args[0], fn)
    with fn.buf.block(f"if ({_index_ok(lw, idx, info.args[0].type, r.obj.size)})"):
        fn.buf.emit(f"c->counters[{r.index}].pk[(size_t)({idx})] += 1;")
        fn.buf.emit(f"c->counters[{r.index}].by[(size_t)({idx})] += c->pkt.length;")
    return None


def _direct_count(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return None  # BMv2 counts direct counters on every hit of their table


def _execute_meter(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = _ref(lw, info, fn, "meter", e)
    idx = lw.expr(info.args[0], fn)
    res = lw.tmp("col")
    iv = lw.tmp("o")
    fn.buf.emit(f"u128 {res} = 0;")
    fn.buf.emit(f"PyObject *{iv} = {_py_value(lw, idx, info.args[0].type)};")
    fn.buf.emit(f"if (!{iv}) return ST_ABORT;")
    fn.buf.emit(f"st = cb_int(PyObject_CallMethod(PyTuple_GET_ITEM(c->objs, {r.index}), "
                f"\"execute\", \"NK\", {iv}, (unsigned long long)c->pkt.length), &{res});")
    lw.check(fn)
    out_assign(lw, info.args[1], res, fn)
    return None


def _direct_meter_read(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    decl = getattr(info.receiver, "decl", None)
    tid = lw.direct_meter_table.get(id(decl))
    code = f"c->tables[{tid}].color" if tid is not None else "0"
    out_assign(lw, info.args[0], code, fn)
    return None


def _checksum16_get(lw: CBlock, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    buf, nbytes, _ = packed(lw, info.args[0], fn)
    return f"rt_hash(H_CSUM16, {buf}, {nbytes})"


FUNCTIONS: dict[str, Handler] = {
    "verify": _verify,
    "mark_to_drop": _mark_to_drop,
    "hash": _hash,
    "random": _random,
    "digest": _digest,
    "clone": _clone,
    "clone3": _clone,
    "clone_preserving_field_list": _clone,
    "resubmit": _resubmit,
    "resubmit_preserving_field_list": _resubmit,
    "recirculate": _resubmit,
    "recirculate_preserving_field_list": _resubmit,
    "truncate": _truncate,
    "verify_checksum": _checksum,
    "update_checksum": _checksum,
    "verify_checksum_with_payload": _checksum,
    "update_checksum_with_payload": _checksum,
    "assert": _assert,
    "assume": _assert,
    "log_msg": _log_msg,
    "static_assert": _static_assert,
}

METHODS: dict[tuple[str, str], Handler] = {
    ("packet_in", "extract"): _extract,
    ("packet_in", "lookahead"): _lookahead,
    ("packet_in", "advance"): _advance,
    ("packet_in", "length"): _length,
    ("packet_out", "emit"): _emit,
    ("register", "read"): _reg_read,
    ("register", "write"): _reg_write,
    ("counter", "count"): _count,
    ("direct_counter", "count"): _direct_count,
    ("meter", "execute_meter"): _execute_meter,
    ("direct_meter", "read"): _direct_meter_read,
    ("Checksum16", "get"): _checksum16_get,
}
