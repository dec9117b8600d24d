"""Counters, meters, registers, calculations, learn lists and checksums.

``collect`` indexes the document's extern arrays and calculations; ``declarations``
writes them as v1model instances under their JSON names (``@name(".X")``, so the
control-plane names stay p4c's); ``calculation`` and ``learn_list`` give the algorithm
and data list a ``hash``/``digest``/checksum call takes; ``checksum_statements`` turns
the ``checksums`` array into ``verify_checksum``/``update_checksum`` calls. Extern
instances of other types, and algorithms v1model does not name, are refused.
"""

from __future__ import annotations

from softswitch.bmv2json.context import KEYWORDS, Context, Ty, ident
from softswitch.bmv2json.exprs import Translator, convert
from softswitch.bmv2json.reader import JsonNode

ALGORITHMS = {"crc32", "crc32_custom", "crc16", "crc16_custom", "random", "identity",
              "csum16", "xor16"}
METER_TYPES = {"bytes": "bytes", "packets": "packets"}


def collect(ctx: Context) -> None:
    root = ctx.root
    for key, kind in (("counter_arrays", "counter"), ("meter_arrays", "meter"),
                      ("register_arrays", "register")):
        for node in root.items(key):
            ctx.externs[node.get("name", str)] = (kind, node)
    for node in root.items("extern_instances"):
        raise node.error(f"extern type {node.get('type', str, default='?')!r} is not supported")
    for node in root.items("calculations"):
        ctx.calculations[node.get("name", str)] = node
    for node in root.items("field_lists"):
        ctx.field_lists[node.get("id", int)] = node
    for node in root.items("learn_lists"):
        ctx.learn_lists[node.get("id", int)] = node


def register_ty(ctx: Context, name: object) -> Ty:
    _, node = ctx.externs[name]  # the caller resolved the name
    return Ty("bit", node.get("bitwidth", int))


def _named(name: str) -> str:
    return f'@name(".{name}")'


def declarations(ctx: Context) -> list[str]:
    """Indirect counters, meters and registers (direct ones belong to their table)."""
    out = []
    for name, (kind, node) in ctx.externs.items():
        var = ident(name, "x_")
        if node.get("is_direct", bool, default=False):
            continue
        if kind == "counter":
            out.append(f"{_named(name)} counter({node.get('size', int)}, "
                       f"CounterType.packets_and_bytes) {var};")
        elif kind == "register":
            out.append(f"{_named(name)} register<bit<{node.get('bitwidth', int)}>>"
                       f"({node.get('size', int)}) {var};")
        else:
            out.append(f"{_named(name)} meter({node.get('size', int)}, "
                       f"MeterType.{_meter_type(node)}) {var};")
    return out


def _meter_type(node: JsonNode) -> str:
    kind = node.get("type", str)
    if kind not in METER_TYPES:
        raise node.error(f"meter type {kind!r} is not supported")
    return METER_TYPES[kind]


def direct_declarations(ctx: Context, table: str) -> tuple[list[str], list[str]]:
    """(instance declarations, table properties) of the direct externs bound to ``table``."""
    decls: list[str] = []
    props: list[str] = []
    for name, (kind, node) in ctx.externs.items():
        if not node.get("is_direct", bool, default=False) or node.get(
                "binding", str, default=None) != table:
            continue
        var = ident(name, "x_")
        if kind == "counter":
            decls.append(f"{_named(name)} direct_counter(CounterType.packets_and_bytes) {var};")
            props.append(f"counters = {var};")
        elif kind == "meter":
            width = _result_width(ctx, node)
            decls.append(f"{_named(name)} direct_meter<bit<{width}>>"
                         f"(MeterType.{_meter_type(node)}) {var};")
            props.append(f"meters = {var};")
        else:
            raise node.error("direct registers are not supported")
    return decls, props


def _result_width(ctx: Context, node: JsonNode) -> int:
    target = node.get("result_target", list)
    tr = Translator(ctx, node)
    return tr.field(target).ty.width


def direct_meter_read(ctx: Context, table: str) -> str | None:
    """The ``m.read(target);`` each action of ``table`` starts with, if it has a meter."""
    for name, (kind, node) in ctx.externs.items():
        if kind == "meter" and node.get("is_direct", bool, default=False) and node.get(
                "binding", str, default=None) == table:
            target = Translator(ctx, node).field(node.get("result_target", list))
            return f"{ident(name, 'x_')}.read({target.code});"
    return None


def calculation(tr: Translator, name: object, payload: bool = False) -> tuple[str, str]:
    """(HashAlgorithm member, P4 data list) of calculation ``name``; ``payload``: a final
    ``payload`` input is allowed (a checksum ``_with_payload``) and left out of the list."""
    node = tr.ctx.calculations.get(name) if isinstance(name, str) else None
    if node is None:
        raise tr.error(f"unknown calculation {name!r}")
    algo = node.get("algo", str)
    if algo not in ALGORITHMS:
        raise node.error(f"hash algorithm {algo!r} is not supported")
    inputs = node.get("input", list)
    if payload and inputs and isinstance(inputs[-1], dict) and inputs[-1].get(
            "type") == "payload":
        inputs = inputs[:-1]
    if any(isinstance(i, dict) and i.get("type") == "payload" for i in inputs):
        raise node.error("a calculation over the payload is only supported as a checksum's "
                         "last input")
    sub = Translator(tr.ctx, node, tr.params)
    return algo, "{" + ", ".join(sub(i).code for i in inputs) + "}"


def _has_payload(ctx: Context, calc: str) -> bool:
    inputs = ctx.calculations[calc].get("input", list)
    return bool(inputs) and isinstance(inputs[-1], dict) and inputs[-1].get("type") == "payload"


def learn_list(tr: Translator, list_id: int | None) -> tuple[str, str]:
    """(struct type name, list expression) of learn list ``list_id``."""
    node = tr.ctx.learn_lists.get(list_id) if list_id is not None else None
    if node is None:
        raise tr.error(f"unknown learn list {list_id!r}")
    sub = Translator(tr.ctx, node, tr.params)
    values = [sub(e).code for e in node.get("elements", list)]
    return learn_type(node), "{" + ", ".join(values) + "}"


def learn_type(node: JsonNode) -> str:
    """The digest's struct type: the learn list's name (P4Info names digests by it)."""
    name = node.get("name", str)
    taken = name in KEYWORDS or name in ("headers_t", "metadata_t") or name.startswith(
        ("T_", "U_", "L_"))
    return name if ident(name) == name and not taken else ident(name, "L_")


def learn_declarations(ctx: Context) -> list[str]:
    """A struct per learn list (the digest's type), fields in the list's order."""
    out = []
    for node in ctx.learn_lists.values():
        tr = Translator(ctx, node)
        out.append(f"struct {learn_type(node)} {{")
        for i, el in enumerate(node.get("elements", list)):
            ty = tr(el).ty
            out.append(f"    {ty.kind}<{ty.width}> f{i};")
        out.append("}")
    return out


def checksum_statements(ctx: Context, verify: bool) -> list[str]:
    """``verify_checksum`` (``verify``) or ``update_checksum`` calls of the document."""
    out = []
    for node in ctx.root.items("checksums"):
        if not node.get("verify" if verify else "update", bool, default=not verify):
            continue
        tr = Translator(ctx, node)
        cond = "true"
        if node.get("if_cond", dict, default=None) is not None:
            cond = convert(tr(node.get("if_cond", dict)), Ty("bool"))
        calc = node.get("calculation", str)
        algo, data = calculation(tr, calc, payload=True)
        target = tr.field(node.get("target", list))
        call = "verify_checksum" if verify else "update_checksum"
        if _has_payload(ctx, calc):
            call += "_with_payload"
        out.append(f"{call}({cond}, {data}, {target.code}, HashAlgorithm.{algo});")
    return out
