"""Client arbitration: election ids, roles, primary and backup controllers.

P4Runtime lets several controllers connect; per (device, role) the stream with the
highest election id is the *primary* and only it may write. This module keeps the
streams of each role, decides who is primary after every change and tells the
controllers, as the specification's arbitration section and PI do:

* the primary gets status ``OK``; a backup gets ``ALREADY_EXISTS`` while a primary
  exists and ``NOT_FOUND`` when there is none; the update's ``election_id`` is the
  primary's, or the highest id ever seen for the role when there is no primary;
* everyone in the role is told when the primary changes; a newcomer that does not
  change it is told alone;
* two streams may not share an election id (``INVALID_ARGUMENT``); a stream that
  sends no election id is a backup that can never become primary;
* roles are the server's (:mod:`roles`, ``--role-config``): an unknown role name is
  ``NOT_FOUND``, on the stream and on every request; a ``role.config`` sent by a
  client is ``INVALID_ARGUMENT`` (the definitions are out-of-band, in that file); a
  stream that changes its role or device id is ``FAILED_PRECONDITION``;
* a Write/SetForwardingPipelineConfig must carry the election id of its role's
  primary (``PERMISSION_DENIED`` otherwise). Only while no controller at all has a
  stream open to the device, in any role, is a request *without* election id
  accepted: PI's allowance for grpc_cli-style debugging, which ``simple_switch_grpc``
  users rely on (with roles, so nobody writes under a controller's feet).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from softswitch.p4runtime import errors
from softswitch.p4runtime.roles import Role, RoleTable

Sender = Callable[[p4runtime_pb2.StreamMessageResponse], None]
_ids = itertools.count(1)


def election_id_of(msg: p4runtime_pb2.MasterArbitrationUpdate
                   | p4runtime_pb2.WriteRequest
                   | p4runtime_pb2.SetForwardingPipelineConfigRequest) -> int | None:
    """The 128-bit election id of a message, or None when the field is unset."""
    if not msg.HasField("election_id"):
        return None
    return (msg.election_id.high << 64) | msg.election_id.low


def role_name(role: p4runtime_pb2.Role | None = None, name: str = "", role_id: int = 0) -> str:
    """The role a request speaks for: the 1.4 role name, or the deprecated numeric id."""
    if role is not None:
        name, role_id = role.name, role.id
    if name:
        return name
    return f"#{role_id}" if role_id else ""


@dataclass(eq=False)
class Connection:
    """One StreamChannel; ``send`` queues a message to its client."""

    send: Sender
    id: int = field(default_factory=lambda: next(_ids))
    backlog: Callable[[], int] = lambda: 0   # messages queued, not yet sent
    role: str | None = None          # None until the first arbitration update
    election_id: int | None = None


@dataclass
class _Role:
    connections: list[Connection] = field(default_factory=list)
    highest: int | None = None

    def primary(self) -> Connection | None:
        best: Connection | None = None
        for conn in self.connections:
            if conn.election_id is None:
                continue
            if best is None or conn.election_id > best.election_id:  # type: ignore[operator]
                best = conn
        return best


class Arbiter:
    """The arbitration state of one device (thread-safe)."""

    def __init__(self, device_id: int, roles: RoleTable | None = None) -> None:
        self.device_id = device_id
        self.roles = roles if roles is not None else RoleTable()
        self._lock = threading.Lock()
        self._roles: dict[str, _Role] = {}
        # The default role's primary's election id (None: no primary), kept as the
        # streams come and go: a Write's small-batch shortcut (write.Writes) reads it without the
        # lock, as check_writer's callers use what it answered after releasing it.
        self.default_election: int | None = None

    # ------------------------------------------------------------------ stream events
    def arbitrate(self, conn: Connection, update: p4runtime_pb2.MasterArbitrationUpdate) -> None:
        """Handle a MasterArbitrationUpdate; raises P4RuntimeError to end the stream."""
        role = role_name(update.role) if update.HasField("role") else ""
        if update.device_id != self.device_id:
            if conn.role is not None:
                raise errors.failed_precondition("Invalid device id")
            raise errors.not_found(f"unknown device id {update.device_id} "
                                   f"(this switch is device {self.device_id})")
        if conn.role is not None and conn.role != role:
            raise errors.failed_precondition(
                f"stream is already arbitrating for role '{conn.role}', "
                f"cannot switch to role '{role}'")
        self.roles.get(role)                       # NOT_FOUND for an unknown role
        if update.role.config.type_url or update.role.config.value:
            raise errors.invalid("role.config is not accepted: softswitch's roles are "
                                 "defined by its --role-config file; leave role.config "
                                 "unset")
        election_id = election_id_of(update)
        with self._lock:
            state = self._roles.setdefault(role, _Role())
            if election_id is not None and any(
                    c is not conn and c.election_id == election_id for c in state.connections):
                raise errors.invalid("New election id already exists"
                                     if conn in state.connections
                                     else "Election id already exists")
            before = state.primary()
            if conn not in state.connections:
                state.connections.append(conn)
            conn.role = role
            conn.election_id = election_id
            if election_id is not None and (state.highest is None or election_id > state.highest):
                state.highest = election_id
            if state.primary() is not before:
                self._notify_all(role, state)
            else:
                self._notify(role, state, conn)
            self._remember_default()

    def disconnect(self, conn: Connection) -> None:
        """Forget a closed stream; if it was primary, tell the others."""
        with self._lock:
            if conn.role is None:
                return
            state = self._roles.get(conn.role)
            if state is None or conn not in state.connections:
                return
            was_primary = state.primary() is conn
            state.connections.remove(conn)
            if was_primary:
                self._notify_all(conn.role, state)
            self._remember_default()

    def _remember_default(self) -> None:
        """Update ``default_election`` (the lock held)."""
        state = self._roles.get("")
        primary = state.primary() if state is not None else None
        self.default_election = None if primary is None else primary.election_id

    # ------------------------------------------------------------------ queries
    def primary(self, role: str = "") -> Connection | None:
        with self._lock:
            state = self._roles.get(role)
            return state.primary() if state else None

    def primaries(self, wants: Callable[[Role], bool] | None = None) -> list[Connection]:
        """The primary of every role (whose role ``wants`` the message, if given):
        PacketIns, digests and idle-timeout notifications go to them."""
        with self._lock:
            found = [(name, state.primary()) for name, state in self._roles.items()]
        out = []
        for name, conn in found:
            if conn is None:
                continue
            role = self.roles.roles.get(name)
            if role is not None and (wants is None or wants(role)):
                out.append(conn)
        return out

    def is_primary(self, conn: Connection) -> bool:
        with self._lock:
            state = self._roles.get(conn.role or "")
            return state is not None and conn.role is not None and state.primary() is conn

    def check_writer(self, role: str, election_id: int | None) -> Role:
        """The writer's role, once the request is known to come from its primary:
        NOT_FOUND for an unknown role, PERMISSION_DENIED for anyone but the primary
        (a request without election id passes only while no role has a primary)."""
        known = self.roles.get(role)
        with self._lock:
            state = self._roles.get(role)
            primary = state.primary() if state is not None else None
            if primary is None:
                if election_id is None:
                    if not any(other.connections for other in self._roles.values()):
                        return known
                    # (PI's words for every refusal of a writer)
                    raise errors.permission_denied("Not primary")
                raise errors.permission_denied("Not primary")
            if election_id != primary.election_id:
                raise errors.permission_denied("Not primary")
        return known

    def role_of(self, conn: Connection) -> Role | None:
        """The configured role of a stream that has arbitrated."""
        return None if conn.role is None else self.roles.roles.get(conn.role)

    # ------------------------------------------------------------------ notifications
    def _notify_all(self, role: str, state: _Role) -> None:
        for conn in state.connections:
            self._notify(role, state, conn)

    def _notify(self, role: str, state: _Role, conn: Connection) -> None:
        primary = state.primary()
        update = p4runtime_pb2.MasterArbitrationUpdate(device_id=self.device_id)
        if role:
            update.role.name = role
        shown = primary.election_id if primary is not None else state.highest
        if shown is not None:
            update.election_id.high = shown >> 64
            update.election_id.low = shown & ((1 << 64) - 1)
        if primary is conn:
            update.status.CopyFrom(status_pb2.Status(code=code_pb2.OK, message="Is primary"))
        elif primary is not None:
            update.status.CopyFrom(status_pb2.Status(code=code_pb2.ALREADY_EXISTS,
                                                     message="Is backup"))
        else:
            update.status.CopyFrom(status_pb2.Status(code=code_pb2.NOT_FOUND,
                                                     message="No primary"))
        conn.send(p4runtime_pb2.StreamMessageResponse(arbitration=update))
