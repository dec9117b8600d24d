"""The runtime channel's view of a P4Runtime-managed switch.

``softswitch run --thrift-port`` speaks the ``simple_switch_CLI`` command language
(:mod:`softswitch.daemon.cli_channel.commands`). On a switch that P4Runtime also programs, the
channel must not change state behind P4Runtime's back: a table entry written there
would be invisible to P4Runtime Read, and a controller's ``tailcc diff`` would call
a modified switch "in sync". So the channel drives the switch through
:class:`ManagedControl`, a :class:`~softswitch.core.control.SwitchControl` that

* carries out table commands (``table_add``, ``table_modify``, ``table_delete``,
  ``table_set_default``, ``table_clear``) as P4Runtime Write updates of the loaded
  pipeline (same validation, same undo, same state: P4Runtime Read and ``tailcc
  diff`` see them; the handles are the switch's, as ``table_dump`` shows them);
* writes parser value sets, entry TTLs (``idle_timeout_ns``) and ``reset_state`` as
  P4Runtime updates too;
* lets counter and register commands through (P4Runtime reads those cells from the
  switch itself, so nothing is hidden);
* refuses what P4Runtime keeps its own record of but the command language cannot
  express as P4Runtime entities — multicast groups and nodes, mirroring sessions,
  meter rates — unless the switch runs with ``--runtime-writes`` (then they go to the
  switch directly, as on BMv2, and P4Runtime does not see them).

Reads (``table_dump``, ``counter_read`` …) and the traffic-manager commands are
always allowed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from p4.v1 import p4runtime_pb2

from softswitch.core.control import KeyMatch
from softswitch.daemon.cli_channel.action_profiles import ActionProfileControl
from softswitch.diagnostics import P4Error
from softswitch.p4runtime import actions, encoding, errors, matches
from softswitch.p4runtime.p4index import TableIndex
from softswitch.p4runtime.runtime import PipelineRuntime
from softswitch.p4runtime.tables import plain_wire_with

Update = p4runtime_pb2.Update
# SwitchControl methods that change state P4Runtime holds apart from the switch.
DIRECT_ONLY = frozenset({
    "mirroring_add", "mirroring_add_mc", "mirroring_delete", "mc_mgrp_create",
    "mc_mgrp_destroy", "mc_node_create", "mc_node_update", "mc_node_associate",
    "mc_node_dissociate", "mc_node_destroy", "meter_set_rates", "meter_array_set_rates"})
NEVER = frozenset({"table_add_group", "table_modify_group", "inject"})


class ManagedControl:
    """A loaded pipeline's switch, with table writes routed through P4Runtime."""

    def __init__(self, switch: Any, runtime: PipelineRuntime,
                 direct_writes: bool = False,
                 written: Callable[[int], None] | None = None,
                 checkpoint: Callable[[], None] | None = None) -> None:
        """``written``: told each write's request size, and set where the server frees
        memory after writes (``Device.note_request``, with a reclaimer): then what a
        write leaves is also moved out of the collector's reach, as P4Runtime Writes do
        (``runtime._collector_paused``). Entries written one command at a time are
        long-lived objects the young and middle collections would otherwise walk again
        and again, stopping the port loop every few seconds under a stream of CLI
        writes.

        ``checkpoint()``: called between the steps of a table command (the command
        parsed; the entry built), where the switch's state is whole: on the port loop it
        forwards the urgent frames that arrived meanwhile
        (:meth:`softswitch.daemon.ports.loop_calls.LoopCalls.checkpoint`)."""
        self._checkpoint = checkpoint if checkpoint is not None else (lambda: None)
        self._switch = switch
        self._runtime = runtime
        self._direct_writes = direct_writes
        self._written = written
        self._by_name: dict[str, TableIndex] | None = None
        self.profiles = ActionProfileControl(runtime, self._write_entity, self._table,
                                             self._record)

    def __getattr__(self, name: str) -> Any:
        if name in NEVER or (name in DIRECT_ONLY and not self._direct_writes):
            return _refuse(name)
        return getattr(self._switch, name)

    # ------------------------------------------------------------------ tables
    def table_add(self, table: str, keys: list[KeyMatch], action: str, args: list[int],
                  priority: int | None = None) -> int:
        self._checkpoint()
        index = self._table(table)
        if index.needs_priority and priority is None:
            raise P4Error(f"table '{table}' has ternary/range/optional keys: give the "
                          "entry a priority")
        # The TableEntry encoded directly: a Write decodes it from bytes anyway.
        entry = encoding.table_entry(index.info.preamble.id, matches.wire_from_switch(index, keys),
                                 actions.build_wire(self._runtime.index, action, args),
                                 (priority or 0) if index.needs_priority else 0)
        state = self._switch.table_state(table)
        before = state.next_handle
        self._checkpoint()
        self._write(Update.INSERT, entry)
        if state.next_handle == before + 1:
            # One entry placed by this insert, under the device lock: it is this one
            # (no need to find its record by key).
            return before
        return self._runtime.tables.record_for(p4runtime_pb2.TableEntry.FromString(entry))[1].handle

    def table_modify(self, table: str, handle: int, action: str, args: list[int]) -> None:
        record = self._record(table, handle)
        index = self._table(table)
        if record.plain and record.call is not None and record.call.info is not None:
            # its canonical entry, encoded with the new action (no message built)
            entry: p4runtime_pb2.TableEntry | bytes = plain_wire_with(
                index.id, record, actions.build_wire(self._runtime.index, action, args))
        else:
            entry = p4runtime_pb2.TableEntry()
            entry.CopyFrom(self._runtime.tables.canonical(index, record))
            entry.action.ClearField("type")
            entry.action.action.CopyFrom(actions.build(self._runtime.index, action, args))
        self._checkpoint()
        self._write(Update.MODIFY, entry)

    def table_delete(self, table: str, handle: int) -> None:
        record = self._record(table, handle)
        # its canonical entry, encoded (and cached for Read) as Read sends it
        self._write(Update.DELETE, self._runtime.tables.wire_of(self._table(table), record))

    def table_clear(self, table: str) -> None:
        index = self._table(table)
        for record in self._runtime.tables.records(index.info.preamble.id):
            if not record.from_program:
                self._write(Update.DELETE, self._runtime.tables.canonical(index, record))

    def table_set_default(self, table: str, action: str, args: list[int]) -> None:
        index = self._table(table)
        entry = p4runtime_pb2.TableEntry(table_id=index.info.preamble.id,
                                         is_default_action=True)
        entry.action.action.CopyFrom(actions.build(self._runtime.index, action, args))
        self._write(Update.MODIFY, entry)

    def table_reset_default(self, table: str) -> None:
        """The program's own default action again (a MODIFY of the default entry
        without an action, as P4Runtime resets it)."""
        index = self._table(table)
        self._write(Update.MODIFY, p4runtime_pb2.TableEntry(
            table_id=index.info.preamble.id, is_default_action=True))

    def table_set_timeout(self, table: str, handle: int, timeout_ms: int) -> None:
        """BMv2's entry TTL: the entry's P4Runtime ``idle_timeout_ns`` (a MODIFY)."""
        record = self._record(table, handle)
        index = self._table(table)
        if not index.idle_timeouts:
            raise P4Error(f"table '{table}' does not support idle timeouts "
                          "(support_timeout)")
        entry = p4runtime_pb2.TableEntry()
        entry.CopyFrom(self._runtime.tables.canonical(index, record))
        entry.idle_timeout_ns = timeout_ms * 1_000_000
        self._write(Update.MODIFY, entry)

    def table_entry_life(self, table: str, handle: int) -> tuple[int, int] | None:
        """(timeout, time since the last hit), in ms, of an entry with an idle timeout;
        None for one without."""
        record = self._record(table, handle)
        if not record.idle_timeout_ns:
            return None
        idle_us = getattr(self._switch, "entry_idle_us", None)
        since = idle_us(table, handle) // 1000 if idle_us is not None else 0
        return record.idle_timeout_ns // 1_000_000, since

    # ------------------------------------------------------------------ reset
    def reset_state(self) -> None:
        """BMv2's ``reset_state``: the entries written at run time go (tables, then
        action profile groups and members), defaults become the program's again,
        meters lose their rates, counters and registers go to zero, and multicast
        groups go; the program, its own entries, clone sessions and value sets stay,
        as on BMv2. What P4Runtime holds changes in one all-or-nothing batch."""
        updates: list[p4runtime_pb2.Update] = []
        for index in self._tables_by_id():
            for record in self._runtime.tables.records(index.info.preamble.id):
                if not record.from_program:
                    updates.append(_update(Update.DELETE, table_entry=self._runtime.tables
                                           .canonical(index, record)))
            if not (index.info.const_default_action_id or self.profiles.profile_of(
                    index.info.preamble.name)):
                updates.append(_update(Update.MODIFY, table_entry=p4runtime_pb2.TableEntry(
                    table_id=index.info.preamble.id, is_default_action=True)))
        for kind in ("action_profile_group", "action_profile_member"):
            updates += [Update(type=Update.DELETE, entity=e)
                        for e in self._runtime.read([p4runtime_pb2.Entity(**{kind: {}})])]
        updates += [_update(Update.MODIFY, meter_entry=p4runtime_pb2.MeterEntry(
            meter_id=info.preamble.id)) for info in self._runtime.index.all("meters")]
        pre = p4runtime_pb2.PacketReplicationEngineEntry(
            multicast_group_entry=p4runtime_pb2.MulticastGroupEntry())
        updates += [Update(type=Update.DELETE, entity=e) for e in self._runtime.read(
            [p4runtime_pb2.Entity(packet_replication_engine_entry=pre)])]
        self._write_batch(updates)
        for kind in ("counters", "direct_counters"):
            for info in self._runtime.index.all(kind):
                self._switch.counter_reset(info.preamble.name)
        for info in self._runtime.index.all("registers"):
            self._switch.register_reset(info.preamble.name)
        if self._direct_writes:               # groups written past P4Runtime, as on BMv2
            for group in list(self._switch.mc_groups):
                self._switch.mc_mgrp_destroy(group)
            for node in list(self._switch.mc_nodes):
                self._switch.mc_node_destroy(node)

    def _tables_by_id(self) -> list[TableIndex]:
        return [self._runtime.index.tables[tid] for tid in sorted(self._runtime.index.tables)]

    # ------------------------------------------------------------------ value sets
    def value_set_members(self, name: str) -> list[int]:
        """A parser value set's members, each its fields packed into one number (first
        field highest: BMv2's value of a value set), as P4Runtime holds them."""
        info = self._value_set(name)
        (entity,) = self._runtime.read([p4runtime_pb2.Entity(
            value_set_entry=p4runtime_pb2.ValueSetEntry(value_set_id=info.preamble.id))])
        return [_packed(info, member) for member in entity.value_set_entry.members]

    def value_set_write(self, name: str, values: list[int]) -> None:
        """Make ``values`` (packed as :meth:`value_set_members` gives them) the members
        of a parser value set: one P4Runtime MODIFY of the whole set."""
        info = self._value_set(name)
        entry = p4runtime_pb2.ValueSetEntry(value_set_id=info.preamble.id)
        for value in values:
            entry.members.add().match.extend(_unpacked(info, value))
        self._write_entity(Update.MODIFY, p4runtime_pb2.Entity(value_set_entry=entry))

    def _value_set(self, name: str) -> Any:
        for info in self._runtime.index.all("value_sets"):
            if name in (info.preamble.name, info.preamble.alias):
                return info
        raise P4Error(f"'{name}' is not a parser value set of the loaded pipeline")

    # ------------------------------------------------------------------ helpers
    def _table(self, name: str) -> TableIndex:
        if self._by_name is None:      # the pipeline's tables never change: index once
            by_name: dict[str, TableIndex] = {}
            for table in self._runtime.index.tables.values():
                by_name.setdefault(table.info.preamble.alias, table)
            for table in self._runtime.index.tables.values():
                by_name[table.info.preamble.name] = table
            self._by_name = by_name
        table = self._by_name.get(name)
        if table is None:
            raise P4Error(f"table '{name}' is not a P4Runtime table of the loaded pipeline")
        return table

    def _record(self, table: str, handle: int) -> Any:
        """The P4Runtime record of the entry the switch holds under ``handle``: found
        by the entry's match key, as a Write names it, so a command costs the same in
        a big table as in a small one (no scan by handle)."""
        index = self._table(table)
        view = self._switch.table_entry(table, handle)     # P4Error: no such handle
        entry = p4runtime_pb2.TableEntry(table_id=index.info.preamble.id,
                                         priority=view.priority or 0)
        entry.match.extend(matches.from_switch(index, view.keys))
        try:
            _, record = self._runtime.tables.record_for(entry)
            if record.handle == handle:
                return record
        except errors.P4RuntimeError:
            pass
        # Not under its key (an entry of the program's own, ranked on BMv2's priority
        # scale): look for the handle itself.
        for record in self._runtime.tables.records(index.info.preamble.id):
            if record.handle == handle:
                return record
        raise P4Error(f"table '{table}' has no entry with handle {handle}")

    def _write_entity(self, kind: int, entity: p4runtime_pb2.Entity) -> None:
        """One update of any entity, as a Write request carries it."""
        self._write_batch([Update(type=kind, entity=entity)])

    def _write_batch(self, updates: list[p4runtime_pb2.Update]) -> None:
        """Updates as one ROLLBACK_ON_ERROR batch: all of them, or none (the first
        refusal is raised)."""
        request = p4runtime_pb2.WriteRequest(
            updates=updates, atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
        try:
            results = self._runtime.write(request)
        except errors.P4RuntimeError as exc:
            raise Refused(exc) from None
        for result in results:
            if result is not None:
                raise Refused(result)

    def _write(self, kind: int, entry: p4runtime_pb2.TableEntry | bytes) -> None:
        """One update of ``entry`` (a message, or one encoded), written as a gRPC Write
        arrives: encoded, so the runtime takes the path of plain table entries
        (entrywire's C decoder, the native plans), cheaper per command than a parsed
        request. WriteRequest.updates 4; Update type 1, entity 2; Entity.table_entry 2."""
        data = entry if isinstance(entry, bytes) else entry.SerializeToString()
        entity = encoding.field(b"\x12", data)
        update = b"\x08" + encoding.varint(kind) + encoding.field(b"\x12", entity)
        request = encoding.field(b"\x22", update)
        lazy = encoding.LazyRequest(p4runtime_pb2.WriteRequest, p4runtime_pb2.Update, 4, request)
        try:
            (result,) = self._runtime.write(lazy, freeze=self._written is not None)
        except errors.P4RuntimeError as exc:
            raise Refused(exc) from None
        finally:
            if self._written is not None:
                self._written(len(request))
        if result is not None:
            raise Refused(result)


class Refused(P4Error):
    """A table command P4Runtime's checks refused, with their words; ``code``: the gRPC
    status code's name (``ALREADY_EXISTS``, ``NOT_FOUND``, ``RESOURCE_EXHAUSTED`` …), which
    BMv2's Thrift API answers with its own codes (:mod:`softswitch.daemon.thrift`)."""

    def __init__(self, refusal: errors.P4RuntimeError) -> None:
        super().__init__(refusal.message)
        self.code = refusal.code.name


def _refuse(name: str) -> Callable[..., Any]:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise P4Error(f"{name}: the runtime channel does not change multicast groups, "
                      "clone/mirroring sessions or meters, whose state P4Runtime keeps "
                      "(it would not see the change); write them over P4Runtime, or start "
                      "softswitch run with --runtime-writes")
    return refused


def _packed(info: Any, member: p4runtime_pb2.ValueSetMember) -> int:
    """A value set member's exact fields as one number, the first field highest."""
    given = {m.field_id: int.from_bytes(m.exact.value, "big") for m in member.match}
    value = 0
    for field in info.match:
        value = (value << field.bitwidth) | given.get(field.id, 0)
    return value


def _unpacked(info: Any, value: int) -> list[p4runtime_pb2.FieldMatch]:
    """The exact field matches of a packed value (:func:`_packed`'s inverse)."""
    out: list[p4runtime_pb2.FieldMatch] = []
    for field in reversed(info.match):
        part = value & ((1 << field.bitwidth) - 1)
        value >>= field.bitwidth
        match = p4runtime_pb2.FieldMatch(field_id=field.id)
        match.exact.value = part.to_bytes(max((part.bit_length() + 7) // 8, 1), "big")
        out.append(match)
    if value:
        raise P4Error(f"value set '{info.preamble.name}': the value is wider than its "
                      f"{sum(f.bitwidth for f in info.match)} bits")
    return out[::-1]


def _update(kind: int, **entity: Any) -> p4runtime_pb2.Update:
    return Update(type=kind, entity=p4runtime_pb2.Entity(**entity))
