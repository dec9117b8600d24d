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
from softswitch.diagnostics import P4Error
from softswitch.p4runtime import actions, encoding, errors, matches
from softswitch.p4runtime.p4index import TableIndex
from softswitch.p4runtime.runtime import PipelineRuntime
from softswitch.p4runtime.tables import plain_wire_with

Update = p4runtime_pb2.Update
# SwitchControl methods that change state P4Runtime holds apart from the switch.
DIRECT_ONLY = frozenset({
    "mirroring_add", "mirroring_add_mc", "mirroring_delete", "mc_mgrp_create",
    "mc_mgrp_destroy", "mc_node_create", "mc_node_associate", "mc_node_dissociate",
    "mc_node_destroy", "meter_set_rates", "meter_array_set_rates"})
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
