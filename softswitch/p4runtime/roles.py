"""Controller roles: which P4 entities a role may write (P4Runtime 1.4 "Role Config").

P4Runtime partitions the control plane into named *roles*, each with its own primary
controller, and leaves the role definitions to an out-of-band scheme agreed between
clients and server. softswitch's scheme is a file given to ``softswitch run
--role-config FILE`` (YAML or JSON; its form is on :meth:`RoleTable.load`).

The *default role* (no role name) always exists with full pipeline access, as the
specification defines it; it cannot be redefined. A role name the server does not know
is ``NOT_FOUND``; an update outside the writer's role is ``PERMISSION_DENIED`` (that
update only); a restricted role may not set the pipeline. A table named in ``write``
brings its direct counter and direct meter. ``Read`` takes the role as a filter: a
reader sees what the role may write (the default role sees everything). Digests and
idle-timeout notifications go to the primaries whose role may write the digest or
the table; PacketIn to the primaries whose role has ``packet_in``.

Names are resolved against each pipeline's P4Info when it is loaded; a name that the
pipeline does not have grants nothing (logged once per pipeline).
"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml
from p4.v1 import p4runtime_pb2

from softswitch.diagnostics import P4Error
from softswitch.p4runtime import errors
from softswitch.p4runtime.p4index import P4InfoIndex

DEFAULT_ROLE = ""
ALL = "*"
MULTICAST = "multicast_groups"
CLONE = "clone_sessions"
PRE_NAMES = (MULTICAST, CLONE)
# P4Info kinds a role may name (all ids are unique across kinds, by their prefix).
_NAMED_KINDS = ("tables", "action_profiles", "counters", "direct_counters", "meters",
                "direct_meters", "registers", "value_sets", "digests")
_KEYS = {"name", "write", "pipeline", "packet_in", "packet_out"}
log = logging.getLogger("softswitch.p4runtime")


@dataclass(frozen=True)
class Role:
    """One role as configured."""

    name: str
    writes: tuple[str | int, ...] = ()
    full_access: bool = False
    pipeline: bool = False
    packet_in: bool = False
    packet_out: bool = False


DEFAULT = Role(DEFAULT_ROLE, full_access=True, pipeline=True, packet_in=True,
               packet_out=True)


@dataclass
class RoleScope:
    """What a role may write in one pipeline: P4Info ids and PRE entry kinds."""

    full: bool
    ids: frozenset[int] = frozenset()
    pre: frozenset[str] = frozenset()
    index: P4InfoIndex | None = None

    # ------------------------------------------------------------------ writes
    def update_error(self, update: p4runtime_pb2.Update) -> errors.P4RuntimeError | None:
        """PERMISSION_DENIED when the update's entity is outside the role, else None."""
        if self.full or self.permits(update.entity):
            return None
        which = update.entity.WhichOneof("entity") or "entity"
        return errors.permission_denied(f"{which} {_entity_id(update.entity)}: not in the "
                                        "scope of this controller's role")

    def permits(self, entity: p4runtime_pb2.Entity) -> bool:
        if self.full:
            return True
        which = entity.WhichOneof("entity")
        if which == "packet_replication_engine_entry":
            kind = entity.packet_replication_engine_entry.WhichOneof("type")
            return (MULTICAST if kind == "multicast_group_entry" else CLONE) in self.pre
        if which in ("direct_counter_entry", "direct_meter_entry"):
            table_id = getattr(entity, which).table_entry.table_id
            if table_id in self.ids:
                return True
            table = self.index.tables.get(table_id) if self.index is not None else None
            resource = None if table is None else (
                table.direct_counter if which == "direct_counter_entry" else table.direct_meter)
            return resource is not None and resource.preamble.id in self.ids
        obj_id = _entity_id(entity)
        return obj_id != 0 and obj_id in self.ids

    def notifies(self, obj_id: int) -> bool:
        """Whether the role hears of this table's idle entries / this digest's lists."""
        return self.full or obj_id in self.ids

    # ------------------------------------------------------------------ reads
    def filter_read(self, entity: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        """The request entities a reader of this role gets: the entity itself when in
        scope, wildcards narrowed to the role's objects, nothing when out of scope."""
        if self.full:
            return [entity]
        which = entity.WhichOneof("entity")
        if which is None or self.index is None:
            return [entity]
        if which == "packet_replication_engine_entry":
            kind = entity.packet_replication_engine_entry.WhichOneof("type")
            if kind is None:
                out = []
                for name, field_name in ((MULTICAST, "multicast_group_entry"),
                                         (CLONE, "clone_session_entry")):
                    if name in self.pre:
                        narrowed = p4runtime_pb2.Entity()
                        getattr(narrowed.packet_replication_engine_entry,
                                field_name).SetInParent()
                        out.append(narrowed)
                return out
            return [entity] if self.permits(entity) else []
        if which in ("direct_counter_entry", "direct_meter_entry"):
            inner = getattr(entity, which).table_entry
            if inner.table_id:
                return [entity] if self.permits(entity) else []
            out = []
            for tid, table in sorted(self.index.tables.items()):
                resource = (table.direct_counter if which == "direct_counter_entry"
                            else table.direct_meter)
                if resource is None:
                    continue
                narrowed = p4runtime_pb2.Entity()
                narrowed.CopyFrom(entity)
                getattr(narrowed, which).table_entry.table_id = tid
                if self.permits(narrowed):
                    out.append(narrowed)
            return out
        id_field = _ID_FIELDS.get(which)
        if id_field is None or which == "extern_entry":
            return [entity] if self.permits(entity) else []
        if getattr(getattr(entity, which), id_field):
            return [entity] if self.permits(entity) else []
        out = []
        for obj_id in sorted(self._ids_of(which)):
            narrowed = p4runtime_pb2.Entity()
            narrowed.CopyFrom(entity)
            setattr(getattr(narrowed, which), id_field, obj_id)
            out.append(narrowed)
        return out

    def _ids_of(self, which: str) -> list[int]:
        assert self.index is not None
        kind = _ENTITY_KIND[which]
        if kind == "tables":
            return [tid for tid in self.index.tables if tid in self.ids]
        return [o.preamble.id for o in self.index.all(kind) if o.preamble.id in self.ids]


_ID_FIELDS = {"table_entry": "table_id", "action_profile_member": "action_profile_id",
              "action_profile_group": "action_profile_id", "counter_entry": "counter_id",
              "meter_entry": "meter_id", "register_entry": "register_id",
              "value_set_entry": "value_set_id", "digest_entry": "digest_id",
              "extern_entry": "extern_id"}
_ENTITY_KIND = {"table_entry": "tables", "action_profile_member": "action_profiles",
                "action_profile_group": "action_profiles", "counter_entry": "counters",
                "meter_entry": "meters", "register_entry": "registers",
                "value_set_entry": "value_sets", "digest_entry": "digests",
                "extern_entry": "externs"}


def _entity_id(entity: p4runtime_pb2.Entity) -> int:
    which = entity.WhichOneof("entity")
    id_field = _ID_FIELDS.get(which or "")
    return int(getattr(getattr(entity, which), id_field)) if id_field and which else 0


FULL_SCOPE = RoleScope(full=True)


@dataclass
class RoleTable:
    """The roles a device knows (the default role always), and their scopes."""

    roles: dict[str, Role] = field(default_factory=dict)
    _scopes: dict[str, tuple[Any, RoleScope]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.roles[DEFAULT_ROLE] = DEFAULT

    def get(self, name: str) -> Role:
        """The role of this name; NOT_FOUND when the server does not know it."""
        role = self.roles.get(name)
        if role is None:
            named = ", ".join(f"'{n}'" for n in sorted(self.roles) if n)
            known = f"the default role and {named}" if named else "the default role only"
            raise errors.not_found(f"unknown role '{name}' (this switch knows {known}; "
                                   "roles come from softswitch run --role-config)")
        return role

    def scope(self, role: Role, index: P4InfoIndex | None) -> RoleScope:
        """The role's scope in the pipeline described by ``index``."""
        if role.full_access:
            return FULL_SCOPE
        cached = self._scopes.get(role.name)
        if cached is not None and index is not None and cached[0]() is index:
            return cached[1]
        scope = _resolve(role, index)
        if index is not None:
            self._scopes[role.name] = (weakref.ref(index), scope)
        return scope

    @classmethod
    def load(cls, path: str) -> RoleTable:
        """Read a role config file (YAML or JSON); P4Error naming the problem. The form::

            roles:
              - name: acl                     # the role name clients send (Role.name)
                write:                        # what its primary may write: P4Info names
                  - MyIngress.acl             #   (full or alias) or ids, of tables, action
                  - MyIngress.acl_hits        #   profiles, counters, meters, registers,
                  - 0x02000001                #   value sets and digests, plus the names
                  - clone_sessions            #   multicast_groups / clone_sessions (PRE)
                packet_in: false              # receives PacketIn (default false)
                packet_out: false             # may send PacketOut (default false)
              - name: ops
                write: "*"                    # everything ...
                pipeline: true                # ... and may set the pipeline (needs write "*")
        """
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read(1 << 20)
        except OSError as exc:
            raise P4Error(f"--role-config {path}: cannot read: {exc.strerror}") from None
        try:
            data = yaml.safe_load(text) if not path.endswith(".json") else json.loads(text)
        except (yaml.YAMLError, json.JSONDecodeError) as exc:
            raise P4Error(f"--role-config {path}: not valid YAML/JSON: "
                          f"{str(exc).splitlines()[0]}") from None
        return cls.from_data(data, path)

    @classmethod
    def from_data(cls, data: Any, where: str = "role config") -> RoleTable:
        if not isinstance(data, dict) or set(data) != {"roles"} or not isinstance(
                data["roles"], list):
            raise P4Error(f"{where}: expected a mapping with one key, 'roles', holding a "
                          "list of roles")
        table = cls()
        for i, item in enumerate(data["roles"]):
            role = _parse_role(item, f"{where}: roles[{i}]")
            if role.name in table.roles:
                raise P4Error(f"{where}: roles[{i}]: role '{role.name}' is defined twice")
            table.roles[role.name] = role
        return table

    def check_names(self, index: P4InfoIndex) -> list[str]:
        """Problems of the configured names against a pipeline (for start-up checks)."""
        problems = []
        for role in self.roles.values():
            if role.full_access:
                continue
            for name in _unresolved(role.writes, index):
                problems.append(f"role '{role.name}': '{name}' is not a table, action "
                                "profile, counter, meter, register, value set or digest "
                                "of the program")
        return problems


def _parse_role(item: Any, where: str) -> Role:
    if not isinstance(item, dict):
        raise P4Error(f"{where}: expected a mapping (name, write, pipeline, packet_in, "
                      "packet_out)")
    unknown = set(item) - _KEYS
    if unknown:
        raise P4Error(f"{where}: unknown key '{sorted(unknown)[0]}' (keys: "
                      f"{', '.join(sorted(_KEYS))})")
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise P4Error(f"{where}: 'name' must be a non-empty string (the default role "
                      "always exists with full access and cannot be redefined)")
    flags = {}
    for key in ("pipeline", "packet_in", "packet_out"):
        value = item.get(key, False)
        if not isinstance(value, bool):
            raise P4Error(f"{where}: '{key}' must be true or false")
        flags[key] = value
    write = item.get("write", [])
    full = write == ALL
    if not full:
        if not isinstance(write, list) or not all(
                isinstance(w, (str, int)) and not isinstance(w, bool) for w in write):
            raise P4Error(f"{where}: 'write' must be \"*\" or a list of P4Info names or "
                          "ids")
        if ALL in write:
            raise P4Error(f"{where}: write: \"*\" stands alone (write: \"*\")")
    if flags["pipeline"] and not full:
        raise P4Error(f"{where}: 'pipeline: true' needs 'write: \"*\"' (a new pipeline "
                      "replaces every entity)")
    writes = () if full else tuple(_id_or_name(w) for w in write)
    return Role(name, writes, full, flags["pipeline"], flags["packet_in"],
                flags["packet_out"])


def _id_or_name(item: str | int) -> str | int:
    if isinstance(item, int):
        return item
    text = item.strip()
    try:
        return int(text, 0)
    except ValueError:
        return text


def _lookup(index: P4InfoIndex) -> dict[str | int, int]:
    names: dict[str | int, int] = {}
    for kind in _NAMED_KINDS:
        for obj in index.all(kind):
            names[obj.preamble.id] = obj.preamble.id
            names[obj.preamble.name] = obj.preamble.id
            if obj.preamble.alias:
                names.setdefault(obj.preamble.alias, obj.preamble.id)
    return names


def _unresolved(writes: Iterable[str | int], index: P4InfoIndex) -> list[str | int]:
    names = _lookup(index)
    return [w for w in writes if w not in PRE_NAMES and w not in names]


def _resolve(role: Role, index: P4InfoIndex | None) -> RoleScope:
    pre = frozenset(w for w in role.writes if w in PRE_NAMES)
    if index is None:
        return RoleScope(False, frozenset(), pre, None)
    names = _lookup(index)
    ids = set()
    for item in role.writes:
        if item in PRE_NAMES:
            continue
        obj_id = names.get(item)
        if obj_id is None:
            log.warning("role '%s': '%s' names nothing in the loaded pipeline (ignored)",
                        role.name, item)
            continue
        ids.add(obj_id)
        table = index.tables.get(obj_id)
        if table is not None:           # a table brings its direct resources
            for resource in (table.direct_counter, table.direct_meter):
                if resource is not None:
                    ids.add(resource.preamble.id)
    return RoleScope(False, frozenset(ids), pre, index)
