"""Parsers and deparsers: parse states, their operations and transitions, emit order.

A parse state's ``parser_ops`` become statements (``extract`` → ``pkt.extract``,
``extract_VL`` with its length, ``set``, ``verify``, ``shift``/``advance``,
``primitive``); its transition key and hex-string cases become a ``select`` whose keyset
splits each value and mask by the key elements' byte widths (as BMv2 builds the key),
``parse_vset`` cases name a ``value_set``. ``next_state: null`` accepts. The deparser
emits its ``order``.
"""

from __future__ import annotations

from softswitch.bmv2json import primitives
from softswitch.bmv2json.context import BOOL, Context, P4Text, Ty, ident
from softswitch.bmv2json.exprs import Translator, convert, hexstr
from softswitch.bmv2json.reader import JsonNode

BITS = Ty("bit", 32)


def _state_name(name: object, node: JsonNode) -> str:
    if name is None:
        return "accept"
    if not isinstance(name, str):
        raise node.error(f"bad next_state {name!r}")
    return ident(name, "st_")


def _op(b: primitives.Body, op: dict, node: JsonNode) -> list[str]:
    kind = op.get("op")
    ps = op.get("parameters", [])
    tr = b.tr
    if kind in ("extract", "extract_VL"):
        target = _extracted(tr, ps[0], node)
        if kind == "extract":
            return [f"pkt.extract({target});"]
        return [f"pkt.extract({target}, {convert(tr(ps[1]), BITS)});"]
    if kind == "set":
        return primitives.statements(b, [{"op": "assign", "parameters": ps}], node)
    if kind == "verify":
        cond = convert(tr(ps[0]), BOOL)
        code = tr(ps[1])
        if code.value is None:
            raise node.error("verify with a computed error is not supported")
        return [f"verify({cond}, error.{tr.ctx.error_name(node, code.value)});"]
    if kind == "shift":
        return [f"pkt.advance({tr(ps[0]).value or 0} * 8);"] if ps else []
    if kind == "advance":
        return [f"pkt.advance({convert(tr(ps[0]), BITS)});"]
    if kind == "primitive":
        return primitives.statements(b, ps, node)
    raise node.error(f"parser operation {kind!r} is not supported")


def _extracted(tr: Translator, p: dict, node: JsonNode) -> str:
    """The header an ``extract`` writes: a header, or a stack's next element."""
    if p.get("type") == "stack":
        return f"{tr.header(p.get('value')).code}.next"
    if p.get("type") == "union_stack":
        value = p.get("value")
        access = f"hdr.{ident(value[0], 'us_')}" if isinstance(value, list) else None
        if access not in tr.ctx.union_stacks or len(value) != 2:
            raise node.error(f"unknown header union stack {value!r}")
        return f"{access}.next.{ident(value[1], 'f_')}"
    if p.get("type") != "regular":
        raise node.error(f"extract of {p.get('type')!r} is not supported")
    return tr.header(p.get("value")).code


def _split(value: int, widths: list[int]) -> list[int]:
    parts = []
    for width in reversed(widths):
        nbytes = (width + 7) // 8
        parts.append(value & ((1 << (8 * nbytes)) - 1))
        value >>= 8 * nbytes
    return list(reversed(parts))


def _joined(parts: list[int], widths: list[int]) -> list[int]:
    value = 0
    for part, width in zip(parts, widths, strict=True):
        value = (value << width) | (part & ((1 << width) - 1))
    return [value]


def _keyset(tr: Translator, t: JsonNode, keys: list[P4Text], joined: bool) -> str:
    kind = t.get("type", str)
    if kind == "default":
        return "default"
    widths = [k.ty.width for k in keys]
    if kind == "parse_vset":
        return ident(t.get("value", str), "vs_")
    if kind != "hexstr":
        raise t.error(f"transition type {kind!r} is not supported")
    values = _split(hexstr(t, t.get("value", str)), widths)
    mask_text = t.get("mask", str, default=None)
    masks = _split(hexstr(t, mask_text), widths) if mask_text else None
    if joined:
        values = _joined(values, widths)
        masks = _joined(masks, widths) if masks is not None else None
        widths = [sum(widths)]
    items = []
    for i, (v, w) in enumerate(zip(values, widths, strict=True)):
        ty = Ty("bit", w)
        lit = convert(P4Text(str(v), Ty("lit"), v), ty)
        if masks is not None:
            lit = f"{lit} &&& {convert(P4Text(str(masks[i]), Ty('lit'), masks[i]), ty)}"
        items.append(lit)
    return items[0] if len(items) == 1 else "(" + ", ".join(items) + ")"


def _state(ctx: Context, node: JsonNode) -> tuple[list[str], list[str]]:
    b = primitives.Body(Translator(ctx, node))
    body: list[str] = []
    for op in node.get("parser_ops", list):
        if not isinstance(op, dict):
            raise node.error(f"malformed parser operation {op!r}")
        body += _op(b, op, node)
    keys = [b.tr(k) for k in node.get("transition_key", list, default=[])]
    transitions = node.items("transitions")
    if not keys or all(t.get("type", str) == "default" for t in transitions):
        nxt = transitions[0].get("next_state", object, default=None) if transitions else None
        body.append(f"transition {_state_name(nxt, node)};")
    else:
        keys = [k if k.ty.kind != "bool" else P4Text(convert(k, Ty("bit", 1)), Ty("bit", 1))
                for k in keys]
        # a value set over several fields matches them as one bit string (BMv2's key)
        joined = len(keys) > 1 and any(t.get("type", str) == "parse_vset" for t in transitions)
        key_code = (" ++ " if joined else ", ").join(k.code for k in keys)
        body.append(f"transition select({key_code}) {{")
        for t in transitions:
            nxt = _state_name(t.get("next_state", object, default=None), t)
            body.append(f"    {_keyset(b.tr, t, keys, joined)}: {nxt};")
        body.append("}")
    return b.temps, [f"state {ident(node.get('name', str), 'st_')} {{",
                     *("    " + s for s in body), "}"]


def parser(ctx: Context) -> list[str]:
    """The v1model parser ``P`` of the document's (single) parser."""
    parsers = ctx.root.items("parsers")
    if len(parsers) != 1:
        raise ctx.root.error(f"expected one parser, found {len(parsers)}")
    node = parsers[0]
    out = ["parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, "
           "inout standard_metadata_t sm) {"]
    for vs in ctx.root.items("parse_vsets"):
        width = vs.get("compressed_bitwidth", int)
        out.append(f'    @name(".{vs.get("name", str)}") value_set<bit<{width}>>'
                   f'({vs.get("max_size", int)}) {ident(vs.get("name", str), "vs_")};')
    temps: list[str] = []
    states: list[str] = []
    init = node.get("init_state", str)
    for st in node.items("parse_states"):
        t, lines = _state(ctx, st)
        temps += t
        states += lines
    out += ["    " + t for t in temps]
    out += ["    state start {", f"        transition {_state_name(init, node)};", "    }"]
    out += ["    " + s for s in states]
    out.append("}")
    return out


def deparser(ctx: Context) -> list[str]:
    """The v1model deparser ``D``: emit every header of ``order``."""
    deparsers = ctx.root.items("deparsers")
    if len(deparsers) != 1:
        raise ctx.root.error(f"expected one deparser, found {len(deparsers)}")
    node = deparsers[0]
    if node.get("primitives", list, default=[]):
        raise node.error("deparser primitives are not supported")
    tr = Translator(ctx, node)
    emits = [f"        pkt.emit({tr.header(h).code});" for h in node.get("order", list)]
    return ["control D(packet_out pkt, in headers_t hdr) {", "    apply {", *emits, "    }", "}"]
