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
* with no stream at all, a request without election id is accepted (PI does this
  for grpc_cli-style debugging; ``simple_switch_grpc`` users rely on it).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from softswitch.p4runtime import errors

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

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._lock = threading.Lock()
        self._roles: dict[str, _Role] = {}

    # ------------------------------------------------------------------ stream events
    def arbitrate(self, conn: Connection, update: p4runtime_pb2.MasterArbitrationUpdate) -> None:
        """Handle a MasterArbitrationUpdate; raises P4RuntimeError to end the stream."""
        if update.device_id != self.device_id:
            raise errors.not_found(f"unknown device id {update.device_id} "
                                   f"(this switch is device {self.device_id})")
        role = role_name(update.role) if update.HasField("role") else ""
        election_id = election_id_of(update)
        with self._lock:
            if conn.role is not None and conn.role != role:
                raise errors.failed_precondition(
                    f"stream is already arbitrating for role '{conn.role}', "
                    f"cannot switch to role '{role}'")
            state = self._roles.setdefault(role, _Role())
            if election_id is not None and any(
                    c is not conn and c.election_id == election_id for c in state.connections):
                raise errors.invalid(f"election id {election_id} is already used by "
                                     "another controller")
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

    # ------------------------------------------------------------------ queries
    def primary(self, role: str = "") -> Connection | None:
        with self._lock:
            state = self._roles.get(role)
            return state.primary() if state else None

    def primaries(self) -> list[Connection]:
        """The primary of every role (PacketIn and digests go to them)."""
        with self._lock:
            found = (state.primary() for state in self._roles.values())
            return [conn for conn in found if conn is not None]

    def is_primary(self, conn: Connection) -> bool:
        with self._lock:
            state = self._roles.get(conn.role or "")
            return state is not None and conn.role is not None and state.primary() is conn

    def check_writer(self, role: str, election_id: int | None) -> None:
        """Raise PERMISSION_DENIED unless a request with this election id may write."""
        with self._lock:
            state = self._roles.get(role)
            if state is None or not state.connections:
                if election_id is None:
                    return
                raise errors.permission_denied("Not primary: no controller has arbitrated "
                                               f"for role '{role}'")
            primary = state.primary()
            if primary is None or election_id != primary.election_id:
                raise errors.permission_denied(
                    f"Not primary: election id {election_id} is not the primary's "
                    f"for role '{role}'")

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
