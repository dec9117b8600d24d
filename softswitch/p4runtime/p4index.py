"""Lookups into a P4Info by id, the way every P4Runtime request names things.

Requests carry numeric ids; the switch is driven by control-plane names. The index
maps each id to its P4Info object once per pipeline, so translating an update is a
dict probe, and an unknown id is reported precisely (INVALID_ARGUMENT, naming the
kind of object expected).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from p4.config.v1 import p4info_pb2

from softswitch.p4runtime import errors
from softswitch.p4runtime.encoding import varint

# P4Info's repeated fields whose elements have a preamble, by the kind of object.
_KINDS = ("tables", "actions", "action_profiles", "counters", "direct_counters", "meters",
          "direct_meters", "controller_packet_metadata", "value_sets", "registers",
          "digests")


MF = p4info_pb2.MatchField
MATCH_KINDS = {MF.EXACT: "exact", MF.LPM: "lpm", MF.TERNARY: "ternary", MF.RANGE: "range",
               MF.OPTIONAL: "optional"}


@dataclass(frozen=True, slots=True)
class FieldPlan:
    """A match field as entry validation reads it, taken out of P4Info once per
    pipeline: every write then reads plain attributes instead of protobuf ones and
    formats no message unless it fails."""

    id: int
    name: str
    kind: str | None          # exact/lpm/ternary/range/optional; None: not supported
    width: int
    what: str                 # how error messages name it
    info: p4info_pb2.MatchField

    @classmethod
    def of(cls, info: p4info_pb2.MatchField) -> FieldPlan:
        return cls(info.id, info.name, MATCH_KINDS.get(info.match_type), info.bitwidth,
                   f"match field '{info.name}'", info)


@dataclass(frozen=True, slots=True)
class ParamPlan:
    """An action parameter as argument decoding reads it (see FieldPlan)."""

    id: int
    name: str
    width: int
    what: str


@dataclass(frozen=True, slots=True)
class ActionPlan:
    """An action's parameters in order, and the set of their ids (one set compare
    checks a request gives each exactly once)."""

    info: p4info_pb2.Action
    id: int
    name: str
    params: tuple[ParamPlan, ...]
    ids: frozenset[int]
    order: tuple[int, ...]       # parameter ids in order
    limits: tuple[float, ...]    # the largest value of each (inf: no width)
    # The canonical Action's encoding around its values: Action.action_id (field 1),
    # and per parameter Param.param_id (2) up to the value's tag (3); see
    # ActionCall.canonical_bytes.
    wire_prefixes: tuple[bytes, tuple[bytes, ...]]

    @classmethod
    def of(cls, info: p4info_pb2.Action) -> ActionPlan:
        name = info.preamble.name
        params = tuple(ParamPlan(p.id, p.name, p.bitwidth,
                                 f"parameter '{p.name}' of action '{name}'")
                       for p in info.params)
        prefixes = (b"\x08" + varint(info.preamble.id),
                    tuple(b"\x10" + varint(p.id) + b"\x1a" for p in params))
        return cls(info, info.preamble.id, name, params, frozenset(p.id for p in params),
                   tuple(p.id for p in params),
                   tuple((1 << p.width) - 1 if p.width > 0 else math.inf for p in params),
                   prefixes)


@dataclass
class TableIndex:
    """A table's match fields and actions by id, for validating entries."""

    info: p4info_pb2.Table
    fields: dict[int, p4info_pb2.MatchField] = field(default_factory=dict)
    actions: dict[int, p4info_pb2.ActionRef] = field(default_factory=dict)
    needs_priority: bool = False
    direct_counter: p4info_pb2.DirectCounter | None = None
    direct_meter: p4info_pb2.DirectMeter | None = None
    # Read out of ``info`` once (see FieldPlan): id, name, size, match fields by id and
    # in key order, the ids of the exact fields (which every entry must give), etc.
    id: int = field(init=False)
    name: str = field(init=False)
    size: int = field(init=False)
    plans: dict[int, FieldPlan] = field(init=False)
    ordered: tuple[FieldPlan, ...] = field(init=False)
    exact_ids: frozenset[int] = field(init=False)
    is_const: bool = field(init=False)
    implementation_id: int = field(init=False)
    idle_timeouts: bool = field(init=False)

    def __post_init__(self) -> None:
        table = self.info
        self.id, self.name, self.size = table.preamble.id, table.preamble.name, table.size
        self.ordered = tuple(FieldPlan.of(f) for f in table.match_fields)
        self.plans = {plan.id: plan for plan in self.ordered}
        self.exact_ids = frozenset(f.id for f in self.ordered if f.kind == "exact")
        self.is_const = table.is_const_table
        self.implementation_id = table.implementation_id
        self.idle_timeouts = table.idle_timeout_behavior != p4info_pb2.Table.NO_TIMEOUT


class P4InfoIndex:
    """Everything in one P4Info, reachable by id."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self._by_kind: dict[str, dict[int, Any]] = {
            kind: {obj.preamble.id: obj for obj in getattr(p4info, kind)} for kind in _KINDS}
        self.tables: dict[int, TableIndex] = {}
        self.action_plans = {aid: ActionPlan.of(a)
                             for aid, a in self._by_kind["actions"].items()}
        for table in p4info.tables:
            self.tables[table.preamble.id] = self._index_table(table)
        self._by_switch_name: dict[str, p4info_pb2.Action | None] = {}

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
            if kind == "digests":
                raise errors.not_found(f"{obj_id} is not a valid digest id")
            raise errors.invalid("Invalid P4 id")
        return obj

    def all(self, kind: str) -> list[Any]:
        return list(self._by_kind[kind].values())

    def table(self, table_id: int) -> TableIndex:
        index = self.tables.get(table_id)
        if index is None:
            raise errors.invalid("Invalid P4 id")
        return index

    def action(self, action_id: int) -> p4info_pb2.Action:
        return self.get("actions", action_id)

    def action_named(self, name: str) -> p4info_pb2.Action | None:
        """The action the switch reports as ``name`` (its full name, or the first in
        P4Info order whose name ends with ``.name``), found once per name: every
        runtime-channel ``table_add`` names its action so."""
        try:
            return self._by_switch_name[name]
        except KeyError:
            pass
        suffix = "." + name
        found = next((a for a in self._by_kind["actions"].values()
                      if a.preamble.name == name or a.preamble.name.endswith(suffix)), None)
        self._by_switch_name[name] = found
        return found

    def action_plan(self, action_id: int) -> ActionPlan:
        plan = self.action_plans.get(action_id)
        if plan is None:
            raise errors.invalid("Invalid P4 id")
        return plan

    def packet_metadata(self, name: str) -> p4info_pb2.ControllerPacketMetadata | None:
        """The ``@controller_header`` named ``packet_in`` / ``packet_out``, if any."""
        for cpm in self.p4info.controller_packet_metadata:
            if cpm.preamble.name == name:
                return cpm
        return None
