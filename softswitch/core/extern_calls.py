"""The interpreter's extern calls: the dispatcher, the argument helpers, core.p4's table.

Each extern call becomes a few lines calling the packet cursor, the stateful extern
objects, the hash functions (:mod:`hashes`) or the per-packet runtime ``_RT``. Which
emission lowers a call is the architecture's extern table, the program builder's
``externs`` (:mod:`softswitch.v1model.externs`, :mod:`softswitch.pna.externs`), both
extending :data:`CORE` here and built on its helpers: ``flatten`` and ``packed`` turn a
data argument into the fields BMv2 would serialize (fields of invalid headers skipped,
as BMv2's field-list builder does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from softswitch.core import hashes
from softswitch.core.exprwalk import other_members
from softswitch.core.extern_table import Extern, ExternTable, call_name
from softswitch.core.fieldlist import data_fields, guarded, validity_runs
from softswitch.core.lower import FnCtx, fit, scalar_bits
from softswitch.core.values import attr
from softswitch.frontend import ast
from softswitch.frontend import types as T
from softswitch.frontend.ast import NOT_CONST

if TYPE_CHECKING:
    from softswitch.core.contracts import Lowering, PyLowering

def lower_extern_call(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx,
                      want_value: bool) -> str | None:
    """Lower one extern call with the interpreter's emission in the program's table."""
    ext = lw.pb.externs.find(info)
    if ext is None:
        raise lw.fail(f"{call_name(info)} is not supported by the {lw.pb.target_name} "
                      "target", e)
    return ext.interp(lw, e, info, fn)


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


def flatten(lw: PyLowering, e: ast.Expr, fn: FnCtx) -> list[tuple[str, int, str | None]]:
    """(value code, width, validity code or None) for every field in ``e``, in order
    (width -1: a varbit, whose value is a (width, value) pair)."""
    out: list[tuple[str, int, str | None]] = []
    for code, t, valid in data_fields(lw, e, fn):
        if isinstance(t, T.BoolType):
            out.append((f"int({code})", 1, valid))
        elif isinstance(t, T.VarbitType):
            out.append((code, -1, valid))
        else:
            b = scalar_bits(t)
            out.append((code, b[0] if b else 0, valid))
    return out


def packed(lw: PyLowering, e: ast.Expr, fn: FnCtx) -> str:
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
    for valid, run in validity_runs(items):
        with guarded(fn.buf, valid):
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
    return f"({acc} << (-{n} % 8)).to_bytes(({n} + 7) >> 3, 'big')"


def field_tuple(lw: PyLowering, e: ast.Expr, fn: FnCtx, unsigned: bool) -> str:
    """A Python tuple of the fields of data argument ``e`` (``unsigned``: each as the
    unsigned bit string the control plane receives in a digest or learned entry)."""
    items = flatten(lw, e, fn)
    vals = ", ".join(f"(({c}) & {(1 << w) - 1})" if unsigned and w > 0 else c
                     for c, w, _ in items)
    return f"({vals}{',' if len(items) == 1 else ''})"


def hash_call(lw: PyLowering, algo: str, data: str, e: ast.Node) -> str:
    """A call of the named hash on ``data``, bound directly when it is deterministic."""
    fn = hashes.ALGORITHMS.get(algo)
    if fn is None:
        if algo != "random":
            raise lw.fail(f"hash algorithm '{algo}' is not supported by the "
                          f"{lw.pb.target_name} target", e)
        return f"_RT.hash('random', {data})"
    return f"{lw.const_obj(fn, '_hf')}({data})"


def arg(info: Any, i: int) -> ast.Expr | None:
    return info.args[i] if i < len(info.args) else None


def receiver(lw: PyLowering, info: Any, fn: FnCtx) -> str:
    recv = info.receiver
    name = lw.names.get(id(getattr(recv, "decl", None)))
    if name is None:
        return lw.expr(recv, fn)
    return name


def out_assign(lw: Lowering, target: ast.Expr | None, code: str,
               fn: Any) -> None:
    """Store an extern's result into its ``out`` argument, brought into the argument's
    type (both back ends); with no argument, evaluate it for its effects."""
    if target is None or isinstance(target, ast.DontCareExpr):
        fn.buf.emit(lw.spelling["call_stmt"].format(value=code))
        return
    lw.assign(target, lw.fit_to(code, target.type), fn)


# ---------------------------------------------------------------- packet_in / packet_out
def extract_into(target: ast.Expr) -> str:
    """Where ``extract`` writes (both back ends): ``"next"`` for ``stack.next`` (the
    element at nextIndex, then nextIndex + 1; StackOutOfBounds past the end),
    ``"next_member"`` for ``stack.next.member`` of a stack of header unions (that member,
    the union's other members made invalid, then nextIndex + 1), else ``"header"``."""
    if isinstance(target, ast.Member) and target.name == "next" and isinstance(
            T.strip_newtype(target.expr.type), T.StackType):
        return "next"
    if (isinstance(target, ast.Member) and isinstance(target.expr, ast.Member)
            and target.expr.name == "next"
            and isinstance(T.strip_newtype(target.expr.expr.type), T.StackType)):
        return "next_member"
    return "header"


def _extract(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    pkt = receiver(lw, info, fn)
    target = info.args[0]
    tt = T.strip_newtype(info.params[0].type if info.params else target.type)
    if not isinstance(tt, T.HeaderType):
        raise lw.fail(f"only headers can be extracted by the {lw.pb.target_name} target", target)
    ext = lw.const_obj(lw.pb.wire.extractor(tt), "_ext")
    varbits = ""
    if len(info.args) > 1 and info.args[1] is not None:
        varbits = ", " + lw.expr(info.args[1], fn)
    into = extract_into(target)
    if into == "next":
        stack = lw.expr(target.expr, fn)
        fn.buf.emit(f"_extract_next({pkt}, {stack}, {ext}{varbits})")
        return None
    if into == "next_member":
        stack = lw.expr(target.expr.expr, fn)
        elem = lw.tmp()
        fn.buf.emit(f"{elem} = _stk_next({stack})")
        fn.buf.emit(f"{ext}({pkt}, {elem}.{attr(target.name)}{varbits})")
        for other in other_members(target):
            fn.buf.emit(f"{elem}.{attr(other)}._v = False")
        fn.buf.emit(f"{stack}.nxt += 1")
        return None
    h = lw.default_of(tt) if isinstance(target, ast.DontCareExpr) else lw.expr(target, fn)
    fn.buf.emit(f"{ext}({pkt}, {h}{varbits})")
    lw.after_header_write(target, fn)
    return None


def _lookahead(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
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


def _advance(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    pkt = receiver(lw, info, fn)
    return f"_advance({pkt}, {lw.expr(info.args[0], fn)})"


def _length(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return f"({receiver(lw, info, fn)}.total_bits >> 3)"


def emitted_items(target: ast.Expr) -> list[ast.Expr]:
    """What ``emit`` writes, in order (both back ends): each item of a list that is not
    a struct, else the value itself (its valid headers)."""
    t = T.strip_newtype(target.type)
    if isinstance(target, ast.ListExpr) and not isinstance(t, T.StructLikeType):
        return list(target.items)
    return [target]


def _emit(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    pkt = receiver(lw, info, fn)
    for item in emitted_items(info.args[0]):
        em = lw.const_obj(lw.pb.wire.emitter(T.strip_newtype(item.type)), "_em")
        fn.buf.emit(f"{em}({pkt}, {lw.expr(item, fn)})")
    return None


# ---------------------------------------------------------------- core functions
# (log_msg too: v1model.p4 and pna.p4 both declare it)
def verify(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    cond = lw.expr(info.args[0], fn)
    err = lw.expr(info.args[1], fn)
    fn.buf.emit(f"if not ({cond}):")
    with fn.buf.block():
        fn.buf.emit(f"raise _PErr({err})")
    return None


def log_msg(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    msg = lw.expr(info.args[0], fn)
    data = arg(info, 1)
    if data is None:
        return f"_RT.log({msg}, ())"
    return f"_RT.log({msg}, {field_tuple(lw, data, fn, unsigned=False)})"


def static_assert(lw: PyLowering, e: ast.Call, info: Any, fn: FnCtx) -> str | None:
    return "True"


#: core.p4's functions and packet_in/packet_out methods (and log_msg, which v1model.p4
#: and pna.p4 both declare): every architecture's table extends this one.
CORE = ExternTable(
    "core",
    functions={
        "verify": Extern("fail the parser with the error unless the condition holds", verify),
        "static_assert": Extern("true (the front end checked it)", static_assert),
        "log_msg": Extern("log the message with the data's fields", log_msg),
    },
    methods={
        ("packet_in", "extract"): Extern(
            "read a header (and its varbit) at the cursor, set it valid; PacketTooShort "
            "when the packet ends first", _extract),
        ("packet_in", "lookahead"): Extern(
            "the value at the cursor without moving it; PacketTooShort past the end",
            _lookahead),
        ("packet_in", "advance"): Extern(
            "move the cursor by whole bytes (ParserInvalidArgument otherwise); "
            "PacketTooShort past the end", _advance),
        ("packet_in", "length"): Extern("the packet's length in bytes", _length),
        ("packet_out", "emit"): Extern("append the valid headers of the value", _emit),
    },
)
