"""Table entries (including default entries) over P4Runtime.

The server keeps, per table, the canonical form of every entry it holds and the
switch handle behind it: P4Runtime names entries by match key + priority while the
switch names them by handle, and Read must return entries exactly as written. Entries
the program itself installs (``const entries`` / ``entries``) are imported when the
pipeline loads so that they can be read like any other.

Each kind of entry has one insert, one modify and one delete: a direct action
(``_insert_direct``/``_modify_direct``), an action profile's member, group or one-shot
set (``_insert_profile``/``_modify_profile``), the default entry (MODIFY only,
``_write_default``), one ``_delete`` for all; a const table's entries are refused. Two
ways reach them: :meth:`write` for a parsed entry (every check, every error), and
:meth:`write_plain` for a direct-action entry decoded and checked from the wire, which
declines what it does not take, with nothing changed, to :meth:`write`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from softswitch.core.control import EntryView, KeyMatch, SwitchControl
from softswitch.diagnostics import P4Error
from softswitch.memory import reclaim
from softswitch.p4runtime import actions, encoding, entrywire, errors, matches
from softswitch.p4runtime.actions import ActionCall
from softswitch.p4runtime.entryplan import TablePlan
from softswitch.p4runtime.entrywire import CHECKED_LEN, Checked, Decoded
from softswitch.p4runtime.meters import MeterDriver
from softswitch.p4runtime.p4index import P4InfoIndex, TableIndex
from softswitch.p4runtime.profiles import ActionProfiles, Group, ProfileMember
from softswitch.p4runtime.undo import UndoLog

Update = p4runtime_pb2.Update
TableEntry = p4runtime_pb2.TableEntry
_log = logging.getLogger("softswitch.p4runtime")


@dataclass(slots=True)
class Record:
    """One entry the switch holds: its handle and its P4Runtime form as written.

    The entry is kept serialized (``stored``) and parsed when needed: a parsed
    TableEntry costs many times its encoding, even on protobuf's upb runtime, and what
    the hot paths need (priority, idle timeout) has its own field."""

    handle: int
    stored: bytes
    switch_keys: list[KeyMatch] | None   # None: added by a plain write (see ``match``)
    call: actions.ActionCall | None  # the action; None for a group or one-shot entry
    from_program: bool = False
    key: matches.MatchKey = ((), 0)
    wire: bytes | None = None      # the serialized Entity, cached for Read
    idle_notified: bool = False    # an idle-timeout notification went out (see idle.py)
    member: ProfileMember | None = None   # the action profile member the entry points to
    group: Group | None = None     # the selector group the entry points to
    oneshot: list[actions.ActionCall] | None = None   # a one-shot action set's actions
    # What the switch picks from per packet (group and one-shot entries), else None
    members: list[tuple[str, list[int]]] | None = None
    idle_timeout_ns: int = 0
    # The switch's normalised match of an entry added by a plain write (entryplan),
    # which keeps no KeyMatch list: what re-adding it after an undone DELETE needs.
    match: tuple[Any, ...] | None = None
    # ``stored`` has entrywire's plain shape and no metadata fields: Read builds the
    # canonical encoding straight from ``key`` and ``call`` (see ``_plain_wire``).
    plain: bool = False

    @property
    def entry(self) -> TableEntry:
        """The entry as written (a fresh message each time: changes are not kept)."""
        return TableEntry.FromString(self.stored)

    @property
    def priority(self) -> int:
        return self.key[1]

    def store(self, entry: TableEntry) -> None:
        self.stored = entry.SerializeToString()
        self.idle_timeout_ns = entry.idle_timeout_ns


class _PlainTable:
    """A planned table as its plain writes use it: the plan, the switch's bound
    operations (``checked_ops``), the entry store, the plan's action routes."""

    __slots__ = ("plan", "ops", "records", "timed", "routes", "size", "meterless", "state",
                 "native_routes")

    def __init__(self, plan: TablePlan, ops: Any, records: dict[matches.MatchKey, Record],
                 timed: dict[int, Record], routes: dict[int, Any], size: int,
                 meterless: bool, state: Any) -> None:
        self.plan = plan
        self.ops = ops
        self.records = records
        self.timed = timed
        self.routes = routes
        self.size = size
        self.meterless = meterless
        self.state = state            # the switch's TableState
        # The routes as entrywire.apply takes them: what ActionCall and the row need.
        self.native_routes = {aid: (r.plan.name, r.plan.info, r.plan, r.switch_action)
                              for aid, r in routes.items()}


@dataclass(slots=True)
class _Extras:
    """What an entry carries besides its key and action, read from the message once
    (each presence test is a protobuf call)."""

    meter: bool                           # meter_config given
    counter: tuple[int, int] | None       # counter_data given: (packets, bytes)


@dataclass(slots=True)
class _Binding:
    """What an entry's ``action`` field resolves to (exactly one of the kinds)."""

    call: actions.ActionCall | None = None
    member: ProfileMember | None = None
    group: Group | None = None
    oneshot: list[tuple[actions.ActionCall, int]] | None = None   # (action, weight)


class TableEntries:
    """INSERT/MODIFY/DELETE/Read of table entries of one loaded pipeline."""

    def __init__(self, switch: SwitchControl, index: P4InfoIndex, meters: MeterDriver,
                 profiles: ActionProfiles) -> None:
        self.switch = switch
        self.index = index
        self.meters = meters
        self.profiles = profiles
        self._records: dict[int, dict[matches.MatchKey, Record]] = {
            tid: {} for tid in index.tables}
        profiles.oneshot_in_use = self._oneshot_in_use
        self._defaults: dict[int, TableEntry] = {}
        # Plain writes (write_plain): each table's plan, and the native plans that
        # entrywire checks updates with.
        self._plans = {tid: self._plan(tid) for tid in index.tables}
        self.native_plans = {tid: plan.native for tid, plan in self._plans.items()
                             if plan is not None and plan.native is not None}
        # Per planned table, what its plain writes need, bound once (see _PlainTable):
        # no per-update table-name resolution or method chains.
        self._plain: dict[int, _PlainTable] = {}
        # The entries with an idle timeout, per table (by record id): the idle sweeper
        # visits these only, not every entry, several times a second.
        self._timed: dict[int, dict[int, Record]] = {tid: {} for tid in index.tables}
        for tid, table in index.tables.items():
            self._import_program_entries(tid, table)

    # ------------------------------------------------------------------ plain writes
    def write_plain(self, d: Decoded | Checked, log: UndoLog) -> bool:
        """Apply a plain update decoded from the wire (:mod:`entrywire`, checked there
        already when its table has a native plan) when its table's plan accepts it;
        False — with nothing changed — sends it down the general path (:meth:`write`),
        which reports any error. This is the same write, minus parsing a message and
        validating twice: one insert, one modify and one delete of a direct-action
        entry, whichever way it was decoded."""
        fast = self._plain.get(d[1])
        if fast is None:
            fast = self._plain_table(d[1])
            if fast is None:
                return False
        kind = d[0]
        if len(d) == CHECKED_LEN:           # checked in C: key, match and args given
            if kind == Update.DELETE:
                return self._delete_plain(fast, d[2], log)
            route = fast.routes.get(d[4])
            args = d[6]
            if route is None or args is None:
                return False
            plan = route.plan
            key, match, action = d[2], d[5], route.switch_action
            call = ActionCall(plan.name, args, None, plan.info, plan)
        else:                               # checked here, by the Python plan
            if kind == Update.DELETE:
                keyed = fast.plan.key(d)  # type: ignore[arg-type]
                return keyed is not None and self._delete_plain(fast, keyed[0], log)
            if kind != Update.INSERT and kind != Update.MODIFY:
                return False
            accepted = fast.plan.accept(d)  # type: ignore[arg-type]
            if accepted is None:
                return False
            key, match, call, action = accepted
        if kind == Update.INSERT:
            records = fast.records
            if key in records or (fast.size and len(records) >= fast.size):
                return False      # ALREADY_EXISTS / RESOURCE_EXHAUSTED, from write()
            self._insert_direct(fast.plan.table, fast, key, None, match, action, call, d[7],
                                d[3], not d[8], log, log.atomic)
            return True
        if kind == Update.MODIFY:
            record = fast.records.get(key)
            if record is None or not fast.meterless:
                return False      # NOT_FOUND, or a meter config to carry over: write()
            self._modify_direct(fast.plan.table, fast, record, action, call, d[7], d[3],
                                not d[8], log, log.atomic)
            return True
        return False

    def apply_run(self, items: list[Any], start: int) -> int:
        """Apply the C-checked updates ``items[start:]`` of one table, outside atomic
        batches, in one C call (``entrywire.apply``): what write_plain does for each,
        in order, up to the first one it would not take or that needs more (an error,
        an entry the switch has built, another table...), whose index is returned —
        ``start`` when none was applied. The caller runs that one through write_plain
        or the general path, which reports any error. The rows a run adds share one
        insertion time (their idle-timeout clock), read once per run."""
        d = items[start]
        if type(d) is not tuple or len(d) != CHECKED_LEN:
            return start
        fast = self._plain.get(d[1])
        if fast is None:
            fast = self._plain_table(d[1])
        mod = entrywire.native()
        if fast is None or fast.ops.bulk is None or not fast.meterless or mod is None:
            return start
        bulk = fast.ops.bulk()
        if bulk is None:
            return start
        (rows, mode, lpm_index, state_size, now), put, deleted = bulk
        state = fast.state
        ctx = (d[1], fast.records, fast.timed, fast.native_routes, fast.size, state, rows,
               mode, lpm_index, put, deleted, Record, ActionCall, now, state_size,
               reclaim.held())
        return mod.apply(items, start, ctx)  # type: ignore[no-any-return]

    def _plain_table(self, table_id: int) -> _PlainTable | None:
        """The table's :class:`_PlainTable` (built at its first plain update), or None
        when plain writes cannot take the table."""
        plan = self._plans.get(table_id)
        if plan is None:
            return None
        table = plan.table
        fast = _PlainTable(plan, self.switch.checked_ops(table.name),  # type: ignore[attr-defined]
                           self._records[table_id], self._timed[table_id], plan.routes,
                           table.size, table.direct_meter is None,
                           self.switch.table_state(table.name))  # type: ignore[attr-defined]
        self._plain[table_id] = fast
        return fast

    def _plan(self, table_id: int) -> TablePlan | None:
        """The table's plan, when plain writes can take it (direct actions, a
        switch that takes checked entries: ``table_state`` and ``checked_ops``)."""
        table = self.index.tables.get(table_id)
        state_of = getattr(self.switch, "table_state", None)
        if (table is None or state_of is None or table.is_const or table.implementation_id
                or not hasattr(self.switch, "checked_ops")):
            return None
        try:
            state = state_of(table.name)
        except (P4Error, KeyError):
            return None
        return TablePlan.build(table, self.index, state)

    def _undo_insert(self, name: str, record: Record, records: dict[matches.MatchKey, Record],
                     timed: dict[int, Record]) -> Callable[[], None]:
        """The undo step of an insert in an atomic batch: the entry out of the switch
        and of the server's records again."""
        def undo() -> None:
            self.switch.table_delete(name, record.handle)
            records.pop(record.key, None)
            timed.pop(id(record), None)
        return undo

    def _delete_plain(self, fast: _PlainTable, key: matches.MatchKey, log: UndoLog) -> bool:
        """DELETE of a planned table's entry (False: it has none with this key)."""
        record = fast.records.get(key)
        if record is None:
            return False
        self._delete(fast.plan.table, record, log)
        return True

    def _plain_of(self, table_id: int) -> _PlainTable | None:
        """The table's :class:`_PlainTable`, or None where plain writes cannot take it."""
        fast = self._plain.get(table_id)
        return fast if fast is not None else self._plain_table(table_id)

    # ------------------------------------------------------------------ program entries
    def _import_program_entries(self, tid: int, table: TableIndex) -> None:
        if not (table.info.is_const_table or table.info.has_initial_entries):
            return
        for view in self.switch.table_entries(table.name):
            try:
                self._import_one(tid, table, view)
            except errors.P4RuntimeError as exc:     # cannot be shown over P4Runtime
                _log.warning("table '%s': program entry %d not readable over P4Runtime: "
                             "%s", table.name, view.handle, exc.message)

    def _import_one(self, tid: int, table: TableIndex, view: EntryView) -> None:
        fields = matches.from_switch(table, view.keys)
        priority = view.priority or 0 if table.needs_priority else 0
        entry = TableEntry(table_id=tid, priority=priority, is_const=table.info.is_const_table)
        entry.match.extend(fields)
        proto = actions.build(self.index, view.action, view.args)
        entry.action.action.CopyFrom(proto)
        call = actions.ActionCall(view.action, list(view.args), proto)
        key = (tuple(sorted((fm.field_id, _norm_key(table, fm)) for fm in fields)), priority)
        self._records[tid][key] = Record(view.handle, entry.SerializeToString(),
                                         list(view.keys), call, True, key)

    # ------------------------------------------------------------------ writes
    def write(self, kind: int, entry: TableEntry, log: UndoLog) -> None:
        if entry.table_id == 0:
            raise errors.invalid("Invalid P4 id")
        table = self.index.table(entry.table_id)
        if entry.HasField("time_since_last_hit"):
            raise errors.invalid("has_time_since_last_hit must not be set in WriteRequest")
        if kind == Update.UNSPECIFIED:
            raise errors.invalid("Update type is not set")
        if kind not in (Update.INSERT, Update.MODIFY, Update.DELETE):
            raise errors.invalid("Invalid update type")
        if entry.is_default_action:
            self._write_default(kind, table, entry, log)
            return
        if kind == Update.INSERT and not entry.HasField("action"):
            raise errors.invalid("'action' field must be set")
        if table.is_const:      # the spec's code; PI's words (BMv2 refuses the insert,
            # PI knows no const entry to modify or delete)
            raise errors.permission_denied("Error when adding match entry to target"
                                           if kind == Update.INSERT
                                           else "Cannot find match entry")
        parsed = matches.parse(table, entry.match, entry.priority)
        if kind == Update.INSERT:
            self._insert(table, entry, parsed, log)
        elif kind == Update.MODIFY:
            self._modify(table, entry, parsed, log)
        else:
            self._delete(table, self._existing(table, parsed), log)

    def _existing(self, table: TableIndex, parsed: matches.ParsedMatch) -> Record:
        record = self._records[table.id].get(parsed.key)
        if record is None:
            raise errors.not_found("Cannot find match entry")
        return record

    def _action_of(self, table: TableIndex, entry: TableEntry) -> _Binding:
        action = entry.action
        which = action.WhichOneof("type")
        name = table.name
        if which is None:
            raise errors.invalid("'action' field must be set for non-default entries")
        if which == "action":
            if table.implementation_id:
                raise errors.invalid(f"Cannot provide direct action for indirect table "
                                     f"{table.id}")
            return _Binding(actions.parse(self.index, action.action, table))
        if not table.implementation_id:
            raise errors.invalid(f"Cannot provide indirect action for direct table {table.id}")
        if which == "action_profile_member_id":
            member = self.profiles.member_call(table, entry.action.action_profile_member_id)
            return _Binding(call=member.call, member=member)
        profile = self.index.get("action_profiles", table.implementation_id)
        if not profile.with_selector:
            raise errors.invalid(f"table '{name}' uses action profile "
                                 f"'{profile.preamble.name}', which has no selector: "
                                 "entries take a member id")
        if which == "action_profile_group_id":
            return _Binding(group=self.profiles.group_for(
                table, entry.action.action_profile_group_id))
        return _Binding(oneshot=self._oneshot(table, profile, entry))

    def _oneshot(self, table: TableIndex, profile: p4info_pb2.ActionProfile,
                 entry: TableEntry) -> list[tuple[actions.ActionCall, int]]:
        """The validated (action, weight) list of a one-shot action set."""
        items = entry.action.action_profile_action_set.action_profile_actions
        if self.profiles.programmed_by_members(profile.preamble.id):
            raise errors.invalid("Invalid attempt to mix action selector programming modes")
        if not items:
            raise errors.unimplemented("No support for empty action profile groups")
        if any(item.weight <= 0 for item in items):
            raise errors.invalid("Member weight must be a positive integer value")
        total = sum(item.weight for item in items)
        if profile.max_group_size and total > profile.max_group_size:
            raise errors.resource_exhausted("Sum of weights exceeds static max_group_size "
                                            "(from P4Info)")
        return [(actions.parse(self.index, item.action, table), item.weight)
                for item in items]

    def _switch_members(self, binding: _Binding,
                        log: UndoLog) -> list[tuple[str, list[int]]] | None:
        """The member list a group or one-shot entry gives the switch, else None."""
        if binding.group is not None:
            return self.profiles.group_members(binding.group, log)
        if binding.oneshot is not None:
            return [(call.name, list(call.args))
                    for call, weight in binding.oneshot for _ in range(weight)]
        return None

    def _switch_add(self, table: TableIndex, record: Record) -> int:
        """Install a record's entry in the switch; returns the new handle."""
        name = table.name
        prio = record.priority or None
        if record.switch_keys is None:       # from a plain write: its checked match
            assert record.call is not None and record.match is not None
            fast = self._plain.get(table.id) or self._plain_table(table.id)
            assert fast is not None
            action = fast.state.resolve_action(record.call.name)
            return fast.ops.add(record.match, action, list(record.call.args),  # type: ignore[no-any-return]
                                prio)
        if record.members is not None:
            return self.switch.table_add_group(name, record.switch_keys, record.members,
                                               prio)
        assert record.call is not None
        return self.switch.table_add(name, record.switch_keys, record.call.name,
                                     record.call.args, prio)

    def _switch_set(self, name: str, handle: int, call: actions.ActionCall | None,
                    members: list[tuple[str, list[int]]] | None) -> None:
        """Point an installed entry to an action, or to a member list."""
        if members is not None:
            self.switch.table_modify_group(name, handle, members)
        else:
            assert call is not None
            self.switch.table_modify(name, handle, call.name, call.args)

    @staticmethod
    def _use(owner: ProfileMember | Group | None, table_name: str, record: Record, log: UndoLog,
             add: bool) -> None:
        """Track which entries use a member or group (their MODIFY rewrites them)."""
        if owner is None:
            return
        users = owner.users
        if add:
            users[id(record)] = (table_name, record)
            log.push(lambda: users.pop(id(record), None))
        else:
            users.pop(id(record), None)
            log.push(lambda: users.__setitem__(id(record), (table_name, record)))

    def _check_extras(self, table: TableIndex, entry: TableEntry, refused: str) -> _Extras:
        """PI's checks of an entry's meter config, counter data and idle timeout;
        ``refused``: PI's words for a meter config its target refuses."""
        meter = entry.HasField("meter_config")
        if meter:
            if table.direct_meter is None:
                raise errors.invalid("Table has no direct meters")
            self.meters.check_config(entry.meter_config, refused)
        counter = entry.HasField("counter_data")
        if counter and table.direct_counter is None:
            raise errors.invalid("Table has no direct counters")
        if entry.idle_timeout_ns < 0:
            raise errors.invalid("idle_timeout_ns must be a positive value")
        if entry.idle_timeout_ns and not table.idle_timeouts:
            raise errors.invalid("idle_timeout_ns must be set to 0 for tables which do not "
                                 "support idle timeout")
        if not counter:
            return _Extras(meter, None)
        data = entry.counter_data
        return _Extras(meter, (data.packet_count, data.byte_count))

    def _insert(self, table: TableIndex, entry: TableEntry, parsed: matches.ParsedMatch,
                log: UndoLog) -> None:
        """INSERT of a parsed entry: the specification's checks, then the insert of its
        kind (a direct action, or an action profile's member, group or action set)."""
        records = self._records[table.id]
        binding = self._action_of(table, entry)
        extras = self._check_extras(table, entry, "Error when adding match entry to target")
        if parsed.key in records:
            raise errors.already_exists("Match entry exists, use MODIFY if you wish to "
                                        "change action")
        if table.size and len(records) >= table.size:
            # the spec's code, PI's words (BMv2's table refuses the entry)
            raise errors.resource_exhausted("Error when adding match entry to target")
        stored = _clean(entry, extras)
        if binding.member is None and binding.group is None and binding.oneshot is None:
            assert binding.call is not None
            record = self._insert_direct(table, self._plain_of(table.id), parsed.key,
                                         parsed.switch_keys, None, None, binding.call,
                                         stored.SerializeToString(), stored.idle_timeout_ns,
                                         False, log, True)
        else:
            record = self._insert_profile(table, parsed, binding, stored, log)
        if extras.meter or extras.counter is not None:
            self._apply_direct(table, record, extras.counter, stored, log, extras.meter)

    def _insert_direct(self, table: TableIndex, fast: _PlainTable | None,
                       key: matches.MatchKey, switch_keys: list[KeyMatch] | None,
                       match: tuple[Any, ...] | None, action: Any, call: ActionCall,
                       stored: bytes, idle: int, plain: bool, log: UndoLog,
                       undo: bool) -> Record:
        """The insert of a direct-action entry, checked (by the plan or by the general
        path): ``match`` and ``action`` the switch's, or None to take them from the
        plan — or, where the plan does not route the action, to give the switch
        ``switch_keys`` to check itself. ``undo``: keep the insert's undo step."""
        prio = key[1] or None
        if match is None and fast is not None and call.info is not None:
            route = fast.routes.get(call.info.preamble.id)
            if route is not None and route.plan.name == call.name:
                match, action = fast.plan.switch_match(dict(key[0])), route.switch_action
        if match is not None:
            assert fast is not None
            handle = fast.ops.add(match, action, list(call.args), prio)
        else:
            handle = self.switch.table_add(table.name, switch_keys, call.name, call.args,
                                           prio)
        # Positional (keywords cost more): handle, stored, switch_keys, call,
        # from_program, key, wire, idle_notified, member, group, oneshot, members,
        # idle_timeout_ns, match, plain.
        record = Record(handle, stored, switch_keys, call, False, key, None, False, None,
                        None, None, None, idle, match, plain)
        records = fast.records if fast is not None else self._records[table.id]
        timed = fast.timed if fast is not None else self._timed[table.id]
        records[key] = record
        if idle:
            timed[id(record)] = record
        if undo:                  # (a plain write outside atomic batches: nothing fails after)
            log.push(self._undo_insert(table.name, record, records, timed))
        return record

    def _insert_profile(self, table: TableIndex, parsed: matches.ParsedMatch,
                        binding: _Binding, stored: TableEntry, log: UndoLog) -> Record:
        """The insert of an entry pointing to an action profile member, a group or a
        one-shot action set, checked."""
        name = table.name
        members = self._switch_members(binding, log)
        key = parsed.key
        record = Record(-1, stored.SerializeToString(), parsed.switch_keys, binding.call,
                        False, key, None, False, binding.member, binding.group,
                        _calls(binding.oneshot), members, stored.idle_timeout_ns)
        record.handle = self._switch_add(table, record)
        records, timed = self._records[table.id], self._timed[table.id]
        records[key] = record
        if record.idle_timeout_ns:
            timed[id(record)] = record
        log.push(self._undo_insert(name, record, records, timed))
        self._use(binding.member, name, record, log, add=True)
        self._use(binding.group, name, record, log, add=True)
        return record

    def _apply_direct(self, table: TableIndex, record: Record,
                      counter: tuple[int, int] | None, entry: TableEntry,
                      log: UndoLog, meter: bool) -> None:
        if counter is not None and table.direct_counter is not None:
            cname = table.direct_counter.preamble.name
            old = self.switch.counter_read(cname, record.handle)
            self.switch.counter_write(cname, record.handle, *counter)
            log.push(lambda: self.switch.counter_write(cname, record.handle, *old))
        if meter and table.direct_meter is not None:
            self.meters.configure(table.direct_meter.preamble.name, record.handle,
                                  entry.meter_config, log, direct=True)

    def _modify(self, table: TableIndex, entry: TableEntry, parsed: matches.ParsedMatch,
                log: UndoLog) -> None:
        """MODIFY of a parsed entry's action (and metadata, idle timeout, direct
        resources), by the modify of its kind; the entry is looked up after the checks
        (PI's order)."""
        binding = self._action_of(table, entry)
        extras = self._check_extras(table, entry, "Error when modifying match entry in target")
        record = self._existing(table, parsed)
        new_entry = _clean(entry, extras)
        # A meter config is kept across a MODIFY that gives none (only a table with a
        # direct meter can hold one: spare the others parsing the stored entry).
        if not extras.meter and table.direct_meter is not None:
            previous = record.entry
            if previous.HasField("meter_config"):
                new_entry.meter_config.CopyFrom(previous.meter_config)
        if binding.member is None and binding.group is None and binding.oneshot is None:
            assert binding.call is not None
            self._modify_direct(table, self._plain_of(table.id), record, None, binding.call,
                                new_entry.SerializeToString(), new_entry.idle_timeout_ns,
                                False, log, True)
        else:
            self._modify_profile(table, record, binding, new_entry, log)
        if extras.meter or extras.counter is not None:
            self._apply_direct(table, record, extras.counter, new_entry, log, extras.meter)

    def _modify_direct(self, table: TableIndex, fast: _PlainTable | None, record: Record,
                       action: Any, call: ActionCall, stored: bytes, idle: int, plain: bool,
                       log: UndoLog, undo: bool) -> None:
        """The modify of a direct-action entry to the checked ``call`` (``action``: the
        switch's, or None to take it from the plan or have the switch check the call);
        ``undo``: keep its undo step."""
        old = (record.call, record.stored, record.idle_timeout_ns, record.plain)
        if action is None and fast is not None and call.info is not None:
            route = fast.routes.get(call.info.preamble.id)
            if route is not None and route.plan.name == call.name:
                action = route.switch_action
        if action is not None:
            assert fast is not None
            fast.ops.modify(record.handle, action, list(call.args))
        else:
            self.switch.table_modify(table.name, record.handle, call.name, call.args)
        record.call = call
        record.stored, record.idle_timeout_ns, record.plain = stored, idle, plain
        record.wire = None
        if idle:
            self._timed[table.id][id(record)] = record
        elif old[2]:
            self._timed[table.id].pop(id(record), None)
        if not undo:
            return                # a plain write outside atomic batches: nothing fails after

        def undo_modify() -> None:
            self._switch_set(table.name, record.handle, old[0], None)
            record.call, record.stored, record.idle_timeout_ns, record.plain = old
            record.wire = None
            self._track_idle(table.id, record)
        log.push(undo_modify)

    def _modify_profile(self, table: TableIndex, record: Record, binding: _Binding,
                        new_entry: TableEntry, log: UndoLog) -> None:
        """The modify of an entry of an action profile's table to the checked
        ``binding`` (a member, a group or a one-shot action set)."""
        name = table.name
        old = (record.call, record.stored, record.member, record.group, record.oneshot,
               record.members, record.idle_timeout_ns, record.plain)
        record.plain = False
        members = self._switch_members(binding, log)
        self._switch_set(name, record.handle, binding.call, members)
        record.call, record.members = binding.call, members
        record.oneshot = _calls(binding.oneshot)
        record.store(new_entry)
        record.wire = None
        self._track_idle(table.id, record)

        def undo_modify() -> None:
            self._switch_set(name, record.handle, old[0], old[5])
            (record.call, record.stored, record.member, record.group, record.oneshot,
             record.members, record.idle_timeout_ns, record.plain) = old
            record.wire = None
            self._track_idle(table.id, record)
        log.push(undo_modify)
        if binding.member is not old[2]:
            self._use(old[2], name, record, log, add=False)
            self._use(binding.member, name, record, log, add=True)
            record.member = binding.member
        if binding.group is not old[3]:
            self._use(old[3], name, record, log, add=False)
            self._use(binding.group, name, record, log, add=True)
            record.group = binding.group

    def _delete(self, table: TableIndex, record: Record, log: UndoLog) -> None:
        """DELETE of an entry, of any kind."""
        tid = table.id
        name = table.name
        counters = None
        if log.atomic and table.direct_counter is not None:      # kept for the undo
            counters = self.switch.counter_read(table.direct_counter.preamble.name,
                                                record.handle)
        fast = self._plain_of(tid)
        if fast is not None:
            fast.ops.delete(record.handle)
        else:
            self.switch.table_delete(name, record.handle)
        del self._records[tid][record.key]
        self._timed[tid].pop(id(record), None)
        if record.member is not None:
            self._use(record.member, name, record, log, add=False)
        if record.group is not None:
            self._use(record.group, name, record, log, add=False)
        if not log.atomic:
            return     # a DELETE ends its update: outside atomic batches nothing undoes it

        def undo_delete() -> None:
            record.handle = self._switch_add(table, record)
            self._records[tid][record.key] = record
            self._track_idle(tid, record)
            if counters is not None and table.direct_counter is not None:
                self.switch.counter_write(table.direct_counter.preamble.name,
                                          record.handle, *counters)
            if record.entry.HasField("meter_config") and table.direct_meter is not None:
                self.meters.configure(table.direct_meter.preamble.name, record.handle,
                                      record.entry.meter_config, UndoLog(), direct=True)
        log.push(undo_delete)

    # ------------------------------------------------------------------ default entries
    def _write_default(self, kind: int, table: TableIndex, entry: TableEntry,
                       log: UndoLog) -> None:
        name = table.name
        if kind != Update.MODIFY:
            raise errors.invalid(f"Cannot use {Update.Type.Name(kind)} for default entry")
        if entry.match:
            raise errors.invalid("Non-empty key for default entry")
        if entry.priority:
            raise errors.invalid("Non-zero priority for default entry")
        if table.implementation_id:
            raise errors.invalid(f"Cannot set / reset default action for indirect table "
                                 f"{table.id}")
        if table.info.const_default_action_id:
            raise errors.permission_denied(f"Cannot set / reset default action for table "
                                           f"{table.id} which has a const default action")
        if entry.HasField("action"):
            if entry.action.WhichOneof("type") != "action":
                raise errors.unimplemented("default entries pointing to action profile "
                                           "members or groups are not supported yet")
            call = actions.parse(self.index, entry.action.action, table, default=True)
        else:
            call = self._initial_default(table)
        tid = table.id
        previous = self._defaults.get(tid)
        undo_call = self._default_call(table, previous)
        self.switch.table_set_default(name, call.name, call.args)
        stored = TableEntry(table_id=tid, is_default_action=True)
        stored.action.action.CopyFrom(call.canonical())
        self._defaults[tid] = stored

        def undo_default() -> None:
            self.switch.table_set_default(name, undo_call.name, undo_call.args)
            if previous is None:
                self._defaults.pop(tid, None)
            else:
                self._defaults[tid] = previous
        log.push(undo_default)

    def _default_call(self, table: TableIndex, stored: TableEntry | None) -> actions.ActionCall:
        if stored is None:
            return self._initial_default(table)
        return actions.parse(self.index, stored.action.action)

    def _initial_default(self, table: TableIndex) -> actions.ActionCall:
        """The program's own default action (P4Info ``initial_default_action``)."""
        info = table.info
        if info.HasField("initial_default_action"):
            init = info.initial_default_action
            proto = p4runtime_pb2.Action(action_id=init.action_id)
            for arg in init.arguments:
                proto.params.add(param_id=arg.param_id, value=arg.value)
            return actions.parse(self.index, proto)
        action_id = info.const_default_action_id or _no_action_id(self.index, table)
        if action_id is None:
            raise errors.failed_precondition(
                f"the P4Info does not say the initial default action of table "
                f"'{info.preamble.name}'")
        return actions.parse(self.index, p4runtime_pb2.Action(action_id=action_id))

    # ------------------------------------------------------------------ reads
    def read(self, request: TableEntry) -> Iterator[bytes]:
        """Encoded ``Entity`` messages of the entries a read request selects."""
        if request.table_id == 0:
            tables = list(self.index.tables.values())
        else:
            tables = [self.index.table(request.table_id)]
        if request.HasField("time_since_last_hit"):
            _check_aging_read(request, tables)
        for table in tables:
            if request.is_default_action:
                try:
                    entry = self._read_default(table)
                except errors.P4RuntimeError:
                    if request.table_id:
                        raise
                    continue     # a wildcard read skips tables with an unknown default
                yield encoding.field(encoding.ENTITY_TABLE_ENTRY, entry.SerializeToString())
                continue
            yield from self._read_table(table, request)

    def _read_default(self, table: TableIndex) -> TableEntry:
        tid = table.id
        stored = self._defaults.get(tid)
        if stored is not None:
            return stored
        call = self._initial_default(table)
        out = TableEntry(table_id=tid, is_default_action=True)
        out.action.action.CopyFrom(call.canonical())
        return out

    def _read_table(self, table: TableIndex, request: TableEntry) -> Iterator[bytes]:
        tid = table.id
        wanted = None
        if request.match:
            wanted = matches.parse(table, list(request.match), request.priority).key
        counter = table.direct_counter if request.HasField("counter_data") else None
        for key, record in self._records[tid].items():
            if wanted is not None and key != wanted:
                continue
            if request.priority and record.priority != request.priority:
                continue
            data = self.wire_of(table, record)
            if request.HasField("time_since_last_hit"):
                data += self._time_since_last_hit(table, record)
            if counter is not None:
                packets, bytes_ = self.switch.counter_read(counter.preamble.name,
                                                           record.handle)
                counts = p4runtime_pb2.CounterData(packet_count=packets, byte_count=bytes_)
                data += encoding.field(encoding.TABLE_ENTRY_COUNTER_DATA,
                                       counts.SerializeToString())
            yield encoding.field(encoding.ENTITY_TABLE_ENTRY, data)

    def _time_since_last_hit(self, table: TableIndex, record: Record) -> bytes:
        idle_us = getattr(self.switch, "entry_idle_us", None)
        if idle_us is None:
            raise errors.unimplemented("this switch does not track when entries are hit")
        # PI's words for BMv2's ageing: the idle time, never above the entry's timeout
        # (0 for an entry without one)
        elapsed = TableEntry.IdleTimeout(elapsed_ns=min(
            idle_us(table.name, record.handle) * 1000, record.idle_timeout_ns))
        return encoding.field(encoding.TABLE_ENTRY_TIME_SINCE_LAST_HIT, elapsed.SerializeToString())

    def canonical(self, table: TableIndex, record: Record) -> TableEntry:
        """The entry as Read returns it: canonical byte strings, fields by id.

        Built from the stored entry (parsed afresh, so it can be changed in place):
        the match and the action are replaced by their canonical forms where they
        differ; every other field is kept as written."""
        entry = record.entry
        originals = list(entry.match)
        fields = matches.canonical_fields(table, record.key, originals)
        if fields is not originals:
            del entry.match[:]
            entry.match.extend(fields)
        direct = entry.action.WhichOneof("type") == "action"
        if direct and record.call is not None:
            entry.action.action.ParseFromString(record.call.canonical_bytes())
        if record.oneshot is not None:      # each action of the set in canonical form
            items = entry.action.action_profile_action_set.action_profile_actions
            for item, call in zip(items, record.oneshot, strict=True):
                item.action.ParseFromString(call.canonical_bytes())
        return entry

    def wire_of(self, table: TableIndex, record: Record) -> bytes:
        """The encoded canonical TableEntry of a record (cached until it changes)."""
        if record.wire is None:
            if record.plain and record.call is not None and record.call.info is not None:
                record.wire = _plain_wire(table.id, record)
            else:
                record.wire = self.canonical(table, record).SerializeToString()
        return record.wire

    # ------------------------------------------------------------------ for direct resources
    def record_for(self, entry: TableEntry) -> tuple[TableIndex, Record]:
        """The record a DirectCounterEntry/DirectMeterEntry's ``table_entry`` names."""
        table = self.index.table(entry.table_id)
        parsed = matches.parse(table, list(entry.match), entry.priority)
        record = self._records[table.id].get(parsed.key)
        if record is None:
            raise errors.invalid("Cannot map table entry to handle")
        return table, record

    def _oneshot_in_use(self, profile_id: int) -> bool:
        """Whether a table of the action profile holds a one-shot entry."""
        profile = self.index.get("action_profiles", profile_id)
        return any(record.oneshot is not None for tid in profile.table_ids
                   for record in self._records.get(tid, {}).values())

    def records(self, table_id: int) -> list[Record]:
        return list(self._records[table_id].values())

    def timed_records(self, table_id: int) -> list[Record]:
        """The entries of a table that have an idle timeout."""
        return list(self._timed[table_id].values())

    def _track_idle(self, table_id: int, record: Record) -> None:
        if record.idle_timeout_ns:
            self._timed[table_id][id(record)] = record
        else:
            self._timed[table_id].pop(id(record), None)

    def written(self) -> list[TableEntry]:
        """What controllers wrote (entries and default entries), to carry the
        forwarding state over to a new pipeline."""
        out = [self.canonical(self.index.tables[tid], r)
               for tid, records in self._records.items() for r in records.values()
               if not r.from_program]
        return out + list(self._defaults.values())

def _plain_wire(table_id: int, record: Record) -> bytes:
    """The canonical TableEntry of a plain record, encoded directly: what
    ``canonical(...).SerializeToString()`` gives for an entry of entrywire's shape
    (fields in number order, defaults omitted), at a fraction of the cost — a Read's
    first pass over a big table builds one per entry. Tags: TableEntry table_id 1,
    match 2, action 3, priority 4, idle_timeout_ns 9 (each FieldMatch:
    ``matches.field_match_bytes``); TableAction.action 1."""
    call = record.call
    assert call is not None
    mod = entrywire.native()
    if mod is not None and call.plan is not None:
        head, prefixes = call.plan.wire_prefixes
        out = mod.encode_plain(table_id, record.key[0], record.key[1],
                               record.idle_timeout_ns & 0xFFFFFFFFFFFFFFFF, head, prefixes,
                               call.args)
        if out is not None:
            return out                  # else a shape C leaves to Python (doc there)
    return _plain_wire_python(table_id, record)


def _plain_wire_python(table_id: int, record: Record) -> bytes:
    """:func:`_plain_wire` in Python (no compiler, or a shape the C encoder leaves)."""
    assert record.call is not None
    return plain_wire_with(table_id, record, record.call.canonical_bytes())


def plain_wire_with(table_id: int, record: Record, action: bytes) -> bytes:
    """A plain record's canonical TableEntry with ``action`` (an encoded Action) in
    place of its own: what a MODIFY of it to that action sends (the runtime channel's
    ``table_modify``)."""
    return encoding.table_entry(table_id, matches.match_bytes(record.key[0]), action,
                            record.key[1], record.idle_timeout_ns)


def _calls(oneshot: list[tuple[actions.ActionCall, int]] | None
           ) -> list[actions.ActionCall] | None:
    return None if oneshot is None else [call for call, _ in oneshot]


def _clean(entry: TableEntry, extras: _Extras) -> TableEntry:
    """The request's entry, kept as the stored copy without its read-only parts.

    The server owns a request once parsed; keeping its message spares every insert
    building a canonical copy field by field from Python. The canonical form is built
    when the entry is first read."""
    if extras.counter is not None:
        entry.ClearField("counter_data")
    for name in ("meter_counter_data", "time_since_last_hit"):
        if entry.HasField(name):
            entry.ClearField(name)
    if entry.is_const:
        entry.is_const = False
    return entry


def _norm_key(table: TableIndex, fm: p4runtime_pb2.FieldMatch) -> matches.Norm:
    return matches.key_of([fm], table, 0)[0][0][1]


def _no_action_id(index: P4InfoIndex, table: TableIndex) -> int | None:
    for ref in table.info.action_refs:
        if index.action(ref.id).preamble.name in ("NoAction", ".NoAction"):
            return ref.id
    return None


def _check_aging_read(request: TableEntry, tables: list[TableIndex]) -> None:
    """PI's refusals of a read asking for ``time_since_last_hit`` where there is none:
    of default entries, or of a table (any, for a wildcard) without idle timeouts."""
    if request.is_default_action:
        raise errors.invalid("Default table entries do not support entry ageing, do not set "
                             "'time_since_last_hit' in your ReadRequest")
    if not all(table.idle_timeouts for table in tables):
        raise errors.invalid("Do not set time_since_last_hit for a ReadRequest if the table "
                             "does not support idle timeout; yes, that includes wildcard "
                             "reads")
