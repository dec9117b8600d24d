"""Tables as P4 declarations: keys, action lists, default and const entries, profiles.

A key element keeps its JSON name (``@name``) and match kind, with its mask applied;
const entries are written in priority order (BMv2: lower value first) with values and
masks typed by the key; ``indirect``/``indirect_ws`` tables name an action profile or
selector declared in their control, whose inputs become ``selector`` keys. A table p4c
made (no control prefix) is ``@hidden``; a keyless one around one fixed call
(``inlined``) is written as that call instead.
"""

from __future__ import annotations

from softswitch.bmv2json import externs
from softswitch.bmv2json.actions import action_name, call
from softswitch.bmv2json.context import Context, P4Text, Ty, ident
from softswitch.bmv2json.exprs import Translator, convert, hexstr
from softswitch.bmv2json.reader import JsonNode

MATCH_KINDS = {"exact", "lpm", "ternary", "range", "optional"}

def made_by_p4c(name: str) -> bool:
    """p4c's own tables and actions (``tbl_act``, ``switch_0_table``) have no control
    prefix; a user's always do (``ingress.t``). p4c hides its own from P4Info."""
    return "." not in name

def inlined(table: JsonNode) -> bool:
    """A keyless table p4c made around one fixed action call: the call itself."""
    entry = table.get("default_entry", dict, default={})
    return (made_by_p4c(table.get("name", str)) and not table.get("key", list)
            and len(table.get("action_ids", list)) == 1
            and entry.get("action_const") is True and not table.get("with_counters", bool,
                                                                     default=False)
            and not table.get("direct_meters", object, default=None)
            and len(set(table.get("next_tables", dict).values())) <= 1)

def _target(tr: Translator, key: JsonNode) -> P4Text:
    """What a key element matches: a field, or an expression (a stack element's field)."""
    target = key.get("target", (list, dict))
    return tr(target) if isinstance(target, dict) else tr.field(target)


def _key(ctx: Context, table: JsonNode) -> list[str]:
    tr = Translator(ctx, table)
    out = []
    for k in table.items("key"):
        kind = k.get("match_type", str)
        if kind not in MATCH_KINDS:
            raise k.error(f"match type {kind!r} is not supported")
        e = _target(tr, k)
        code = e.code if e.ty.kind != "bool" else convert(e, Ty("bit", 1))
        mask = k.get("mask", str, default=None)
        if mask is not None:
            code = f"({code} & {convert(P4Text(mask, Ty('lit'), hexstr(k, mask)), e.ty)})"
        name = k.get("name", str, default=None)
        ann = f' @name("{name}")' if name else ""
        out.append(f"        {code}: {kind}{ann};")
    return out

def _key_types(ctx: Context, table: JsonNode) -> list[Ty]:
    tr = Translator(ctx, table)
    out = []
    for k in table.items("key"):
        ty = _target(tr, k).ty
        out.append(ty if ty.kind != "bool" else Ty("bit", 1))
    return out


def _entry_key(node: JsonNode, mk: JsonNode, ty: Ty) -> str:
    kind = mk.get("match_type", str)

    def lit(raw: object) -> str:
        return convert(P4Text("", Ty("lit"), hexstr(mk, raw)), ty)
    if kind == "exact":
        return lit(mk.get("key", str))
    if kind == "lpm":
        plen = mk.get("prefix_length", int)
        mask = ((1 << plen) - 1) << (ty.width - plen)
        return f"{lit(mk.get('key', str))} &&& {convert(P4Text('', Ty('lit'), mask), ty)}"
    if kind in ("ternary", "optional"):
        mask_text = mk.get("mask", str, default=None)
        if mask_text is None:
            return lit(mk.get("key", str))
        return f"{lit(mk.get('key', str))} &&& {lit(mask_text)}"
    if kind == "range":
        return f"{lit(mk.get('start', str))} .. {lit(mk.get('end', str))}"
    raise mk.error(f"match type {kind!r} is not supported in const entries")

def _entries(ctx: Context, table: JsonNode) -> list[str]:
    entries = table.items("entries")
    if not entries:
        return []
    types = _key_types(ctx, table)
    entries.sort(key=lambda e: e.get("priority", int, default=0))
    out = ["    const entries = {"]
    for e in entries:
        keys = [_entry_key(e, mk, ty) for mk, ty in zip(e.items("match_key"), types,
                                                          strict=True)]
        ae = e.child("action_entry")
        written = call(ctx, ae, ae.get("action_id", int), ae.get("action_data", list))
        ks = keys[0] if len(keys) == 1 else "(" + ", ".join(keys) + ")"
        out.append(f"        {ks}: {written};")
    out.append("    }")
    return out

def profiles(ctx: Context, pipe: JsonNode) -> tuple[list[str], dict[str, JsonNode]]:
    """Declarations of the pipeline's action profiles and selectors, and each by name."""
    out, by_name = [], {}
    for ap in pipe.items("action_profiles"):
        name = ap.get("name", str)
        by_name[name] = ap
        size = ap.get("max_size", int)
        selector = ap.get("selector", dict, default=None)
        if selector is None:
            out.append(f'@name(".{name}") action_profile(32w{size}) {ident(name, "x_")};')
            continue
        algo = selector.get("algo")
        if algo not in externs.ALGORITHMS:
            raise ap.error(f"selector algorithm {algo!r} is not supported")
        # BMv2 picks full hash % members: the output width is not in the JSON
        out.append(f'@name(".{name}") action_selector(HashAlgorithm.{algo}, 32w{size}, 32w32) '
                   f'{ident(name, "x_")};')
    return out, by_name

def _implementation(ctx: Context, table: JsonNode, profiles: dict[str, JsonNode]) -> tuple[
        list[str], list[str]]:
    """(selector key elements, table properties) of an ``indirect``/``indirect_ws`` table."""
    kind = table.get("type", str, default="simple")
    if kind == "simple":
        return [], []
    if kind not in ("indirect", "indirect_ws"):
        raise table.error(f"table type {kind!r} is not supported")
    name = table.get("action_profile", str)
    ap = profiles.get(name)
    if ap is None:
        raise table.error(f"unknown action profile {name!r}")
    keys = []
    if kind == "indirect_ws":
        tr = Translator(ctx, ap)
        selector = ap.child("selector")
        for raw in selector.get("input", list):
            keys.append(f"        {tr(raw).code}: selector;")
    return keys, [f"implementation = {ident(name, 'x_')};"]

def declaration(ctx: Context, table: JsonNode, props: list[str],
           profiles: dict[str, JsonNode]) -> list[str]:
    name = table.get("name", str)
    selector_keys, impl = _implementation(ctx, table, profiles)
    props = props + impl
    hidden = "@hidden " if made_by_p4c(name) else ""
    out = [f'{hidden}@name(".{name}") table {ident(name, "t_")} {{', "    key = {",
           *_key(ctx, table), *selector_keys, "    }", "    actions = {"]
    out += [f"        {action_name(ctx, a)};" for a in table.get("action_ids", list)]
    out += ["    }", f"    size = {table.get('max_size', int, default=1024)};"]
    entry = table.child("default_entry") if "default_entry" in table.value else None
    if entry is not None:
        const = "const " if entry.get("action_const", bool, default=False) else ""
        written = call(ctx, entry, entry.get("action_id", int), entry.get("action_data", list))
        out.append(f"    {const}default_action = {written};")
    out += _entries(ctx, table)
    out += ["    " + p for p in props]
    if table.get("support_timeout", bool, default=False):
        out.append("    support_timeout = true;")
    out.append("}")
    return out
