"""``PacketReplicationEngineEntry``: multicast groups and clone sessions.

v1model's replication engine is BMv2's: a multicast group is a set of nodes, one node
per replication id (``instance``) listing its egress ports; a clone session sends to
one port or, for several replicas, to a multicast group. The server keeps each group
and session as written (Read returns them unchanged) together with the switch
objects that implement it, so MODIFY and DELETE can take them apart again.

Creating needs ``SwitchControl``'s ``mc_*``/``mirroring_*`` methods; taking apart (MODIFY,
DELETE, and undoing a failed ROLLBACK_ON_ERROR batch) uses its ``mc_node_dissociate``/
``mc_node_destroy``/``mc_mgrp_destroy``/``mirroring_delete`` (BMv2 runtime-CLI names).
A switch object without them (an older SwitchControl) gets UNIMPLEMENTED instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from p4.v1 import p4runtime_pb2

from softswitch.core.control import SwitchControl
from softswitch.p4runtime import bytestrings, errors
from softswitch.p4runtime.undo import UndoLog

Update = p4runtime_pb2.Update
# Clone sessions with several replicas use a hidden multicast group with this id base,
# outside the 16-bit range v1model's ``mcast_grp`` can name.
CLONE_GROUP_BASE = 1 << 31


@dataclass
class _Group:
    entry: p4runtime_pb2.MulticastGroupEntry
    nodes: list[int] = field(default_factory=list)


@dataclass
class _Session:
    entry: p4runtime_pb2.CloneSessionEntry
    group: _Group | None = None


class Replication:
    """Multicast groups and clone sessions of one loaded pipeline."""

    def __init__(self, switch: SwitchControl) -> None:
        self.switch = switch
        self._groups: dict[int, _Group] = {}
        self._sessions: dict[int, _Session] = {}

    def write(self, kind: int, entry: p4runtime_pb2.PacketReplicationEngineEntry,
              log: UndoLog) -> None:
        if log.atomic and not self._undoable():
            # Only a SwitchControl predating the take-apart methods lands here.
            raise errors.unimplemented("this switch cannot take replication entries apart, "
                                       "so they cannot be part of a ROLLBACK_ON_ERROR "
                                       "batch: send them with CONTINUE_ON_ERROR")
        which = entry.WhichOneof("type")
        if which == "multicast_group_entry":
            self._write_group(kind, entry.multicast_group_entry, log)
        elif which == "clone_session_entry":
            self._write_session(kind, entry.clone_session_entry, log)
        else:
            raise errors.invalid("Invalid PRE operation")

    # ------------------------------------------------------------------ multicast groups
    def _write_group(self, kind: int, entry: p4runtime_pb2.MulticastGroupEntry,
                     log: UndoLog) -> None:
        gid = entry.multicast_group_id
        _check_update(kind, "multicast group", gid, gid in self._groups)
        by_rid = _replicas_by_instance(entry.replicas) if kind != Update.DELETE else {}
        if kind != Update.INSERT:
            self._remove_group(self._groups[gid], log)
            old = self._groups.pop(gid)
            log.push(lambda: self._groups.__setitem__(gid, old))
        if kind != Update.DELETE:
            group = self._create_group(gid, by_rid, log)
            group.entry = _copy(entry)
            self._groups[gid] = group
            log.push(lambda: self._groups.pop(gid, None))

    def _create_group(self, gid: int, by_rid: dict[int, list[int]], log: UndoLog) -> _Group:
        self.switch.mc_mgrp_create(gid)
        log.push(lambda: self._call("mc_mgrp_destroy", gid))
        group = _Group(p4runtime_pb2.MulticastGroupEntry(multicast_group_id=gid))
        for rid, ports in by_rid.items():
            node = self.switch.mc_node_create(rid, ports)
            log.push(lambda node=node: self._call("mc_node_destroy", node))
            self.switch.mc_node_associate(gid, node)
            log.push(lambda node=node: self._call("mc_node_dissociate", gid, node))
            group.nodes.append(node)
        return group

    def _remove_group(self, group: _Group, log: UndoLog) -> None:
        """Take a group apart in the switch (the undo rebuilds it, with new handles)."""
        gid = group.entry.multicast_group_id
        for node in group.nodes:
            self._call("mc_node_dissociate", gid, node)
            self._call("mc_node_destroy", node)
        self._call("mc_mgrp_destroy", gid)
        by_rid = _replicas_by_instance(group.entry.replicas)

        def rebuild() -> None:
            rebuilt = self._create_group(gid, by_rid, UndoLog())
            group.nodes = rebuilt.nodes
        log.push(rebuild)

    def _undoable(self) -> bool:
        return all(hasattr(self.switch, m) for m in (
            "mc_node_dissociate", "mc_node_destroy", "mc_mgrp_destroy", "mirroring_delete"))

    def _call(self, method: str, *args: Any) -> None:
        fn: Callable[..., Any] | None = getattr(self.switch, method, None)
        if fn is None:
            raise errors.unimplemented(f"this switch cannot {method.replace('_', ' ')}: "
                                       "replication entries cannot be changed or deleted")
        fn(*args)

    # ------------------------------------------------------------------ clone sessions
    def _write_session(self, kind: int, entry: p4runtime_pb2.CloneSessionEntry,
                       log: UndoLog) -> None:
        sid = entry.session_id
        _check_update(kind, "clone session", sid, sid in self._sessions)
        if kind != Update.DELETE:
            if entry.packet_length_bytes:
                raise errors.unimplemented("clone session truncation (packet_length_bytes) "
                                           "is not supported")
            by_rid = _replicas_by_instance(entry.replicas)
        if kind != Update.INSERT:
            old = self._sessions.pop(sid)
            self._unmirror(old, log)
            log.push(lambda: self._sessions.__setitem__(sid, old))
        if kind != Update.DELETE:
            session = _Session(_copy(entry))
            self._mirror(session, by_rid, log)
            self._sessions[sid] = session
            log.push(lambda: self._sessions.pop(sid, None))

    def _mirror(self, session: _Session, by_rid: dict[int, list[int]], log: UndoLog) -> None:
        sid = session.entry.session_id
        ports = [p for ps in by_rid.values() for p in ps]
        cos = session.entry.class_of_service
        if len(ports) == 1:
            self.switch.mirroring_add(sid, ports[0], cos)
        elif ports:
            session.group = self._create_group(CLONE_GROUP_BASE + sid, by_rid, log)
            self.switch.mirroring_add_mc(sid, CLONE_GROUP_BASE + sid, cos)
        else:
            return
        log.push(lambda: self._call("mirroring_delete", sid))

    def _unmirror(self, session: _Session, log: UndoLog) -> None:
        sid = session.entry.session_id
        if not session.entry.replicas:
            return
        self._call("mirroring_delete", sid)
        if session.group is not None:
            self._remove_group(session.group, log)
        by_rid = _replicas_by_instance(session.entry.replicas)
        log.push(lambda: self._mirror(session, by_rid, UndoLog()))

    # ------------------------------------------------------------------ reads
    def read(self, req: p4runtime_pb2.PacketReplicationEngineEntry
             ) -> Iterator[p4runtime_pb2.Entity]:
        which = req.WhichOneof("type")
        if which in (None, "multicast_group_entry"):
            if req.multicast_group_entry.multicast_group_id >= FIRST_RESERVED_ID:
                raise errors.out_of_range("Group id value is too high")
            yield from _read_entries(self._groups, "multicast_group_entry",
                                     req.multicast_group_entry.multicast_group_id,
                                     "multicast group")
        if which in (None, "clone_session_entry"):
            yield from _read_entries(self._sessions, "clone_session_entry",
                                     req.clone_session_entry.session_id, "clone session")


def _read_entries(held: Mapping[int, _Group | _Session], oneof: str, wanted: int,
                  what: str) -> Iterator[p4runtime_pb2.Entity]:
    """The entries held (the one with id ``wanted`` when it is not 0), by id, as entities."""
    for key in sorted(held):
        if wanted and key != wanted:
            continue
        out = p4runtime_pb2.Entity()
        getattr(out.packet_replication_engine_entry, oneof).CopyFrom(held[key].entry)
        yield out
    if wanted and wanted not in held:
        raise errors.not_found(_WORDS[what][3])


# PI's words per kind: id 0, id at or past FIRST_RESERVED_ID, taken, missing.
_WORDS = {
    "multicast group": ("0 is not a valid group id", "Group id value is too high",
                        "Multicast group already exists", "Multicast group does not exist"),
    "clone session": ("0 is not a valid session id", "Clone session id out-of-range",
                      "Clone session id already exists", "Clone session id does not exist"),
}
# PI keeps ids from 2^15 up for the multicast groups behind clone sessions: a controller's
# multicast group and clone session ids are below (PI's codes: OUT_OF_RANGE for a group,
# INVALID_ARGUMENT for a session).
FIRST_RESERVED_ID = 1 << 15


def _check_update(kind: int, what: str, key: int, exists: bool) -> None:
    """Refuse an id of 0 or past PI's range, an INSERT of what exists, or a
    MODIFY/DELETE of what does not (PI's checks, order and words)."""
    words = _WORDS[what]
    if key == 0:
        raise errors.invalid(words[0])
    if key >= FIRST_RESERVED_ID and what == "multicast group":
        raise errors.out_of_range(words[1])
    if kind == Update.UNSPECIFIED:
        raise errors.invalid("Update type is not set")
    if kind not in (Update.INSERT, Update.MODIFY, Update.DELETE):
        raise errors.invalid("Invalid update type")
    if key >= FIRST_RESERVED_ID:
        raise errors.invalid(words[1])
    if kind == Update.INSERT and exists:
        raise errors.already_exists(words[2])
    if kind in (Update.MODIFY, Update.DELETE) and not exists:
        raise errors.not_found(words[3])


def _replicas_by_instance(replicas: Any) -> dict[int, list[int]]:
    """Replicas grouped into BMv2 nodes: one per instance (rid), ports in given order."""
    seen: set[tuple[int, int]] = set()
    by_rid: dict[int, list[int]] = {}
    for replica in replicas:
        port = _replica_port(replica)
        if (port, replica.instance) in seen:
            raise errors.invalid("Duplicate replica in multicast group")
        seen.add((port, replica.instance))
        by_rid.setdefault(replica.instance, []).append(port)
    return by_rid


def _replica_port(replica: p4runtime_pb2.Replica) -> int:
    """A replica's port, checked as PI checks it (its words; OUT_OF_RANGE for an empty
    string, as the spec says of byte strings; zero padding taken, as since 1.4)."""
    kind = replica.WhichOneof("port_kind")
    if kind is None:
        raise errors.invalid("Missing port in multicast group replica")
    if kind == "egress_port":
        return replica.egress_port
    if not replica.port:
        raise errors.out_of_range("Port must not be the empty string")
    port = bytestrings.decode(replica.port, 32, "replica port")
    if port == 0 or port >= 1 << 31:         # PI takes the port as a signed 32-bit int
        raise errors.invalid("Port must be non-negative.")
    return port


def _copy(msg: Any) -> Any:
    out = type(msg)()
    out.CopyFrom(msg)
    return out
