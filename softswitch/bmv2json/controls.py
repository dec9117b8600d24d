"""Pipelines as v1model controls: their actions, tables and ``apply`` block.

Each pipeline (``ingress``, ``egress``) becomes a control declaring its action profiles,
the direct counters and meters of its tables, the actions its tables name or p4c's
statements call (:mod:`actions`), its tables (:mod:`tables`) and the ``apply`` block
structured from its graph (:mod:`flow`).
"""

from __future__ import annotations

from softswitch.bmv2json import actions, externs, tables
from softswitch.bmv2json.context import Context
from softswitch.bmv2json.flow import END, Flow
from softswitch.bmv2json.reader import JsonNode


def _actions_of(ctx: Context, flow: Flow) -> tuple[dict[int, str | None], set[int], set[int]]:
    """(action id -> direct meter read of the tables naming it, ids only called directly,
    ids a user's table names) of the reachable tables."""
    used: dict[int, str | None] = {}
    direct: set[int] = set()
    visible: set[int] = set()
    for tname, table in flow.tables.items():
        if tname not in flow.order:
            continue
        for a in table.get("action_ids", list):
            ctx.action(table, a)
            if tables.inlined(table):
                direct.add(a)
            else:
                used.setdefault(a, externs.direct_meter_read(ctx, tname))
            if not tables.made_by_p4c(tname):
                visible.add(a)
    return used, direct - set(used), visible


def _action_declarations(ctx: Context, flow: Flow) -> list[str]:
    used, only_direct, visible = _actions_of(ctx, flow)
    out: list[str] = []
    for a in sorted(only_direct):
        if "." in ctx.actions[a].get("name", str):  # a user's action, called directly
            used[a] = None
            continue
        ctx.alias.pop(a, None)
        out += actions.declaration(ctx, ctx.actions[a], None, named=None)
    for a, meter_read in sorted(used.items()):
        action = ctx.actions[a].get("name", str)
        hidden = tables.made_by_p4c(action) and a not in visible
        if not hidden and actions.share_globally(ctx, a, meter_read):
            continue
        if actions.alias(ctx, a, used):
            continue
        named: bool | None = action not in ctx.absolute
        if hidden or (not named and a in only_direct):  # nobody names it: keep it hidden
            named = None
        out += actions.declaration(ctx, ctx.actions[a], meter_read, named=named)
        if named is not None:
            ctx.absolute.add(action)
    return out


def control(ctx: Context, pipe: JsonNode, name: str) -> list[str]:
    """The v1model control ``name`` of pipeline ``pipe``."""
    flow = Flow(ctx, pipe)
    head, profiles = tables.profiles(ctx, pipe)
    body = _action_declarations(ctx, flow)
    for tname, table in flow.tables.items():
        if tname in flow.order and not tables.inlined(table):
            decls, props = externs.direct_declarations(ctx, tname)
            head += decls  # before the actions that read a direct meter
            body += tables.declaration(ctx, table, props, profiles)
    apply = flow.emit(pipe.get("init_table", str, default=None) or END, END)
    return [f"control {name}(inout headers_t hdr, inout metadata_t meta, "
            "inout standard_metadata_t sm) {", *("    " + s for s in head + body),
            "    apply {", *("        " + s for s in apply), "    }", "}"]
