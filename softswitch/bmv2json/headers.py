"""Header types, header instances, stacks and metadata as P4 declarations.

``collect`` fills the :class:`Context` (types, instances, errors) from the document;
``declarations`` writes the ``error`` members, a ``header`` per header type and a
``struct`` per metadata type, then ``headers_t`` (headers and stacks) and
``metadata_t`` (every metadata instance but ``standard_metadata``, which is v1model's
own). Metadata fields named by a field list carry ``@field_list(id)`` so clone,
resubmit and recirculate preserve them as BMv2 does. Header unions and union stacks
become P4 ``header_union`` types and fields.
"""

from __future__ import annotations

from softswitch.bmv2json.context import (
    CORE_ERRORS,
    STD,
    Context,
    Instance,
    JsonHeaderType,
    Ty,
    ident,
)
from softswitch.bmv2json.reader import JsonNode


def _field_ty(node: JsonNode, spec: list, varbit_bits: int | None) -> Ty:
    if len(spec) < 2 or not isinstance(spec[0], str):
        raise node.error(f"malformed field {spec!r}")
    width = spec[1]
    if width == "*":
        if not isinstance(varbit_bits, int) or varbit_bits <= 0:
            raise node.error(f"varbit field {spec[0]!r} without a valid max_length")
        return Ty("varbit", varbit_bits)
    if not isinstance(width, int) or width <= 0:
        raise node.error(f"field {spec[0]!r} has bad bit width {width!r}")
    signed = len(spec) > 2 and spec[2] is True
    return Ty("int" if signed else "bit", width)


def _header_type(node: JsonNode) -> JsonHeaderType:
    name = node.get("name", str)
    max_length = node.get("max_length", int, default=None)
    specs = node.get("fields", list)
    for i, spec in enumerate(specs):
        if not isinstance(spec, list):
            raise node.error(f"fields[{i}] is not an array")
    if max_length is not None:  # the whole header's bytes: the varbit gets what is left
        fixed = sum(s[1] for s in specs if len(s) > 1 and isinstance(s[1], int))
        max_length = max_length * 8 - fixed
    fields = []
    for spec in specs:
        fields.append((spec[0], ident(spec[0], "f_"), _field_ty(node, spec, max_length)))
    return JsonHeaderType(name, ident(name, "T_"), fields)


def collect(ctx: Context) -> None:
    """Resolve header types, instances, stacks and errors into ``ctx``."""
    root = ctx.root
    for node in root.items("header_types"):
        ht = _header_type(node)
        ctx.htypes[ht.name] = ht
    members = _unions(ctx)
    in_stack: set[int] = set()
    for node in root.items("header_stacks"):
        ids = node.get("header_ids", list)
        in_stack.update(i for i in ids if isinstance(i, int))
        name = node.get("name", str)
        ctx.instances[name] = Instance(name, "stack", f"hdr.{ident(name, 's_')}",
                                       _htype(ctx, node), node.get("size", int))
    for node in root.items("headers"):
        _instance(ctx, node, in_stack, members)
    for pair in root.get("errors", list, default=[]):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], int)):
            raise root.error(f"malformed errors entry {pair!r}")
        ctx.errors[pair[1]] = pair[0]


def _htype(ctx: Context, node: JsonNode) -> JsonHeaderType:
    name = node.get("header_type", str)
    if name in ctx.unions:
        raise node.error(f"header type {name!r} is a header union: a header union outside "
                         "header_unions (a local variable) is not supported")
    if name not in ctx.htypes:
        raise node.error(f"unknown header type {name!r}")
    return ctx.htypes[name]


def _unions(ctx: Context) -> dict[int, str]:
    """Declare each header union's type and instance; header id -> its member path."""
    members: dict[int, str] = {}
    for node in ctx.root.items("header_union_types"):
        fields = node.get("headers", list)
        if not all(isinstance(f, list) and len(f) == 2 and f[1] in ctx.htypes
                   for f in fields):
            raise node.error("malformed union members")
        ctx.unions[node.get("name", str)] = (ident(node.get("name", str), "U_"),
                                              [(ident(f[0], "f_"), ctx.htypes[f[1]])
                                               for f in fields])
    in_stack: dict[int, str] = {}
    for node in ctx.root.items("header_union_stacks"):
        utype = node.get("union_type", str)
        if utype not in ctx.unions:
            raise node.error(f"unknown union type {utype!r}")
        access = f"hdr.{ident(node.get('name', str), 'us_')}"
        ctx.union_stacks[access] = (utype, node.get("size", int))
        for i, uid in enumerate(node.get("header_union_ids", list)):
            in_stack[uid] = f"{access}[{i}]"
    for node in ctx.root.items("header_unions"):
        utype = node.get("union_type", str)
        if utype not in ctx.unions:
            raise node.error(f"unknown union type {utype!r}")
        access = in_stack.get(node.get("id", int),
                              f"hdr.{ident(node.get('name', str), 'u_')}")
        ctx.union_instances[node.get("name", str)] = (access, utype)
        fields = ctx.unions[utype][1]
        ids = node.get("header_ids", list)
        if len(ids) != len(fields):
            raise node.error("header_ids do not match the union type's members")
        for hid, (fname, _) in zip(ids, fields, strict=True):
            members[hid] = f"{access}.{fname}"
    return members


def _instance(ctx: Context, node: JsonNode, in_stack: set[int], members: dict[int, str]) -> None:
    name = node.get("name", str)
    ht = _htype(ctx, node)
    if node.get("id", int) in members:
        ctx.instances[name] = Instance(name, "header", members[node.get("id", int)], ht)
        return
    if node.get("metadata", bool, default=False):
        if name == STD:
            ctx.instances[name] = Instance(name, "std", "sm", ht)
        elif ht.name == STD:  # a copy p4c made of standard_metadata (same type)
            ctx.instances[name] = Instance(name, "stdcopy", f"meta.{ident(name, 'm_')}", ht)
        else:
            ctx.instances[name] = Instance(name, "meta", f"meta.{ident(name, 'm_')}", ht)
        return
    if node.get("id", int) in in_stack:
        stack, _, index = name.rpartition("[")
        owner = ctx.instances.get(stack)
        if owner is None or not index.rstrip("]").isdigit():
            raise node.error("header in a stack with an unexpected name")
        ctx.instances[name] = Instance(name, "header", f"{owner.access}[{index}", ht)
        return
    ctx.instances[name] = Instance(name, "header", f"hdr.{ident(name, 'h_')}", ht)


def _field_lists_of(ctx: Context) -> dict[tuple[str, str], list[int]]:
    """(metadata instance, field) -> field list ids naming it."""
    marks: dict[tuple[str, str], list[int]] = {}
    for fl in ctx.field_lists.values():
        for el in fl.get("elements", list):
            if isinstance(el, dict) and el.get("type") == "field":
                inst, fname = el["value"]
                marks.setdefault((inst, fname), []).append(fl.get("id", int))
    return marks


def _ty_text(ty: Ty) -> str:
    return {"bit": "bit<{}>", "int": "int<{}>", "varbit": "varbit<{}>"}[ty.kind].format(
        ty.width)


def declarations(ctx: Context) -> list[str]:
    """The P4 type declarations: errors, headers, metadata structs, headers_t, metadata_t."""
    out: list[str] = []
    user_errors = [n for n in ctx.errors.values() if n not in CORE_ERRORS]
    if user_errors:
        out.append("error { " + ", ".join(user_errors) + " }")
    marks = _field_lists_of(ctx)
    kinds = {inst.htype.name: inst.kind for inst in ctx.instances.values()}
    kinds.update({ht.name: "header" for _, fields in ctx.unions.values() for _, ht in fields})
    for ht in ctx.htypes.values():
        kind = kinds.get(ht.name)
        if kind is None or ht.name == STD:
            continue
        owner = [i.name for i in ctx.instances.values() if i.htype is ht]
        out.append(("struct " if kind == "meta" else "header ") + ht.p4name + " {")
        for raw, p4name, ty in ht.fields:
            ann = "".join(f"@field_list({n}) " for o in owner for n in marks.get((o, raw), []))
            out.append(f"    {ann}{_ty_text(ty)} {p4name};")
        out.append("}")
    for p4name, fields in ctx.unions.values():
        out.append(f"header_union {p4name} {{")
        out += [f"    {ht.p4name} {fname};" for fname, ht in fields]
        out.append("}")
    out.append("struct headers_t {")
    for access, utype in ctx.union_instances.values():
        if not access.endswith("]"):
            out.append(f"    {ctx.unions[utype][0]} {access[4:]};")
    for access, (utype, size) in ctx.union_stacks.items():
        out.append(f"    {ctx.unions[utype][0]}[{size}] {access[4:]};")
    for inst in ctx.instances.values():
        if inst.kind == "stack":
            out.append(f"    {inst.htype.p4name}[{inst.size}] {inst.access[4:]};")
        elif inst.kind == "header" and inst.access.startswith("hdr.h_"):
            out.append(f"    {inst.htype.p4name} {inst.access[4:]};")
    out.append("}")
    out.append("struct metadata_t {")
    for inst in ctx.instances.values():
        if inst.kind in ("meta", "stdcopy"):
            ty = "standard_metadata_t" if inst.kind == "stdcopy" else inst.htype.p4name
            out.append(f"    {ty} {inst.access[5:]};")
    out.append("}")
    return out
