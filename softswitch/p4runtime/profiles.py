"""Action profiles over P4Runtime: members, groups, and the entries that use them.

An ``action_profile`` table's entries name a *member* (an action call shared by many
entries) instead of an action. softswitch's v1model target runs such tables with the
member's action stored in each entry, which behaves exactly like BMv2's indirection;
so the server keeps the members and, when a member changes, rewrites every entry
that uses it (within the same undo log, so a batch stays all-or-nothing).

Groups of an ``action_selector`` are kept and validated (members exist, weights,
``max_group_size``). An entry pointing to a group becomes a switch group entry
(``table_add_group``): the switch picks one member per packet, ``hash % n`` over the
group's member list as BMv2 does. That list is built the way PI builds a BMv2 group:
each member holds target member handles (the lowest free one per profile when it is
created, one more per unit of weight above 1 when a group first needs it; unlike PI
they are kept until the member goes), and BMv2 keeps a group's handles sorted, so
the n-th member is the n-th smallest handle. Group and member MODIFYs
rewrite every entry using them, in the same undo log.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from softswitch.core.control import SwitchControl
from softswitch.p4runtime import actions, errors
from softswitch.p4runtime.p4index import P4InfoIndex, TableIndex
from softswitch.p4runtime.undo import UndoLog

Update = p4runtime_pb2.Update


@dataclass(eq=False)
class ProfileMember:
    profile_id: int
    member_id: int
    call: actions.ActionCall
    users: dict[int, tuple[str, object]] = field(default_factory=dict)  # id → (table, rec)
    groups: set[int] = field(default_factory=set)
    handles: list[int] = field(default_factory=list)   # BMv2 member handles (see above)


@dataclass(eq=False)
class Group:
    """A selector group as written, and the table entries pointing to it."""

    msg: p4runtime_pb2.ActionProfileGroup
    users: dict[int, tuple[str, object]] = field(default_factory=dict)  # id → (table, rec)


_Held = TypeVar("_Held", ProfileMember, Group)


class ActionProfiles:
    """Members and groups of every action profile of one pipeline."""

    def __init__(self, switch: SwitchControl, index: P4InfoIndex) -> None:
        self.switch = switch
        self.index = index
        self._members: dict[tuple[int, int], ProfileMember] = {}
        self._groups: dict[tuple[int, int], Group] = {}
        self._handles: dict[int, set[int]] = {}     # profile id → member handles in use
        self._held: dict[int, int] = {}    # profile id → its members and groups, counted
        # Whether a profile's tables hold one-shot entries (set by the table entries)
        self.oneshot_in_use: Callable[[int], bool] = lambda profile_id: False

    def _profile(self, profile_id: int) -> p4info_pb2.ActionProfile:
        return self.index.get("action_profiles", profile_id)

    def _tables_of(self, profile: p4info_pb2.ActionProfile) -> list[TableIndex]:
        return [self.index.table(tid) for tid in profile.table_ids]

    # ------------------------------------------------------------------ members
    def write_member(self, kind: int, msg: p4runtime_pb2.ActionProfileMember,
                     log: UndoLog) -> None:
        profile = self._profile(msg.action_profile_id)
        _check_kind(kind)
        self._check_mode(msg.action_profile_id)
        key = (msg.action_profile_id, msg.member_id)
        member = self._members.get(key)
        name = profile.preamble.name
        if kind == Update.INSERT:
            call = self._call_for(profile, msg)          # PI's order: the action first
            if member is not None:
                raise errors.already_exists(f"Duplicate member id: {msg.member_id}")
            if profile.size and sum(1 for k in self._members if k[0] == key[0]) >= profile.size:
                raise errors.resource_exhausted(f"action profile '{name}' is full")
            new = ProfileMember(key[0], key[1], call)
            self._members[key] = new
            log.push(lambda: self._members.pop(key, None))
            self._held_count(key[0], 1, log)
            self._grow(new, 1, log)
            return
        if member is None:
            raise errors.not_found(f"Member id does not exist: {msg.member_id}")
        if kind == Update.MODIFY:
            self._modify_member(member, self._call_for(profile, msg), log)
        elif kind == Update.DELETE:
            if member.users or member.groups:
                raise errors.failed_precondition(
                    f"member {msg.member_id} of '{name}' is still used by "
                    f"{len(member.users)} table entries and {len(member.groups)} groups")
            del self._members[key]
            log.push(lambda: self._members.__setitem__(key, member))
            self._held_count(key[0], -1, log)
            used = self._handles.setdefault(key[0], set())
            used.difference_update(member.handles)
            log.push(lambda: used.update(member.handles))

    def _call_for(self, profile: p4info_pb2.ActionProfile,
                  msg: p4runtime_pb2.ActionProfileMember) -> actions.ActionCall:
        if not msg.HasField("action") or not msg.action.action_id:
            raise errors.invalid("Invalid P4 id")            # PI's words: action id 0
        tables = self._tables_of(profile)
        call = None
        for table in tables:     # valid for every table that shares the profile
            call = actions.parse(self.index, msg.action, table, profile=True)
        if call is None:
            call = actions.parse(self.index, msg.action)
        return call

    def _modify_member(self, member: ProfileMember, call: actions.ActionCall, log: UndoLog) -> None:
        old = member.call
        for table_name, record in member.users.values():
            handle = record.handle  # type: ignore[attr-defined]
            self.switch.table_modify(table_name, handle, call.name, call.args)
            log.push(lambda t=table_name, r=record: self.switch.table_modify(
                t, r.handle, old.name, old.args))  # type: ignore[attr-defined]
            record.call = call  # type: ignore[attr-defined]
            log.push(lambda r=record: setattr(r, "call", old))
        member.call = call
        log.push(lambda: setattr(member, "call", old))
        for gid in sorted(member.groups):
            self._refresh_users(self._groups[(member.profile_id, gid)], log)

    def _grow(self, member: ProfileMember, count: int, log: UndoLog) -> None:
        """Give a member at least ``count`` target handles, each the lowest free one of
        its profile (BMv2's handle allocator), as PI does for weights above 1."""
        used = self._handles.setdefault(member.profile_id, set())
        while len(member.handles) < count:
            handle = 0
            while handle in used:
                handle += 1
            used.add(handle)
            member.handles.append(handle)

            def release(h: int = handle) -> None:
                used.discard(h)
                member.handles.remove(h)
            log.push(release)

    def _check_mode(self, profile_id: int) -> None:
        """PI's one programming mode per profile in use: members and groups are refused
        while its tables hold one-shot entries (none are while it holds members)."""
        if not self.programmed_by_members(profile_id) and self.oneshot_in_use(profile_id):
            raise errors.invalid("Invalid attempt to mix action selector programming modes")

    def programmed_by_members(self, profile_id: int) -> bool:
        """Whether the profile holds members or groups (PI then refuses one-shot action
        sets in its tables: one programming mode per profile while it is in use)."""
        return self._held.get(profile_id, 0) > 0

    def _held_count(self, profile_id: int, delta: int, log: UndoLog) -> None:
        held = self._held
        held[profile_id] = held.get(profile_id, 0) + delta
        log.push(lambda: held.__setitem__(profile_id, held[profile_id] - delta))

    def member_call(self, table: TableIndex, member_id: int) -> ProfileMember:
        """The member a table entry points to (INVALID_ARGUMENT if there is none)."""
        return _held(self._members, table, member_id, "member")

    def _matching(self, held: dict[tuple[int, int], _Held], profile_id: int,
                  item_id: int) -> Iterator[tuple[tuple[int, int], _Held]]:
        """The members or groups held, by (profile, id), of a read's profile and id (0: any);
        an unknown profile is refused before any is given."""
        if profile_id:
            self._profile(profile_id)
        for key, item in sorted(held.items()):
            if (not profile_id or key[0] == profile_id) and (not item_id or key[1] == item_id):
                yield key, item

    def read_member(self, req: p4runtime_pb2.ActionProfileMember
                    ) -> Iterator[p4runtime_pb2.Entity]:
        for (pid, mid), member in self._matching(self._members, req.action_profile_id,
                                                 req.member_id):
            out = p4runtime_pb2.Entity()
            m = out.action_profile_member
            m.action_profile_id, m.member_id = pid, mid
            m.action.CopyFrom(member.call.canonical())
            yield out

    # ------------------------------------------------------------------ groups
    def write_group(self, kind: int, msg: p4runtime_pb2.ActionProfileGroup,
                    log: UndoLog) -> None:
        profile = self._profile(msg.action_profile_id)
        _check_kind(kind)
        self._check_mode(msg.action_profile_id)
        name = profile.preamble.name
        if not profile.with_selector:
            raise errors.invalid(f"action profile '{name}' has no selector: it has no groups")
        key = (msg.action_profile_id, msg.group_id)
        existing = self._groups.get(key)
        if kind == Update.INSERT:
            _check_max_size(profile, msg)
            if existing is not None:
                raise errors.already_exists(f"Duplicate group id: {msg.group_id}")
        elif existing is None:
            raise errors.not_found(f"Group id does not exist: {msg.group_id}")
        if kind == Update.DELETE:
            assert existing is not None
            if existing.users:
                raise errors.failed_precondition(
                    f"group {msg.group_id} of '{name}' is still used by "
                    f"{len(existing.users)} table entries")
            self._link(existing.msg, key, add=False)
            log.push(lambda: self._link(existing.msg, key, add=True))
            del self._groups[key]
            log.push(lambda: self._groups.__setitem__(key, existing))
            self._held_count(key[0], -1, log)
            return
        if existing is not None and msg.max_size and msg.max_size != existing.msg.max_size:
            raise errors.invalid("Cannot change group max_size after group creation")
        self._check_group(profile, msg, existing.msg.max_size if existing else msg.max_size)
        stored = p4runtime_pb2.ActionProfileGroup()
        stored.CopyFrom(msg)
        if existing is None:
            group = Group(stored)
            self._groups[key] = group
            log.push(lambda: self._groups.pop(key, None))
            self._held_count(key[0], 1, log)
            self._link(stored, key, add=True)
            log.push(lambda: self._link(stored, key, add=False))
            self.group_members(group, log)   # weight handles now, when PI makes them
            return
        old = existing.msg
        self._link(old, key, add=False)
        log.push(lambda: self._link(old, key, add=True))
        existing.msg = stored
        log.push(lambda: setattr(existing, "msg", old))
        self._link(stored, key, add=True)
        log.push(lambda: self._link(stored, key, add=False))
        self.group_members(existing, log)
        self._refresh_users(existing, log)

    def group_members(self, group: Group, log: UndoLog) -> list[tuple[str, list[int]]]:
        """What the switch runs for a group: one (action, args) per target member
        handle of its members (weight handles each), in BMv2's handle order."""
        pid = group.msg.action_profile_id
        slots: list[tuple[int, ProfileMember]] = []
        for m in group.msg.members:
            member = self._members[(pid, m.member_id)]
            weight = m.weight
            self._grow(member, weight, log)
            slots.extend((h, member) for h in member.handles[:weight])
        slots.sort(key=lambda slot: slot[0])
        return [(member.call.name, list(member.call.args)) for _, member in slots]

    def group_for(self, table: TableIndex, group_id: int) -> Group:
        """The group a table entry points to (INVALID_ARGUMENT if there is none)."""
        return _held(self._groups, table, group_id, "group")

    def _refresh_users(self, group: Group, log: UndoLog) -> None:
        """Give every entry pointing to ``group`` the group's current member list."""
        if not group.users:
            return
        members = self.group_members(group, log)
        for table_name, record in group.users.values():
            old = record.members  # type: ignore[attr-defined]
            self.switch.table_modify_group(table_name, record.handle,  # type: ignore[attr-defined]
                                           members)
            record.members = members  # type: ignore[attr-defined]

            def undo(t: str = table_name, r: object = record,
                     o: list[tuple[str, list[int]]] = old) -> None:
                self.switch.table_modify_group(t, r.handle, o)  # type: ignore[attr-defined]
                r.members = o  # type: ignore[attr-defined]
            log.push(undo)

    def _check_group(self, profile: p4info_pb2.ActionProfile,
                     msg: p4runtime_pb2.ActionProfileGroup, max_size: int) -> None:
        """A group's members, in PI's order and words: weights, their sum against the
        group's max_size (``max_size``, as created; 0: the profile's), each member."""
        if any(m.weight <= 0 for m in msg.members):
            raise errors.invalid("Member weight must be a positive integer value")
        limit = max_size or profile.max_group_size
        if limit and sum(m.weight for m in msg.members) > limit:
            raise errors.resource_exhausted("Sum of member weights exceeds maximum group size")
        seen: set[int] = set()
        for m in msg.members:
            if (msg.action_profile_id, m.member_id) not in self._members:
                raise errors.not_found(f"Member id does not exist: {m.member_id}")
            if m.member_id in seen:
                raise errors.invalid(f"Duplicate member id {m.member_id} for group "
                                     f"{msg.group_id}, use weights instead")
            seen.add(m.member_id)

    def _link(self, group: p4runtime_pb2.ActionProfileGroup, key: tuple[int, int],
              add: bool) -> None:
        for m in group.members:
            member = self._members.get((key[0], m.member_id))
            if member is not None:
                (member.groups.add if add else member.groups.discard)(key[1])

    def read_group(self, req: p4runtime_pb2.ActionProfileGroup
                   ) -> Iterator[p4runtime_pb2.Entity]:
        for _, group in self._matching(self._groups, req.action_profile_id, req.group_id):
            out = p4runtime_pb2.Entity()
            out.action_profile_group.CopyFrom(group.msg)
            yield out


def _held(held: dict[tuple[int, int], _Held], table: TableIndex, item_id: int,
          what: str) -> _Held:
    """The member or group ``item_id`` of the table's profile (INVALID_ARGUMENT if none)."""
    item = held.get((table.info.implementation_id, item_id))
    if item is None:
        raise errors.invalid("Invalid member / group id")
    return item


def _check_kind(kind: int) -> None:
    """PI's words for an update type other than INSERT, MODIFY and DELETE."""
    if kind == Update.UNSPECIFIED:
        raise errors.invalid("Update type is not set")
    if kind not in (Update.INSERT, Update.MODIFY, Update.DELETE):
        raise errors.invalid("Invalid update type")


def _check_max_size(profile: p4info_pb2.ActionProfile,
                    msg: p4runtime_pb2.ActionProfileGroup) -> None:
    """A new group's max_size against the profile's (PI's checks and words)."""
    if msg.max_size < 0:
        raise errors.invalid("Group max_size cannot be less than 0")
    if profile.max_group_size and msg.max_size > profile.max_group_size:
        raise errors.invalid("Group max_size cannot exceed static max_group_size "
                             "(from P4Info)")
