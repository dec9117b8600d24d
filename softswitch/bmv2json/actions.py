"""Actions as P4 declarations: parameters, names, calls, and p4c's copies of one action.

``declaration`` writes an action under its JSON name (``@name(".X")``), under a name
local to its control (a second, different action of that name) or ``@hidden`` (an
action p4c made for a statement). p4c copies an action per table and per pipeline:
``alias`` points a copy with the same body at the first one, ``share_globally``
declares an action that touches no control state once at the top level, so both
pipelines share one control-plane name (``NoAction``). ``call`` writes a call with
hex-string arguments typed by the parameters.
"""

from __future__ import annotations

import re

from softswitch.bmv2json import primitives
from softswitch.bmv2json.context import KEYWORDS, Context, P4Text, Ty, ident
from softswitch.bmv2json.exprs import Translator, convert, hexstr
from softswitch.bmv2json.reader import JsonNode


def _params(node: JsonNode) -> list[tuple[str, Ty]]:
    out = []
    for rd in node.items("runtime_data"):
        name = rd.get("name", str)
        p4 = ident(name) if ident(name) == name and name not in KEYWORDS else ident(name, "p_")
        out.append((p4, Ty("bit", rd.get("bitwidth", int))))
    return out

def action_name(ctx: Context, action_id: int) -> str:
    return f"a_{ctx.alias.get(action_id, action_id)}"

def declaration(ctx: Context, node: JsonNode, meter_read: str | None,
                named: bool | None) -> list[str]:
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

def call(ctx: Context, node: JsonNode, action_id: object, data: list) -> str:
    action = ctx.action(node, action_id)
    params = _params(action)
    if len(data) != len(params):
        raise node.error(f"action {action.get('name', str)!r} takes {len(params)} "
                         f"arguments, {len(data)} given")
    args = [convert(P4Text(str(v), Ty("lit"), v), ty)
            for v, (_, ty) in zip((hexstr(node, d) for d in data), params, strict=True)]
    return f"{action_name(ctx, action.get('id', int))}({', '.join(args)})"

def _plain(value: object) -> object:
    """``value`` without its ``source_info`` members (where p4c's copies differ)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "source_info"}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value

def alias(ctx: Context, action_id: int, used: dict[int, str | None]) -> bool:
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

def share_globally(ctx: Context, action_id: int, meter_read: str | None) -> bool:
    """Declare an action that touches no control state at the top level, once per name,
    so pipelines sharing it (``NoAction``) share one control-plane name."""
    node = ctx.actions[action_id]
    lines = declaration(ctx, node, meter_read, named=True)
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
