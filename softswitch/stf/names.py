"""How names written in STF files and CLI commands find tables, actions and keys.

The switch speaks control-plane (P4Info) names: ``ingress.ipv4_lpm``,
``hdr.ipv4.dstAddr``, ``hdr.h.isValid()``. Test writers abbreviate them, so a written
name resolves, in this order, to

1. the object whose name is exactly the written name;
2. the unique object whose name ends with ``.`` + the written name (a dotted suffix:
   ``ipv4_lpm`` finds ``ingress.ipv4_lpm``);
3. the unique object whose name merely ends with the written name (the looser rule of
   p4c's ``bmv2stf.py``, kept for compatibility).

Two or more candidates at the first rule that has any is an error naming them.

Key names are first brought to P4Info spelling, accepting the BMv2-JSON and STF forms
``bmv2stf.py`` maps: ``stack$0.f`` is ``stack[0].f``, and ``h.$valid$``, ``h$valid$``,
``h.valid`` (when no key is literally named so) all mean ``h.isValid()``; a bare
``valid``/``$valid$`` is the one validity key of the table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

from softswitch.core.control import ActionInfo, KeyInfo, TableInfo
from softswitch.diagnostics import P4Error, SourceLoc

T = TypeVar("T")

_STACK_INDEX = re.compile(r"\$([0-9]+)")
_VALID_SUFFIXES = (".$valid$", "$valid$", ".valid")


def resolve_name(kind: str, wanted: str, items: Iterable[T], name_of: Callable[[T], str],
                 loc: SourceLoc | None, scope: str = "") -> T:
    """Find ``wanted`` among ``items`` by the rules of the module docstring."""
    pool = list(items)
    rules = (
        lambda n: n == wanted,
        lambda n: n.endswith("." + wanted),
        lambda n: n.endswith(wanted),
    )
    for rule in rules:
        found = [it for it in pool if rule(name_of(it))]
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(sorted(name_of(it) for it in found))
            raise P4Error(f"{kind} name '{wanted}'{scope} is ambiguous: {names}", loc)
    known = ", ".join(sorted(name_of(it) for it in pool)) or "none"
    raise P4Error(f"no {kind} '{wanted}'{scope} (known: {known})", loc)


def resolve_table(tables: list[TableInfo], wanted: str, loc: SourceLoc | None) -> TableInfo:
    return resolve_name("table", wanted, tables, lambda t: t.name, loc)


def resolve_action(table: TableInfo, wanted: str, loc: SourceLoc | None) -> ActionInfo:
    return resolve_name("action", wanted, table.actions, lambda a: a.name, loc,
                        f" in table {table.name}")


def canonical_key_name(name: str) -> str:
    """P4Info spelling of a key name written in STF/BMv2-JSON style."""
    name = _STACK_INDEX.sub(r"[\1]", name)
    if name in ("valid", "$valid$"):
        return "isValid()"
    for suffix in _VALID_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)] + ".isValid()"
    return name


def resolve_key(table: TableInfo, wanted: str, loc: SourceLoc | None) -> KeyInfo:
    """The key of ``table`` that ``wanted`` names (literal names win over the valid-forms)."""
    for key in table.keys:
        if key.name == wanted:
            return key
    canon = canonical_key_name(wanted)
    return resolve_name("key field", canon, table.keys, lambda k: canonical_key_name(k.name),
                        loc, f" in table {table.name}")
