"""Code generation for calls of core and v1model externs.

Each extern call becomes a few lines calling the packet cursor, the stateful extern
objects (:mod:`externs`), the hash functions (:mod:`hashes`) or the per-packet runtime
``_RT`` (:class:`~softswitch.v1model.switch.Runtime`). Data arguments of ``hash``,
checksums and ``digest`` are flattened at compile time into the list of fields BMv2
would serialize (fields of invalid headers are skipped, as BMv2's field-list builder
does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from softswitch.frontend import ast
from softswitch.frontend import types as T
from softswitch.frontend.ast import NOT_CONST
from softswitch.frontend.cpnames import digest_data_type
from softswitch.v1model import hashes
from softswitch.v1model.lower import FnCtx, fit, scalar_bits
from softswitch.v1model.values import attr

if TYPE_CHECKING:
    from softswitch.v1model.blocks import BlockLowerer

Handler = Callable[["BlockLowerer", ast.Call, Any, FnCtx], str | None]


def lower_extern_call(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx,
                      want_value: bool) -> str | None:
    """Lower one extern call with the handlers of the program's architecture: the
    builder's ``extern_functions``/``extern_methods`` (v1model's unless another target,
    such as softswitch.pna, supplies its own)."""
    target = lw.pb.target_name
    if info.kind == "extern_function":
        name = info.decl.name
        h = (lw.pb.extern_functions or FUNCTIONS).get(name)
        if h is None:
            raise lw.fail(f"extern function '{name}' is not supported by the {target} target",
                          e)
        return h(lw, e, info, fn)
    ext = info.extern.name if info.extern is not None else ""
    h = (lw.pb.extern_methods or METHODS).get((ext, info.decl.name))
    if h is None:
        raise lw.fail(f"method '{ext}.{info.decl.name}' is not supported by the {target} "
                      "target", e)
    return h(lw, e, info, fn)


# ---------------------------------------------------------------- helpers
def enum_name(e: ast.Expr | None) -> str:
    """The member name of an enum-valued constant argument (``HashAlgorithm.crc16``)."""
    if e is None:
        return ""
    c = e.const
    if c is not NOT_CONST and hasattr(c, "name"):
        return str(c.name)
    if isinstance(e, ast.Member):
        return e.name
    return ""


def flatten(lw: BlockLowerer, e: ast.Expr, fn: FnCtx) -> list[tuple[str, int, str | None]]:
    """(value code, width, validity code or None) for every field in ``e``, in order."""
    out: list[tuple[str, int, str | None]] = []
    if isinstance(e, ast.ListExpr) and not isinstance(
            T.strip_newtype(e.type), T.StructLikeType):
        for item in e.items:
            out.extend(flatten(lw, item, fn))
        return out
    t = T.strip_newtype(e.type)
    code = lw.expr(e, fn)
    _flatten_value(lw, code, t, None, out, fn)
    return out


def _flatten_value(lw: BlockLowerer, code: str, t: Any, valid: str | None,
                   out: list[tuple[str, int, str | None]], fn: FnCtx) -> None:
    t = T.strip_newtype(t)
    if isinstance(t, T.StructLikeType | T.StackType | T.TupleType | T.ListType):
        if not code.isidentifier():
            tmp = lw.tmp()
            fn.buf.emit(f"{tmp} = {code}")
            code = tmp
    if isinstance(t, T.HeaderType):
        v = f"{code}._v"
        for f in t.fields:
            _flatten_value(lw, f"{code}.{attr(f.name)}", f.type, v, out, fn)
    elif isinstance(t, T.StructType | T.HeaderUnionType):
        for f in t.fields:
            _flatten_value(lw, f"{code}.{attr(f.name)}", f.type, valid, out, fn)
    elif isinstance(t, T.StackType):
        for i in range(t.size):
            _flatten_value(lw, f"{code}.items[{i}]", t.element, valid, out, fn)
    elif isinstance(t, T.TupleType | T.ListType):
        for i, et in enumerate(t.elements):
            _flatten_value(lw, f"{code}[{i}]", et, valid, out, fn)
    elif isinstance(t, T.BoolType):
        out.append((f"int({code})", 1, valid))
    elif isinstance(t, T.VarbitType):
        out.append((code, -1, valid))
    else:
        b = scalar_bits(t)
        out.append((code, b[0] if b else 0, valid))


def packed(lw: BlockLowerer, e: ast.Expr, fn: FnCtx) -> str:
    """Python expression for the bytes BMv2 hashes for data argument ``e``."""
    items = flatten(lw, e, fn)
    if all(v is None for _, w, v in items) and all(w >= 0 for _, w, _ in items):
        # Widths are known now: build the integer inline and convert once.
        acc = ""
        total = 0
        for code, w, _ in items:
            part = f"(({code}) & {(1 << w) - 1})"
            acc = part if not acc else f"(({acc}) << {w}) | {part}"
            total += w
        if not acc:
            return "b''"
        pad = (-total) % 8
        if pad:
            acc = f"(({acc}) << {pad})"
        return f"({acc}).to_bytes({(total + pad) // 8}, 'big')"
    # Fields of headers that may be invalid (skipped) or varbits: accumulate in
    # statements, one step per run of fields sharing a validity condition.
    acc, n = lw.tmp("_pk"), lw.tmp("_pn")
    fn.buf.emit(f"{acc} = 0")
    fn.buf.emit(f"{n} = 0")
    i = 0
    while i < len(items):
        valid = items[i][2]
        j = i
        while j < len(items) and items[j][2] == valid:
            j += 1
        run = items[i:j]
        if valid is not None:
            fn.buf.emit(f"if {valid}:")
            fn.buf.level += 1
        fixed = 0
        expr = acc
        for code, w, _ in run:
            if w < 0:
                if fixed:
                    fn.buf.emit(f"{acc} = {expr}")
                    fn.buf.emit(f"{n} += {fixed}")
                    fixed, expr = 0, acc
                fn.buf.emit(f"{acc} = ({acc} << {code}[0]) | {code}[1]")
                fn.buf.emit(f"{n} += {code}[0]")
            else:
                expr = f"(({expr}) << {w}) | (({code}) & {(1 << w) - 1})"
                fixed += w
        if fixed:
            fn.buf.emit(f"{acc} = {expr}")
            fn.buf.emit(f"{n} += {fixed}")
        if valid is not None:
            fn.buf.level -= 1
        i = j
    return f"({acc} << (-{n} % 8)).to_bytes(({n} + 7) >> 3, 'big')"


def hash_call(lw: BlockLowerer, algo: str, data: str, e: ast.Node) -> str:
    """A call of the named hash on ``data``, bound directly when it is deterministic."""
    fn = hashes.ALGORITHMS.get(algo)
    if fn is None:
        if algo != "random":
            raise lw.fail(f"hash algorithm '{algo}' is not supported by the v1model target", e)
        return f"_RT.hash('random', {data})"
    return f"{lw.const_obj(fn, '_hf')}({data})"


def arg(info: Any, i: int) -> ast.Expr | None:
    return info.args[i] if i < len(info.args) else None


def receiver(lw: BlockLowerer, info: Any, fn: FnCtx) -> str:
    recv = info.receiver
    name = lw.names.get(id(getattr(recv, "decl", None)))
    if name is None:
        return lw.expr(recv, fn)
    return name


def out_assign(lw: BlockLowerer, target: ast.Expr | None, code: str, fn: FnCtx) -> None:
    if target is None or isinstance(target, ast.DontCareExpr):
        fn.buf.emit(code)
        return
    lw.assign(target, fit(code, target.type), fn)


# ---------------------------------------------------------------- packet_in / packet_out
def _extract(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    pkt = receiver(lw, info, fn)
    target = info.args[0]
    tt = T.strip_newtype(info.params[0].type if info.params else target.type)
    if not isinstance(tt, T.HeaderType):
        raise lw.fail("only headers can be extracted by the v1model target", target)
    ext = lw.const_obj(lw.pb.wire.extractor(tt), "_ext")
    varbits = ""
    if len(info.args) > 1 and info.args[1] is not None:
        varbits = ", " + lw.expr(info.args[1], fn)
    if isinstance(target, ast.Member) and target.name == "next" and isinstance(
            T.strip_newtype(target.expr.type), T.StackType):
        stack = lw.expr(target.expr, fn)
        fn.buf.emit(f"_extract_next({pkt}, {stack}, {ext}{varbits})")
        return None
    if (isinstance(target, ast.Member) and isinstance(target.expr, ast.Member)
            and target.expr.name == "next"
            and isinstance(T.strip_newtype(target.expr.expr.type), T.StackType)):
        # ``stack.next.member`` of a stack of unions: extract, then advance nextIndex.
        stack = lw.expr(target.expr.expr, fn)
        elem = lw.tmp()
        fn.buf.emit(f"{elem} = _stk_next({stack})")
        fn.buf.emit(f"{ext}({pkt}, {elem}.{attr(target.name)}{varbits})")
        ut = T.strip_newtype(target.expr.type)
        if isinstance(ut, T.HeaderUnionType):
            for f in ut.fields:
                if f.name != target.name:
                    fn.buf.emit(f"{elem}.{attr(f.name)}._v = False")
        fn.buf.emit(f"{stack}.nxt += 1")
        return None
    h = lw.default_of(tt) if isinstance(target, ast.DontCareExpr) else lw.expr(target, fn)
    fn.buf.emit(f"{ext}({pkt}, {h}{varbits})")
    lw.after_header_write(target, fn)
    return None


def _lookahead(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    pkt = receiver(lw, info, fn)
    t = T.strip_newtype(e.type)
    if isinstance(t, T.HeaderType | T.StructType):
        look = lw.const_obj(lw.pb.wire.lookahead_header(t), "_look")
        return f"{look}({pkt})"
    if isinstance(t, T.BoolType):
        return f"bool(_peek({pkt}, 1))"
    b = scalar_bits(t)
    if b is None:
        raise lw.fail(f"lookahead of {t} is not supported", e)
    return fit(f"_peek({pkt}, {b[0]})", t) if b[1] else f"_peek({pkt}, {b[0]})"


def _advance(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    pkt = receiver(lw, info, fn)
    return f"_advance({pkt}, {lw.expr(info.args[0], fn)})"


def _length(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return f"({receiver(lw, info, fn)}.total_bits >> 3)"


def _emit(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    pkt = receiver(lw, info, fn)
    target = info.args[0]
    t = T.strip_newtype(target.type)
    if isinstance(target, ast.ListExpr) and not isinstance(t, T.StructLikeType):
        for item in target.items:
            it = T.strip_newtype(item.type)
            em = lw.const_obj(lw.pb.wire.emitter(it), "_em")
            fn.buf.emit(f"{em}({pkt}, {lw.expr(item, fn)})")
        return None
    em = lw.const_obj(lw.pb.wire.emitter(t), "_em")
    return f"{em}({pkt}, {lw.expr(target, fn)})"


# ---------------------------------------------------------------- core / v1model functions
def _verify(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    cond = lw.expr(info.args[0], fn)
    err = lw.expr(info.args[1], fn)
    fn.buf.emit(f"if not ({cond}):")
    with fn.buf.block():
        fn.buf.emit(f"raise _PErr({err})")
    return None


def _mark_to_drop(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    sm = lw.expr(info.args[0], fn)
    fn.buf.emit(f"{sm}.f_egress_spec = 511")
    fn.buf.emit(f"{sm}.f_mcast_grp = 0")
    return None


def _hash(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    algo = enum_name(arg(info, 1))
    base = lw.expr(info.args[2], fn)
    data = packed(lw, info.args[3], fn)
    mx = lw.expr(info.args[4], fn)
    h = hash_call(lw, algo, data, e)
    out_assign(lw, info.args[0], f"_hash_offset({base}, {h}, {mx})", fn)
    return None


def _random(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    lo = lw.expr(info.args[1], fn)
    hi = lw.expr(info.args[2], fn)
    out_assign(lw, info.args[0], f"_RT.random({lo}, {hi})", fn)
    return None


def _digest(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    recv = lw.expr(info.args[0], fn)
    data = info.args[1]
    items = flatten(lw, data, fn)
    # Digest data goes to the control plane as unsigned bit strings.
    vals = ", ".join(f"(({c}) & {(1 << w) - 1})" if w > 0 else c for c, w, _ in items)
    # named as in P4Info, so digests the switch produces match what clients were told
    tname = lw.pb.elab.digest_names.get(id(e)) or str(digest_data_type(e))
    return f"_RT.digest({recv}, {tname!r}, ({vals}{',' if len(items) == 1 else ''}))"


def _clone(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    kind = enum_name(arg(info, 0))
    session = lw.expr(info.args[1], fn)
    fl = "None"
    if info.decl.name == "clone_preserving_field_list":
        fl = lw.expr(info.args[2], fn)
    return f"_RT.clone({kind!r}, {session}, {fl})"


def _resubmit(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    fl = "-1"
    if info.decl.name.endswith("preserving_field_list"):
        fl = lw.expr(info.args[0], fn)
    what = "resubmit" if info.decl.name.startswith("resubmit") else "recirculate"
    return f"_RT.{what}({fl})"


def _truncate(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return f"_RT.truncate({lw.expr(info.args[0], fn)})"


def _checksum(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    name = info.decl.name
    cond = lw.expr(info.args[0], fn)
    algo = enum_name(arg(info, 3))
    target = info.args[2]
    b = scalar_bits(target.type)
    mask = (1 << b[0]) - 1 if b else 0xFFFF
    fn.buf.emit(f"if {cond}:")
    with fn.buf.block():
        data = packed(lw, info.args[1], fn)
        if name.endswith("_with_payload"):
            data = f"({data} + _RT.payload)"
        h = f"({hash_call(lw, algo, data, e)} & {mask})"
        if name.startswith("verify"):
            cur = lw.expr(target, fn)
            fn.buf.emit(f"if {h} != ({cur} & {mask}):")
            with fn.buf.block():
                fn.buf.emit("_RT.pkt.checksum_error = 1")
        else:
            lw.assign(target, fit(h, target.type), fn)
    return None


def _assert(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    cond = lw.expr(info.args[0], fn)
    where = lw.const_obj(e.loc, "_loc")
    fn.buf.emit(f"if not ({cond}):")
    with fn.buf.block():
        fn.buf.emit(f"_RT.abort({info.decl.name!r}, {where})")
    return None


def _log_msg(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    msg = lw.expr(info.args[0], fn)
    data = arg(info, 1)
    if data is None:
        return f"_RT.log({msg}, ())"
    items = flatten(lw, data, fn)
    vals = ", ".join(c for c, _, _ in items)
    return f"_RT.log({msg}, ({vals}{',' if len(items) == 1 else ''}))"


def _static_assert(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return "True"


# ---------------------------------------------------------------- stateful externs
def _reg_read(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = receiver(lw, info, fn)
    idx = lw.expr(info.args[1], fn)
    out_assign(lw, info.args[0], f"{r}.read({idx})", fn)
    return None


def _reg_write(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = receiver(lw, info, fn)
    return f"{r}.write({lw.expr(info.args[0], fn)}, {lw.expr(info.args[1], fn)})"


def _count(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = receiver(lw, info, fn)
    return f"{r}.count({lw.expr(info.args[0], fn)}, _RT.pkt.length)"


def _direct_count(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return None  # BMv2 counts direct counters on every hit of their table


def _execute_meter(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    r = receiver(lw, info, fn)
    idx = lw.expr(info.args[0], fn)
    out_assign(lw, info.args[1], f"{r}.execute({idx}, _RT.pkt.length)", fn)
    return None


def _direct_meter_read(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    decl = getattr(info.receiver, "decl", None)
    table = lw.direct_meter_table.get(id(decl))
    code = f"{table}.color" if table is not None else "0"
    out_assign(lw, info.args[0], code, fn)
    return None


def _checksum16_get(lw: BlockLowerer, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return hash_call(lw, "csum16", packed(lw, info.args[0], fn), e)


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
