"""Desired vs. current entities -> the ordered writes that make current desired.

Identity is :func:`entry_key` (what the switch keys an entity by), content is
:func:`entry_value`; equal content means no write, so applying the same intent twice
writes nothing. Writes are ordered so no step references something missing: route
deletions before the groups/members they use disappear, members before the groups
that list them, groups before the table entries that point at them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4.v1 import p4runtime_pb2

from controlplane.compile.state import DesiredState
from controlplane.p4rt.describe import entry_key, entry_value

Entity = p4runtime_pb2.Entity
Update = p4runtime_pb2.Update


@dataclass
class Change:
    kind: str                  # INSERT | MODIFY | DELETE
    entity: Entity
    old: Entity | None = None  # MODIFY: what the switch had


@dataclass
class Plan:
    """The writes for one switch, in phases that must run in order."""

    phases: list[list[Change]] = field(default_factory=list)

    @property
    def changes(self) -> list[Change]:
        return [c for phase in self.phases for c in phase]

    def counts(self) -> dict[str, int]:
        out = {"INSERT": 0, "MODIFY": 0, "DELETE": 0}
        for c in self.changes:
            out[c.kind] += 1
        return out

    def __bool__(self) -> bool:
        return any(self.phases)


def _kind(entity: Entity) -> str:
    return entity.WhichOneof("entity") or ""


def in_scope(entity: Entity, desired: DesiredState) -> bool:
    """Is this switch entity the controller's to delete when the intent omits it?"""
    kind = _kind(entity)
    if kind == "table_entry":
        te = entity.table_entry
        return not te.is_default_action and te.table_id in desired.managed_tables
    if kind == "action_profile_member":
        return entity.action_profile_member.action_profile_id in desired.managed_profiles
    if kind == "action_profile_group":
        return entity.action_profile_group.action_profile_id in desired.managed_profiles
    if kind == "packet_replication_engine_entry":
        pre = entity.packet_replication_engine_entry
        return (pre.HasField("clone_session_entry")
                and pre.clone_session_entry.session_id in desired.managed_clone_sessions)
    return False


def diff(desired: DesiredState, current: list[Entity]) -> Plan:
    have = {entry_key(e): e for e in current}
    want = {entry_key(e): e for e in desired.entities + desired.defaults}
    inserts: dict[str, list[Change]] = {}
    modifies: dict[str, list[Change]] = {}
    deletes: dict[str, list[Change]] = {}
    for key, entity in want.items():
        old = have.get(key)
        if old is None:
            # default entries and meter cells always exist: they are modified, never added
            is_default = (_kind(entity) == "table_entry" and entity.table_entry.is_default_action
                          or _kind(entity) == "meter_entry")
            bucket = modifies if is_default else inserts
            bucket.setdefault(_kind(entity), []).append(Change(
                "MODIFY" if is_default else "INSERT", entity))
        elif entry_value(old) != entry_value(entity):
            modifies.setdefault(_kind(entity), []).append(Change("MODIFY", entity, old))
    for key, entity in have.items():
        if key not in want and in_scope(entity, desired):
            deletes.setdefault(_kind(entity), []).append(Change("DELETE", entity))

    def pick(bucket: dict[str, list[Change]], kind: str) -> list[Change]:
        return bucket.get(kind, [])

    te, mem, grp, pre = ("table_entry", "action_profile_member", "action_profile_group",
                         "packet_replication_engine_entry")
    phases = [
        pick(deletes, te),
        pick(inserts, mem) + pick(modifies, mem),
        pick(inserts, grp) + pick(modifies, grp) + pick(deletes, grp),
        pick(deletes, mem),
        pick(inserts, te) + pick(modifies, te) + pick(modifies, "meter_entry"),
        # Alone: targets may refuse replication entries in atomic batches.
        pick(inserts, pre) + pick(modifies, pre) + pick(deletes, pre),
    ]
    return Plan([p for p in phases if p])


def wants_atomic(phase: list[Change]) -> bool:
    """Ask for an atomic batch (where the target grants one), except for replication
    entries, which some targets cannot take back inside one; the controller's own
    rollback (controlplane.p4rt.rollback) covers every phase either way."""
    return not all(_kind(c.entity) == "packet_replication_engine_entry" for c in phase)


def to_updates(changes: list[Change]) -> list[Update]:
    return [Update(type=Update.Type.Value(c.kind), entity=c.entity) for c in changes]
