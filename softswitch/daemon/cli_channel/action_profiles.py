"""Action profiles and selectors for BMv2's runtime API, as P4Runtime writes.

BMv2 names a member or a group by a handle it picks itself, the lowest free one of its
profile; P4Runtime names them by ids the controller picks. Here a handle ``h`` is the
P4Runtime id ``h + 1`` (P4Runtime reads treat id 0 as "all"), and a new member or group
gets the lowest free handle, so a profile written only through this module holds the
handles BMv2 would give (and softswitch's selector orders a group's members by them as
BMv2 does). A member or group a P4Runtime controller wrote shows as its id less one.

BMv2 grows a group member by member; P4Runtime writes a group whole: each change of
membership is one MODIFY of the group. Entries of indirect tables name a member or a
group (``action_profile_member_id``/``action_profile_group_id``). Every change goes
through the loaded pipeline's P4Runtime checks, so P4Runtime Read sees it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from p4.v1 import p4runtime_pb2

from softswitch.core.control import KeyMatch
from softswitch.diagnostics import P4Error
from softswitch.p4runtime import actions, matches
from softswitch.p4runtime.runtime import PipelineRuntime

Update = p4runtime_pb2.Update
Entity = p4runtime_pb2.Entity


class ProfileRefused(P4Error):
    """A change BMv2 refuses with a code of its own (``MBR_ALREADY_IN_GRP`` …)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class ActionProfileControl:
    """Members, groups and indirect table entries of one loaded pipeline."""

    def __init__(self, runtime: PipelineRuntime,
                 write: Callable[[int, p4runtime_pb2.Entity], None],
                 table_index: Callable[[str], Any], record: Callable[[str, int], Any]) -> None:
        self._runtime = runtime
        self._write = write
        self._table_index = table_index
        self._record = record

    # ------------------------------------------------------------------ members
    def members(self, profile: str) -> dict[int, tuple[str, list[int]]]:
        """Handle → (action name, arguments) of each member."""
        pid = self._profile(profile).preamble.id
        read = self._runtime.read([Entity(action_profile_member=p4runtime_pb2.ActionProfileMember(
            action_profile_id=pid))])
        index = self._runtime.index
        out = {}
        for entity in read:
            m = entity.action_profile_member
            name = index.get("actions", m.action.action_id).preamble.name
            out[m.member_id - 1] = (name, [int.from_bytes(p.value, "big")
                                           for p in m.action.params])
        return out

    def member_add(self, profile: str, action: str, args: list[int]) -> int:
        handle = _lowest_free(self.members(profile))
        self._write(Update.INSERT, self._member(profile, handle, action, args))
        return handle

    def member_modify(self, profile: str, handle: int, action: str, args: list[int]) -> None:
        self._write(Update.MODIFY, self._member(profile, handle, action, args))

    def member_delete(self, profile: str, handle: int) -> None:
        member = p4runtime_pb2.ActionProfileMember(
            action_profile_id=self._profile(profile).preamble.id, member_id=handle + 1)
        self._write(Update.DELETE, Entity(action_profile_member=member))

    def _member(self, profile: str, handle: int, action: str, args: list[int]) -> Entity:
        member = p4runtime_pb2.ActionProfileMember(
            action_profile_id=self._profile(profile).preamble.id, member_id=handle + 1)
        member.action.CopyFrom(actions.build(self._runtime.index, action, args))
        return Entity(action_profile_member=member)

    # ------------------------------------------------------------------ groups
    def groups(self, profile: str) -> dict[int, list[int]]:
        """Handle → the member handles of each group, in the order they were added."""
        return {handle: [m.member_id - 1 for m in group.members]
                for handle, group in self._groups(profile).items()}

    def group_create(self, profile: str) -> int:
        handle = _lowest_free(self._groups(profile))
        group = p4runtime_pb2.ActionProfileGroup(
            action_profile_id=self._profile(profile).preamble.id, group_id=handle + 1)
        self._write(Update.INSERT, Entity(action_profile_group=group))
        return handle

    def group_delete(self, profile: str, handle: int) -> None:
        group = p4runtime_pb2.ActionProfileGroup(
            action_profile_id=self._profile(profile).preamble.id, group_id=handle + 1)
        self._write(Update.DELETE, Entity(action_profile_group=group))

    def group_add_member(self, profile: str, member: int, group: int) -> None:
        written = self._group(profile, group)
        if member not in self.members(profile):
            raise ProfileRefused("INVALID_MBR_HANDLE", f"{profile} has no member {member}")
        if any(m.member_id == member + 1 for m in written.members):
            raise ProfileRefused("MBR_ALREADY_IN_GRP",
                                 f"member {member} is already in group {group}")
        written.members.add(member_id=member + 1, weight=1)
        self._write(Update.MODIFY, Entity(action_profile_group=written))

    def group_remove_member(self, profile: str, member: int, group: int) -> None:
        written = self._group(profile, group)
        kept = [m for m in written.members if m.member_id != member + 1]
        if len(kept) == len(written.members):
            raise ProfileRefused("MBR_NOT_IN_GRP", f"member {member} is not in group {group}")
        del written.members[:]
        written.members.extend(kept)
        self._write(Update.MODIFY, Entity(action_profile_group=written))

    def _groups(self, profile: str) -> dict[int, p4runtime_pb2.ActionProfileGroup]:
        info = self._profile(profile)
        if not info.with_selector:
            return {}
        read = self._runtime.read([Entity(action_profile_group=p4runtime_pb2.ActionProfileGroup(
            action_profile_id=info.preamble.id))])
        return {e.action_profile_group.group_id - 1: e.action_profile_group for e in read}

    def _group(self, profile: str, handle: int) -> p4runtime_pb2.ActionProfileGroup:
        group = self._groups(profile).get(handle)
        if group is None:
            raise ProfileRefused("INVALID_GRP_HANDLE", f"{profile} has no group {handle}")
        return group

    # ------------------------------------------------------------------ table entries
    def entry_add(self, table: str, keys: list[KeyMatch], handle: int, group: bool,
                  priority: int | None) -> int:
        """An entry of an indirect table naming member (or group) ``handle``; its entry
        handle."""
        index = self._table_index(table)
        entry = p4runtime_pb2.TableEntry(table_id=index.info.preamble.id,
                                         priority=(priority or 0) if index.needs_priority
                                         else 0)
        entry.match.extend(matches.from_switch(index, keys))
        _point(entry, handle, group)
        self._write(Update.INSERT, Entity(table_entry=entry))
        return int(self._runtime.tables.record_for(entry)[1].handle)

    def entry_modify(self, table: str, entry_handle: int, handle: int, group: bool) -> None:
        index = self._table_index(table)
        entry = p4runtime_pb2.TableEntry()
        entry.CopyFrom(self._runtime.tables.canonical(index, self._record(table, entry_handle)))
        entry.action.Clear()
        _point(entry, handle, group)
        self._write(Update.MODIFY, Entity(table_entry=entry))

    def entry_target(self, table: str, entry_handle: int) -> tuple[str, int] | None:
        """("member" or "group", its handle) an indirect table's entry names; None for a
        table entry with an action of its own."""
        index = self._table_index(table)
        action = self._runtime.tables.canonical(index, self._record(table, entry_handle)).action
        which = action.WhichOneof("type")
        if which == "action_profile_member_id":
            return "member", action.action_profile_member_id - 1
        if which == "action_profile_group_id":
            return "group", action.action_profile_group_id - 1
        return None

    def profile_of(self, table: str) -> str | None:
        """The name of the action profile that implements ``table``, if any."""
        tid = self._table_index(table).info.preamble.id
        for info in self._runtime.index.all("action_profiles"):
            if tid in info.table_ids:
                return str(info.preamble.name)
        return None

    def _profile(self, name: str) -> Any:
        for info in self._runtime.index.all("action_profiles"):
            if name in (info.preamble.name, info.preamble.alias):
                return info
        raise ProfileRefused("INVALID_ACTION_PROFILE_NAME",
                             f"'{name}' is not an action profile of the loaded pipeline")


def _point(entry: p4runtime_pb2.TableEntry, handle: int, group: bool) -> None:
    if group:
        entry.action.action_profile_group_id = handle + 1
    else:
        entry.action.action_profile_member_id = handle + 1


def _lowest_free(held: dict[int, Any]) -> int:
    handle = 0
    while handle in held:
        handle += 1
    return handle


def refusal_code(err: Exception) -> str | None:
    """The BMv2 code a refusal names (``ProfileRefused``), or the gRPC code's name of a
    P4Runtime refusal (``Refused``), else None."""
    code = getattr(err, "code", None)
    return code if isinstance(code, str) else None

