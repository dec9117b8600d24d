"""Lookups into a P4Info by id, the way every P4Runtime request names things.

Requests carry numeric ids; the switch is driven by control-plane names. The index
maps each id to its P4Info object once per pipeline, so translating an update is a
dict probe, and an unknown id is reported precisely (INVALID_ARGUMENT, naming the
kind of object expected).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from p4.config.v1 import p4info_pb2

from softswitch.p4runtime import errors

# P4Info's repeated fields whose elements have a preamble, by the kind of object.
_KINDS = ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
          "direct_meters", "controller_packet_metadata", "value_sets", "registers",
          "digests")


@dataclass
class TableIndex:
    """A table's match fields and actions by id, for validating entries."""

    info: p4info_pb2.Table
    fields: dict[int, p4info_pb2.MatchField] = field(default_factory=dict)
    actions: dict[int, p4info_pb2.ActionRef] = field(default_factory=dict)
    needs_priority: bool = False
    direct_counter: p4info_pb2.DirectCounter | None = None
    direct_meter: p4info_pb2.DirectMeter | None = None


class P4InfoIndex:
    """Everything in one P4Info, reachable by id."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self._by_kind: dict[str, dict[int, Any]] = {
            kind: {obj.preamble.id: obj for obj in getattr(p4info, kind)} for kind in _KINDS}
        self.tables: dict[int, TableIndex] = {}
        for table in p4info.tables:
            self.tables[table.preamble.id] = self._index_table(table)

    def _index_table(self, table: p4info_pb2.Table) -> TableIndex:
        index = TableIndex(table)
        index.fields = {f.id: f for f in table.match_fields}
        index.actions = {a.id: a for a in table.action_refs}
        index.needs_priority = any(
            f.match_type in (p4info_pb2.MatchField.TERNARY, p4info_pb2.MatchField.RANGE,
                             p4info_pb2.MatchField.OPTIONAL) for f in table.match_fields)
        for rid in table.direct_resource_ids:
            if rid in self._by_kind["direct_counters"]:
                index.direct_counter = self._by_kind["direct_counters"][rid]
            elif rid in self._by_kind["direct_meters"]:
                index.direct_meter = self._by_kind["direct_meters"][rid]
        return index

    def get(self, kind: str, obj_id: int) -> Any:
        """The P4Info object of a kind by id; INVALID_ARGUMENT when there is none."""
        obj = self._by_kind[kind].get(obj_id)
        if obj is None:
            raise errors.invalid(f"unknown {_singular(kind)} id {obj_id}")
        return obj

    def all(self, kind: str) -> list[Any]:
        return list(self._by_kind[kind].values())

    def table(self, table_id: int) -> TableIndex:
        index = self.tables.get(table_id)
        if index is None:
            raise errors.invalid(f"unknown table id {table_id}")
        return index

    def action(self, action_id: int) -> p4info_pb2.Action:
        return self.get("actions", action_id)

    def packet_metadata(self, name: str) -> p4info_pb2.ControllerPacketMetadata | None:
        """The ``@controller_header`` named ``packet_in`` / ``packet_out``, if any."""
        for cpm in self.p4info.controller_packet_metadata:
            if cpm.preamble.name == name:
                return cpm
        return None


def _singular(kind: str) -> str:
    name = kind[:-1] if kind.endswith("s") else kind
    return name.replace("_", " ")
