"""The ``standard`` service's action-profile calls: members, groups, indirect entries.

They run on the runtime channel's :class:`~softswitch.daemon.cli_channel.action_profiles.
ActionProfileControl` (P4Runtime writes, handles as BMv2 gives them); a refusal gets
BMv2's code for the same reason (``INVALID_MBR_HANDLE``, ``MBR_STILL_USED``,
``MBR_ALREADY_IN_GRP``, ``GRP_STILL_USED`` …). A default member or group of an indirect
table is refused: P4Runtime (PI) has no default entry for such tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bm_runtime.standard import ttypes as std

from softswitch.daemon.cli_channel.action_profiles import refusal_code
from softswitch.daemon.thrift.base import Service
from softswitch.daemon.thrift.values import data_bytes, keys_of, priority, to_int
from softswitch.diagnostics import P4Error

Code = std.TableOperationErrorCode


def _refused(**by_code: str) -> Callable[[Exception], Exception]:
    """BMv2's exception for a refusal: the BMv2 code it names, else ``by_code`` of the
    P4Runtime code it carries, else ``ERROR``."""
    def error(err: Exception) -> Exception:
        code = refusal_code(err)
        name = code if code in Code._NAMES_TO_VALUES else by_code.get(code or "", "ERROR")
        return std.InvalidTableOperation(Code._NAMES_TO_VALUES[name])
    return error


def _profiles(control: Any) -> Any:
    profiles = getattr(control, "profiles", None)
    if profiles is None:
        raise P4Error("this switch's action profiles are P4Runtime's only")
    return profiles


class ProfileCalls(Service):
    """``bm_mt_act_prof_*`` and ``bm_mt_indirect_*``."""

    # --- members
    def bm_mt_act_prof_add_member(self, cxt_id: int, act_prof_name: str, action_name: str,
                                  action_data: list[bytes]) -> int:
        return self._run(lambda c: _profiles(c).member_add(
            act_prof_name, action_name, [to_int(d) for d in action_data]),
            _refused(RESOURCE_EXHAUSTED="TABLE_FULL"))

    def bm_mt_act_prof_modify_member(self, cxt_id: int, act_prof_name: str, mbr_handle: int,
                                     action_name: str, action_data: list[bytes]) -> None:
        self._run(lambda c: _profiles(c).member_modify(
            act_prof_name, mbr_handle, action_name, [to_int(d) for d in action_data]),
            _refused(NOT_FOUND="INVALID_MBR_HANDLE"))

    def bm_mt_act_prof_delete_member(self, cxt_id: int, act_prof_name: str,
                                     mbr_handle: int) -> None:
        self._run(lambda c: _profiles(c).member_delete(act_prof_name, mbr_handle),
                  _refused(NOT_FOUND="INVALID_MBR_HANDLE", FAILED_PRECONDITION="MBR_STILL_USED"))

    def bm_mt_act_prof_get_members(self, cxt_id: int, act_prof_name: str) -> list[Any]:
        return self._run(lambda c: [_member(h, m) for h, m in sorted(
            _profiles(c).members(act_prof_name).items())], _refused())

    def bm_mt_act_prof_get_member(self, cxt_id: int, act_prof_name: str,
                                  mbr_handle: int) -> Any:
        def get(control: Any) -> Any:
            member = _profiles(control).members(act_prof_name).get(mbr_handle)
            if member is None:
                raise P4Error(f"{act_prof_name} has no member {mbr_handle}")
            return _member(mbr_handle, member)
        return self._run(get, _refused(ERROR="INVALID_MBR_HANDLE"))

    # --- groups
    def bm_mt_act_prof_create_group(self, cxt_id: int, act_prof_name: str) -> int:
        return self._run(lambda c: _profiles(c).group_create(act_prof_name),
                         _refused(RESOURCE_EXHAUSTED="TABLE_FULL"))

    def bm_mt_act_prof_delete_group(self, cxt_id: int, act_prof_name: str,
                                    grp_handle: int) -> None:
        self._run(lambda c: _profiles(c).group_delete(act_prof_name, grp_handle),
                  _refused(NOT_FOUND="INVALID_GRP_HANDLE", FAILED_PRECONDITION="GRP_STILL_USED"))

    def bm_mt_act_prof_add_member_to_group(self, cxt_id: int, act_prof_name: str,
                                           mbr_handle: int, grp_handle: int) -> None:
        self._run(lambda c: _profiles(c).group_add_member(act_prof_name, mbr_handle,
                                                          grp_handle), _refused())

    def bm_mt_act_prof_remove_member_from_group(self, cxt_id: int, act_prof_name: str,
                                                mbr_handle: int, grp_handle: int) -> None:
        self._run(lambda c: _profiles(c).group_remove_member(act_prof_name, mbr_handle,
                                                             grp_handle), _refused())

    def bm_mt_act_prof_get_groups(self, cxt_id: int, act_prof_name: str) -> list[Any]:
        return self._run(lambda c: [std.BmMtActProfGroup(grp_handle=h, mbr_handles=sorted(m))
                                    for h, m in sorted(_profiles(c).groups(
                                        act_prof_name).items())], _refused())

    def bm_mt_act_prof_get_group(self, cxt_id: int, act_prof_name: str,
                                 grp_handle: int) -> Any:
        def get(control: Any) -> Any:
            members = _profiles(control).groups(act_prof_name).get(grp_handle)
            if members is None:
                raise P4Error(f"{act_prof_name} has no group {grp_handle}")
            return std.BmMtActProfGroup(grp_handle=grp_handle, mbr_handles=sorted(members))
        return self._run(get, _refused(ERROR="INVALID_GRP_HANDLE"))

    # --- entries of indirect tables
    def _indirect_add(self, table_name: str, match_key: list[Any], handle: int, group: bool,
                      options: Any) -> int:
        def add(control: Any) -> int:
            table = control.table_info(table_name)
            return int(_profiles(control).entry_add(
                table.name, keys_of(table, match_key), handle, group, priority(table, options)))
        missing = "INVALID_GRP_HANDLE" if group else "INVALID_MBR_HANDLE"
        return self._run(add, _refused(ALREADY_EXISTS="DUPLICATE_ENTRY", NOT_FOUND=missing,
                                       INVALID_ARGUMENT=missing,
                                       RESOURCE_EXHAUSTED="TABLE_FULL"))

    def bm_mt_indirect_add_entry(self, cxt_id: int, table_name: str, match_key: list[Any],
                                 mbr_handle: int, options: Any) -> int:
        return self._indirect_add(table_name, match_key, mbr_handle, False, options)

    def bm_mt_indirect_ws_add_entry(self, cxt_id: int, table_name: str, match_key: list[Any],
                                    grp_handle: int, options: Any) -> int:
        return self._indirect_add(table_name, match_key, grp_handle, True, options)

    def _indirect_modify(self, table_name: str, entry_handle: int, handle: int,
                         group: bool) -> None:
        self._run(lambda c: _profiles(c).entry_modify(
            c.table_info(table_name).name, entry_handle, handle, group),
            _refused(NOT_FOUND="INVALID_HANDLE", INVALID_ARGUMENT="INVALID_GRP_HANDLE"
                     if group else "INVALID_MBR_HANDLE"))

    def bm_mt_indirect_modify_entry(self, cxt_id: int, table_name: str, entry_handle: int,
                                    mbr_handle: int) -> None:
        self._indirect_modify(table_name, entry_handle, mbr_handle, False)

    def bm_mt_indirect_ws_modify_entry(self, cxt_id: int, table_name: str, entry_handle: int,
                                       grp_handle: int) -> None:
        self._indirect_modify(table_name, entry_handle, grp_handle, True)

    def bm_mt_indirect_delete_entry(self, cxt_id: int, table_name: str,
                                    entry_handle: int) -> None:
        self._run(lambda c: c.table_delete(c.table_info(table_name).name, entry_handle),
                  _refused(ERROR="INVALID_HANDLE", NOT_FOUND="INVALID_HANDLE"))


def _member(handle: int, member: tuple[str, list[int]]) -> Any:
    action, args = member
    return std.BmMtActProfMember(mbr_handle=handle, action_name=action,
                                 action_data=[data_bytes(a) for a in args])


def indirect_action(control: Any, table: str, handle: int) -> Any | None:
    """The ``BmActionEntry`` of an indirect table's entry (its member or group), or None
    for an entry with an action of its own."""
    profiles = getattr(control, "profiles", None)
    target = profiles.entry_target(table, handle) if profiles is not None else None
    if target is None:
        return None
    kind, h = target
    if kind == "group":
        return std.BmActionEntry(action_type=std.BmActionEntryType.GRP_HANDLE, grp_handle=h)
    return std.BmActionEntry(action_type=std.BmActionEntryType.MBR_HANDLE, mbr_handle=h)


def indirect_table(control: Any, table: str) -> bool:
    profiles = getattr(control, "profiles", None)
    return profiles is not None and profiles.profile_of(table) is not None
