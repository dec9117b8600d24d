"""P4Info loading and name lookup.

Operators and tests write names as p4runtime-shell does: the full control-plane name
(``MyIngress.ipv4_lpm``), the alias, or any unique dotted suffix (``ipv4_lpm``). One
index resolves all three and says which names exist when one does not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

from controlplane.p4rt.errors import P4RuntimeClientError, UnknownNameError

# P4Info repeated field -> the kind word used in messages and lookups.
KINDS = {
    "tables": "table", "actions": "action", "action_profiles": "action profile",
    "counters": "counter", "direct_counters": "direct counter", "meters": "meter",
    "direct_meters": "direct meter", "registers": "register", "digests": "digest",
    "controller_packet_metadata": "controller packet metadata", "value_sets": "value set",
}


def load_p4info(path: str | Path) -> p4info_pb2.P4Info:
    """Read a P4Info file: text (``.txt``/``.txtpb``/``.pb.txt``), ``.json`` or binary."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise P4RuntimeClientError(f"{path}: cannot read P4Info: {exc.strerror}") from None
    info = p4info_pb2.P4Info()
    try:
        if path.suffix == ".json":
            json_format.Parse(data.decode(), info)
        elif path.suffix == ".bin":
            info.ParseFromString(data)
        else:
            text_format.Parse(data.decode(), info)
    except (text_format.ParseError, json_format.ParseError, UnicodeDecodeError,
            ValueError) as exc:
        raise P4RuntimeClientError(f"{path}: not a P4Info: {exc}") from None
    return info


@dataclass
class _Names:
    """One kind's objects by id and by every name they answer to."""

    kind: str
    by_id: dict[int, Any] = field(default_factory=dict)
    by_name: dict[str, list[Any]] = field(default_factory=dict)

    def add(self, obj: Any) -> None:
        pre = obj.preamble
        self.by_id[pre.id] = obj
        names = {pre.name, pre.alias} | _suffixes(pre.name)
        for name in names:
            if name:
                self.by_name.setdefault(name, []).append(obj)

    def get(self, name: str) -> Any:
        found = self.by_name.get(name, [])
        if len(found) == 1:
            return found[0]
        if not found:
            known = sorted(o.preamble.name for o in self.by_id.values())
            raise UnknownNameError(f"no {self.kind} {name!r} in the P4Info"
                                   f" (known: {', '.join(known) or 'none'})")
        unique = {o.preamble.id: o for o in found}
        if len(unique) == 1:
            return next(iter(unique.values()))
        names = ", ".join(sorted(o.preamble.name for o in unique.values()))
        raise UnknownNameError(f"{self.kind} name {name!r} is ambiguous: {names}")


def _suffixes(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[i:]) for i in range(1, len(parts))}


class P4InfoIndex:
    """Name and id lookup over one P4Info message."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self._kinds: dict[str, _Names] = {}
        for attr, kind in KINDS.items():
            names = _Names(kind)
            for obj in getattr(p4info, attr):
                names.add(obj)
            self._kinds[attr] = names
        # Lookups inside a table or action, by (what, its id, the name asked): a
        # controller adding routes resolves the same few names for every entry, and each
        # fresh resolution walks protobuf repeated fields (a wrapper object per element
        # read), the larger part of building a route. Only found names are kept.
        self._found: dict[tuple[str, int, str], Any] = {}

    @classmethod
    def from_file(cls, path: str | Path) -> P4InfoIndex:
        return cls(load_p4info(path))

    # --- lookups -----------------------------------------------------------------------
    def table(self, name: str) -> p4info_pb2.Table:
        return self._kinds["tables"].get(name)

    def action(self, name: str) -> p4info_pb2.Action:
        return self._kinds["actions"].get(name)

    def counter(self, name: str) -> p4info_pb2.Counter:
        return self._kinds["counters"].get(name)

    def direct_counter(self, name: str) -> p4info_pb2.DirectCounter:
        return self._kinds["direct_counters"].get(name)

    def meter(self, name: str) -> p4info_pb2.Meter:
        return self._kinds["meters"].get(name)

    def register(self, name: str) -> p4info_pb2.Register:
        return self._kinds["registers"].get(name)

    def action_profile(self, name: str) -> p4info_pb2.ActionProfile:
        return self._kinds["action_profiles"].get(name)

    def digest(self, name: str) -> p4info_pb2.Digest:
        return self._kinds["digests"].get(name)

    def by_id(self, attr: str, obj_id: int) -> Any:
        try:
            return self._kinds[attr].by_id[obj_id]
        except KeyError:
            raise UnknownNameError(f"no {KINDS[attr]} with id {obj_id} in the P4Info") from None

    def all(self, attr: str) -> list[Any]:
        return list(getattr(self.p4info, attr))

    def has(self, attr: str, name: str) -> bool:
        try:
            self._kinds[attr].get(name)
        except UnknownNameError:
            return False
        return True

    # --- inside a table/action ---------------------------------------------------------
    def _kept(self, what: str, owner: Any, name: str,
              resolve: Callable[[Any, str], Any]) -> Any:
        """``resolve(owner, name)``, answered from _found when the same question was
        asked before (``owner``, a table or action of this index's P4Info, is named by
        its id); what it raises is not kept."""
        key = (what, owner.preamble.id, name)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = resolve(owner, name)
        return found

    def match_field(self, table: p4info_pb2.Table, name: str) -> p4info_pb2.MatchField:
        return self._kept("match", table, name, self._match_field)

    @staticmethod
    def _match_field(table: p4info_pb2.Table, name: str) -> p4info_pb2.MatchField:
        for mf in table.match_fields:
            if mf.name == name or mf.name.endswith("." + name):
                return mf
        known = ", ".join(mf.name for mf in table.match_fields) or "none"
        raise UnknownNameError(f"table {table.preamble.name} has no key field {name!r} "
                               f"(keys: {known})")

    def param(self, action: p4info_pb2.Action, name: str) -> p4info_pb2.Action.Param:
        return self._kept("param", action, name, self._param)

    @staticmethod
    def _param(action: p4info_pb2.Action, name: str) -> p4info_pb2.Action.Param:
        for p in action.params:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in action.params) or "none"
        raise UnknownNameError(f"action {action.preamble.name} has no parameter {name!r} "
                               f"(parameters: {known})")

    def table_actions(self, table: p4info_pb2.Table) -> list[p4info_pb2.Action]:
        return [self.by_id("actions", ref.id) for ref in table.action_refs]

    def table_action(self, table: p4info_pb2.Table, name: str) -> p4info_pb2.Action:
        """An action of ``table`` by name, suffix or alias (only among its own actions)."""
        return self._kept("table action", table, name, self._table_action)

    def _table_action(self, table: p4info_pb2.Table, name: str) -> p4info_pb2.Action:
        candidates = [a for a in self.table_actions(table)
                      if name in ({a.preamble.name, a.preamble.alias}
                                  | _suffixes(a.preamble.name))]
        if len(candidates) == 1:
            return candidates[0]
        known = ", ".join(a.preamble.name for a in self.table_actions(table))
        if not candidates:
            raise UnknownNameError(f"table {table.preamble.name} has no action {name!r} "
                                   f"(actions: {known})")
        raise UnknownNameError(f"action name {name!r} is ambiguous in table "
                               f"{table.preamble.name}: {known}")
