"""Pipelines as v1model controls: actions, tables and the control-flow graph.

Each pipeline (``ingress``, ``egress``) becomes a control declaring the actions its
tables name (``@name(".X")`` keeps p4c's names), its tables (keys with match kinds and
masks, action lists, default and const entries, direct counters and meters) and an
``apply`` block. The graph of tables and conditionals (``next_tables``, ``true_next``,
``false_next``) is structured back into ``if``/``switch`` blocks: each branch runs up to
the first node all branches reach. A keyless table p4c made for one fixed action call
is called as that action. Action profiles and selectors are declared in their control.
"""

from __future__ import annotations

import re

from softswitch.bmv2json import externs, primitives
from softswitch.bmv2json.context import BOOL, Context, Expr, Ty, ident
from softswitch.bmv2json.exprs import Translator, convert, hexstr
from softswitch.bmv2json.reader import Node

KEYWORDS = {"action", "apply", "bit", "bool", "const", "control", "default", "else",
            "entries", "enum", "error", "exit", "extern", "false", "header", "header_union",
            "if", "in", "inout", "int", "key", "list", "match_kind", "out", "package",
            "parser", "priority", "return", "select", "state", "string", "struct", "switch",
            "table", "transition", "true", "tuple", "type", "typedef", "value_set", "varbit",
            "verify", "void", "hdr", "meta", "sm", "pkt", "this", "abstract", "actions"}
MATCH_KINDS = {"exact", "lpm", "ternary", "range", "optional"}
END = ""


def _params(node: Node) -> list[tuple[str, Ty]]:
    out = []
    for rd in node.items("runtime_data"):
        name = rd.get("name", str)
        p4 = ident(name) if ident(name) == name and name not in KEYWORDS else ident(name, "p_")
        out.append((p4, Ty("bit", rd.get("bitwidth", int))))
    return out


def action_name(ctx: Context, action_id: int) -> str:
    return f"a_{ctx.alias.get(action_id, action_id)}"


def _action(ctx: Context, node: Node, meter_read: str | None, named: bool | None) -> list[str]:
    """The action's declaration: ``named`` True under its JSON name (``@name(".X")``),
    False under a name local to its control (a second, different action of that name),
    None hidden (an action p4c made for a statement of an apply block)."""
    params = _params(node)
    b = primitives.Body(Translator(ctx, node, params))
    body = primitives.statements(b, node.get("primitives", list), node)
    if meter_read:
        body.insert(0, meter_read)
    sig = ", ".join(f"{ty.kind}<{ty.width}> {name}" for name, ty in params)
    ann = "@hidden " if named is None else '@name("{}{}") '.format("." if named else "",
                                                                   node.get("name", str))
    return [f'{ann}action {action_name(ctx, node.get("id", int))}'
            f"({sig}) {{", *("    " + t for t in b.temps), *("    " + s for s in body), "}"]


def _call(ctx: Context, node: Node, action_id: object, data: list) -> str:
    action = ctx.action(node, action_id)
    params = _params(action)
    if len(data) != len(params):
        raise node.error(f"action {action.get('name', str)!r} takes {len(params)} "
                         f"arguments, {len(data)} given")
    args = [convert(Expr(str(v), Ty("lit"), v), ty)
            for v, (_, ty) in zip((hexstr(node, d) for d in data), params, strict=True)]
    return f"{action_name(ctx, action.get('id', int))}({', '.join(args)})"


def _made_by_p4c(name: str) -> bool:
    """p4c's own tables and actions (``tbl_act``, ``switch_0_table``) have no control
    prefix; a user's always do (``ingress.t``). p4c hides its own from P4Info."""
    return "." not in name


def _inlined(table: Node) -> bool:
    """A keyless table p4c made around one fixed action call: the call itself."""
    entry = table.get("default_entry", dict, default={})
    return (_made_by_p4c(table.get("name", str)) and not table.get("key", list)
            and len(table.get("action_ids", list)) == 1
            and entry.get("action_const") is True and not table.get("with_counters", bool,
                                                                     default=False)
            and not table.get("direct_meters", object, default=None)
            and len(set(table.get("next_tables", dict).values())) <= 1)


def _key(ctx: Context, table: Node) -> list[str]:
    tr = Translator(ctx, table)
    out = []
    for k in table.items("key"):
        kind = k.get("match_type", str)
        if kind not in MATCH_KINDS:
            raise k.error(f"match type {kind!r} is not supported")
        e = tr.field(k.get("target", list))
        code = e.code if e.ty.kind != "bool" else convert(e, Ty("bit", 1))
        mask = k.get("mask", str, default=None)
        if mask is not None:
            code = f"({code} & {convert(Expr(mask, Ty('lit'), hexstr(k, mask)), e.ty)})"
        name = k.get("name", str, default=None)
        ann = f' @name("{name}")' if name else ""
        out.append(f"        {code}: {kind}{ann};")
    return out


def _key_types(ctx: Context, table: Node) -> list[Ty]:
    tr = Translator(ctx, table)
    out = []
    for k in table.items("key"):
        ty = tr.field(k.get("target", list)).ty
        out.append(ty if ty.kind != "bool" else Ty("bit", 1))
    return out


def _entry_key(node: Node, mk: Node, ty: Ty) -> str:
    kind = mk.get("match_type", str)

    def lit(raw: object) -> str:
        return convert(Expr("", Ty("lit"), hexstr(mk, raw)), ty)
    if kind == "exact":
        return lit(mk.get("key", str))
    if kind == "lpm":
        plen = mk.get("prefix_length", int)
        mask = ((1 << plen) - 1) << (ty.width - plen)
        return f"{lit(mk.get('key', str))} &&& {convert(Expr('', Ty('lit'), mask), ty)}"
    if kind in ("ternary", "optional"):
        mask_text = mk.get("mask", str, default=None)
        if mask_text is None:
            return lit(mk.get("key", str))
        return f"{lit(mk.get('key', str))} &&& {lit(mask_text)}"
    if kind == "range":
        return f"{lit(mk.get('start', str))} .. {lit(mk.get('end', str))}"
    raise mk.error(f"match type {kind!r} is not supported in const entries")


def _entries(ctx: Context, table: Node) -> list[str]:
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
        call = _call(ctx, ae, ae.get("action_id", int), ae.get("action_data", list))
        ks = keys[0] if len(keys) == 1 else "(" + ", ".join(keys) + ")"
        out.append(f"        {ks}: {call};")
    out.append("    }")
    return out


def _profiles(ctx: Context, pipe: Node) -> tuple[list[str], dict[str, Node]]:
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


def _implementation(ctx: Context, table: Node, profiles: dict[str, Node]) -> tuple[
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


def _table(ctx: Context, table: Node, props: list[str],
           profiles: dict[str, Node]) -> list[str]:
    name = table.get("name", str)
    selector_keys, impl = _implementation(ctx, table, profiles)
    props = props + impl
    hidden = "@hidden " if _made_by_p4c(name) else ""
    out = [f'{hidden}@name(".{name}") table {ident(name, "t_")} {{', "    key = {",
           *_key(ctx, table), *selector_keys, "    }", "    actions = {"]
    out += [f"        {action_name(ctx, a)};" for a in table.get("action_ids", list)]
    out += ["    }", f"    size = {table.get('max_size', int, default=1024)};"]
    entry = table.child("default_entry") if "default_entry" in table.value else None
    if entry is not None:
        const = "const " if entry.get("action_const", bool, default=False) else ""
        call = _call(ctx, entry, entry.get("action_id", int), entry.get("action_data", list))
        out.append(f"    {const}default_action = {call};")
    out += _entries(ctx, table)
    out += ["    " + p for p in props]
    if table.get("support_timeout", bool, default=False):
        out.append("    support_timeout = true;")
    out.append("}")
    return out


class Flow:
    """The apply block of one pipeline, structured from its graph of nodes."""

    def __init__(self, ctx: Context, pipe: Node) -> None:
        self.ctx = ctx
        self.pipe = pipe
        self.tables = {t.get("name", str): t for t in pipe.items("tables")}
        self.conds = {c.get("name", str): c for c in pipe.items("conditionals")}
        self.order: dict[str, int] = {}
        self.reach: dict[str, frozenset[str]] = {}
        init = pipe.get("init_table", str, default=None) or END
        self._number(init)

    def succ(self, name: str) -> list[str]:
        if name == END:
            return []
        if name in self.tables:
            return [n or END for n in self.tables[name].get("next_tables", dict).values()]
        if name in self.conds:
            c = self.conds[name]
            return [c.get("true_next", object, default=None) or END,
                    c.get("false_next", object, default=None) or END]
        raise self.pipe.error(f"next node {name!r} is neither a table nor a conditional")

    def _number(self, init: str) -> None:
        post: list[str] = []
        seen: set[str] = set()
        stack: list[tuple[str, int]] = [(init, 0)]
        while stack:
            name, i = stack.pop()
            if i == 0:
                if name in seen:
                    continue
                seen.add(name)
            nxt = self.succ(name)
            if i < len(nxt):
                stack.append((name, i + 1))
                stack.append((nxt[i], 0))
            else:
                post.append(name)
                self.reach[name] = frozenset({name}).union(*(self.reach[n] for n in nxt))
        for rank, name in enumerate(reversed(post)):
            self.order[name] = rank

    def join(self, branches: list[str]) -> str:
        common = frozenset.intersection(*(self.reach[b] for b in branches))
        return min(common, key=lambda n: self.order[n])

    def emit(self, name: str, stop: str) -> list[str]:
        out: list[str] = []
        while name != stop and name != END:
            if name in self.tables:
                lines, name = self._table(name)
            else:
                lines, name = self._cond(name)
            out += lines
        return out

    def _block(self, head: str, start: str, stop: str) -> list[str]:
        return [head, *("    " + s for s in self.emit(start, stop)), "}"]

    def _table(self, name: str) -> tuple[list[str], str]:
        t = self.tables[name]
        nexts = {k: v or END for k, v in t.get("next_tables", dict).items()}
        targets = list(dict.fromkeys(nexts.values()))
        if _inlined(t):
            entry = t.child("default_entry")
            call = _call(self.ctx, entry, entry.get("action_id", int),
                         entry.get("action_data", list))
            return [f"{call};"], targets[0] if targets else END
        apply = f"{ident(name, 't_')}.apply()"
        if len(targets) <= 1:
            return [f"{apply};"], targets[0] if targets else END
        stop = self.join(targets)
        if set(nexts) == {"__HIT__", "__MISS__"}:
            lines = self._block(f"if ({apply}.hit) {{", nexts["__HIT__"], stop)
            lines[-1:] = self._block("} else {", nexts["__MISS__"], stop)
            return lines, stop
        ids = {self.ctx.actions[a].get("name", str): a for a in t.get("action_ids", list)}
        lines = [f"switch ({apply}.action_run) {{"]
        for target in targets:
            labels = [action_name(self.ctx, ids[a]) for a, n in nexts.items() if n == target]
            lines += [f"    {lab}:" for lab in labels[:-1]]
            lines += ["    " + s for s in self._block(f"{labels[-1]}: {{", target, stop)]
        return lines + ["}"], stop

    def _cond(self, name: str) -> tuple[list[str], str]:
        c = self.conds[name]
        cond = convert(Translator(self.ctx, c)(c.get("expression", dict)), BOOL)
        t, f = self.succ(name)
        stop = self.join([t, f])
        lines = self._block(f"if ({cond}) {{", t, stop)
        if f != stop:
            lines[-1:] = self._block("} else {", f, stop)
        return lines, stop


def _plain(value: object) -> object:
    """``value`` without its ``source_info`` members (where p4c's copies differ)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "source_info"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _alias(ctx: Context, action_id: int, used: dict[int, str | None]) -> bool:
    """Point ``action_id`` at an earlier used action of the same name and body (p4c copies
    an action per table; the front end takes one name once): True when it is a copy."""
    node = ctx.actions[action_id]
    for other in sorted(used):
        if other >= action_id:
            break
        twin = ctx.actions[other]
        if twin.get("name", str) != node.get("name", str) or used[other] != used[action_id]:
            continue
        if all(_plain(twin.value.get(k)) == _plain(node.value.get(k))
               for k in ("runtime_data", "primitives")):
            ctx.alias[action_id] = ctx.alias.get(other, other)
            return True
    ctx.alias.pop(action_id, None)
    return False


_STATE = re.compile(r"\b(hdr|meta|sm|x_\w+)\b")


def _global(ctx: Context, action_id: int, meter_read: str | None) -> bool:
    """Declare an action that touches no control state at the top level, once per name,
    so pipelines sharing it (``NoAction``) share one control-plane name."""
    node = ctx.actions[action_id]
    lines = _action(ctx, node, meter_read, named=True)
    if meter_read or any(_STATE.search(line) for line in lines[1:]):
        return False
    name, plain = node.get("name", str), _plain(node.value.get("primitives"))
    first = ctx.toplevel.get(name)
    if first is None and name in ctx.absolute:
        return False
    if first is None:
        ctx.absolute.add(name)
        ctx.toplevel[name] = (action_id, plain, lines)
        ctx.alias.pop(action_id, None)
        return True
    if first[1] != plain or _plain(node.value.get("runtime_data")) != _plain(
            ctx.actions[first[0]].value.get("runtime_data")):
        return False
    ctx.alias[action_id] = first[0]
    return True


def control(ctx: Context, pipe: Node, name: str) -> list[str]:
    """The v1model control ``name`` of pipeline ``pipe``."""
    flow = Flow(ctx, pipe)
    body, profiles = _profiles(ctx, pipe)
    used: dict[int, str | None] = {}
    direct: set[int] = set()
    for tname, table in flow.tables.items():
        if tname not in flow.order:
            continue
        for a in table.get("action_ids", list):
            ctx.action(table, a)
            if _inlined(table):
                direct.add(a)
            else:
                used.setdefault(a, externs.direct_meter_read(ctx, tname))
    visible = {a for tname, t in flow.tables.items()
               if tname in flow.order and not _made_by_p4c(tname)
               for a in t.get("action_ids", list)}
    only_direct = direct - set(used)
    for a in sorted(only_direct):
        if "." in ctx.actions[a].get("name", str):  # a user's action, called directly
            used[a] = None
            continue
        ctx.alias.pop(a, None)
        body += _action(ctx, ctx.actions[a], None, named=None)
    for a, meter_read in sorted(used.items()):
        action = ctx.actions[a].get("name", str)
        hidden = _made_by_p4c(action) and a not in visible
        if (not hidden and _global(ctx, a, meter_read)) or _alias(ctx, a, used):
            continue
        named: bool | None = action not in ctx.absolute
        if hidden or (not named and a in only_direct):  # nobody names it: keep it hidden
            named = None
        body += _action(ctx, ctx.actions[a], meter_read, named=named)
        if named is not None:
            ctx.absolute.add(action)
    tables: list[str] = []
    for tname, table in flow.tables.items():
        if tname in flow.order and not _inlined(table):
            decls, props = externs.direct_declarations(ctx, tname)
            body = decls + body  # before the actions that read a direct meter
            tables += _table(ctx, table, props, profiles)
    body += tables
    apply = flow.emit(pipe.get("init_table", str, default=None) or END, END)
    return [f"control {name}(inout headers_t hdr, inout metadata_t meta, "
            "inout standard_metadata_t sm) {", *("    " + s for s in body),
            "    apply {", *("        " + s for s in apply), "    }", "}"]
