"""Execution of control commands against a switch.

:class:`CommandSession` turns the typed commands of :mod:`softswitch.stf.commands` into
:class:`~softswitch.core.control.SwitchControl` calls: it resolves written names to
control-plane names (:mod:`softswitch.stf.names`), interprets key and argument text by
the key's match kind and width (:mod:`softswitch.stf.values`), converts BMv2 CLI
priorities (lower wins) and p4c's STF driver's (``10000 - PRIO``) to the switch's
(higher wins, :func:`~softswitch.core.control.from_bmv2_priority`), and remembers STF
entry ids.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass

from softswitch.core.control import (
    BMV2_PRIORITY_BASE,
    ActionInfo,
    KeyMatch,
    SwitchControl,
    TableInfo,
    bmv2_match_type,
    from_bmv2_priority,
)
from softswitch.diagnostics import P4Error, SourceLoc
from softswitch.stf import names
from softswitch.stf.commands import (
    CheckCounter,
    Command,
    CounterRead,
    CounterReset,
    CounterWrite,
    McMgrpCreate,
    McNodeAssociate,
    McNodeCreate,
    MeterSetRates,
    MirroringAdd,
    MirroringAddMc,
    MirroringDelete,
    RegisterRead,
    RegisterReset,
    RegisterWrite,
    RemoveAll,
    ShowActions,
    ShowTables,
    TableAdd,
    TableClear,
    TableDelete,
    TableDump,
    TableInfoCmd,
    TableModify,
    TableSetDefault,
    parse_command,
)
from softswitch.stf.values import default_key_match, parse_int, parse_key_value

# BMv2's CLI priority counts the other way round from SwitchControl's (higher wins).
CLI_PRIORITY_BASE = BMV2_PRIORITY_BASE
# p4c's STF driver gives BMv2 ``10000 - PRIO`` for ``add TABLE PRIO …`` ("Priorities in
# BMV2 seem to be reversed with respect to the stf file"), and only for a table whose
# BMv2 match type is ternary; a table with a range key keeps it here (the driver cannot
# add to one at all), one without either drops it (lpm and exact need none).
STF_PRIORITY_BASE = 10000

_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


@dataclass(frozen=True)
class Outcome:
    """What a command printed and, for checks, whether the check failed."""

    text: str = ""
    failure: str | None = None


class CommandSession:
    """Executes commands against one switch, remembering STF entry ids (``= A``)."""

    def __init__(self, control: SwitchControl) -> None:
        self.control = control
        self.entry_ids: dict[str, int] = {}
        self._tables: list[TableInfo] | None = None
        # Names as commands spell them, resolved once: the switch's tables and their
        # actions never change for a session, and a controller streaming table_add
        # names the same few again and again.
        self._table_names: dict[str, TableInfo] = {}
        self._action_names: dict[tuple[str, str], ActionInfo] = {}

    def run_line(self, line: str, loc: SourceLoc | None = None) -> Outcome:
        """Parse and execute one line (the runtime CLI channel's entry point)."""
        return self.execute(parse_command(line, loc))

    def run_script(self, text: str, filename: str = "<commands>") -> list[Outcome]:
        """Execute a command file (``simple_switch_CLI < FILE``): one command per line,
        ``#`` comments and blank lines skipped; the first bad line raises ``P4Error``
        naming ``file:line``."""
        outcomes = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            body = line.split("#", 1)[0]
            if body.strip():
                col = len(body) - len(body.lstrip()) + 1
                outcomes.append(self.run_line(body, SourceLoc(filename, lineno, col)))
        return outcomes

    def execute(self, cmd: Command) -> Outcome:
        handler = getattr(self, "_do_" + type(cmd).__name__)
        try:
            return handler(cmd)
        except P4Error as err:
            if err.loc is None and cmd.loc is not None:
                raise P4Error(err.message, cmd.loc) from err
            raise

    # -- helpers
    def _table(self, name: str, loc: SourceLoc | None) -> TableInfo:
        found = self._table_names.get(name)
        if found is None:
            if self._tables is None:
                self._tables = list(self.control.tables())
            found = self._table_names[name] = names.resolve_table(self._tables, name, loc)
        return found

    def _action(self, table: TableInfo, name: str, loc: SourceLoc | None) -> ActionInfo:
        found = self._action_names.get((table.name, name))
        if found is None:
            found = self._action_names[(table.name, name)] = \
                names.resolve_action(table, name, loc)
        return found

    def _args(self, action: ActionInfo, given: tuple[tuple[str | None, str], ...],
              loc: SourceLoc | None) -> list[int]:
        """Action data in declaration order, from named (STF) or positional (CLI) args."""
        params = dict(action.params)
        if all(name is None for name, _ in given):
            if len(given) != len(action.params):
                raise P4Error(f"action {action.name} takes {len(action.params)} "
                              f"argument(s), {len(given)} given", loc)
            return [parse_int(v, loc, f"argument {p} of {action.name}", w)
                    for (_, v), (p, w) in zip(given, action.params, strict=True)]
        values: dict[str, int] = {}
        for name, text in given:
            if name is None or name not in params:
                known = ", ".join(params) or "none"
                raise P4Error(f"action {action.name} has no parameter '{name or text}' "
                              f"(parameters: {known})", loc)
            if name in values:
                raise P4Error(f"argument '{name}' of {action.name} given twice", loc)
            values[name] = parse_int(text, loc, f"argument {name} of {action.name}",
                                     params[name])
        missing = [p for p in params if p not in values]
        if missing:
            raise P4Error(f"action {action.name}: missing argument(s) {', '.join(missing)}",
                          loc)
        return [values[p] for p, _ in action.params]

    def _keys(self, table: TableInfo, given: tuple[tuple[str | None, str], ...],
              loc: SourceLoc | None) -> list[KeyMatch]:
        if all(name is None for name, _ in given):
            if len(given) != len(table.keys):
                raise P4Error(f"table {table.name} has {len(table.keys)} key field(s), "
                              f"{len(given)} given", loc)
            return [parse_key_value(k, v, loc) for k, (_, v) in
                    zip(table.keys, given, strict=True)]
        chosen: dict[str, KeyMatch] = {}
        for name, text in given:
            key = names.resolve_key(table, name or text, loc)
            if key.name in chosen:
                raise P4Error(f"key field {key.name} of {table.name} given twice", loc)
            chosen[key.name] = parse_key_value(key, text, loc)
        return [chosen.get(k.name) or default_key_match(k, loc) for k in table.keys]

    def _entry_index(self, text: str, loc: SourceLoc | None) -> int:
        if text.lstrip("$") in self.entry_ids:
            return self.entry_ids[text.lstrip("$")]
        if text[:1].isdigit():
            return parse_int(text, loc, "index")
        raise P4Error(f"unknown entry id '{text}' (ids come from 'add … = ID')", loc)

    # -- tables
    def _do_TableAdd(self, cmd: TableAdd) -> Outcome:
        table = self._table(cmd.table, cmd.loc)
        action = self._action(table, cmd.action, cmd.loc)
        args, priority = cmd.args, None
        if cmd.cli_tail is not None:
            tail = list(cmd.cli_tail)
            if len(tail) == len(action.params) + 1:
                priority = from_bmv2_priority(parse_int(tail.pop(), cmd.loc, "priority"))
            args = tuple((None, w) for w in tail)
        elif cmd.priority is not None and bmv2_match_type(table) in ("ternary", "range"):
            priority = from_bmv2_priority(STF_PRIORITY_BASE - cmd.priority)
        handle = self.control.table_add(table.name, self._keys(table, cmd.keys, cmd.loc),
                                        action.name, self._args(action, args, cmd.loc),
                                        priority)
        if cmd.entry_id is not None:
            self.entry_ids[cmd.entry_id.lstrip("$")] = handle
        return Outcome(f"Entry has been added with handle {handle}")

    def _do_TableSetDefault(self, cmd: TableSetDefault) -> Outcome:
        table = self._table(cmd.table, cmd.loc)
        action = self._action(table, cmd.action, cmd.loc)
        self.control.table_set_default(table.name, action.name,
                                       self._args(action, cmd.args, cmd.loc))
        return Outcome(f"Default action of {table.name} set to {action.name}")

    def _do_TableModify(self, cmd: TableModify) -> Outcome:
        table = self._table(cmd.table, cmd.loc)
        action = self._action(table, cmd.action, cmd.loc)
        self.control.table_modify(table.name, cmd.handle, action.name,
                                  self._args(action, cmd.args, cmd.loc))
        return Outcome(f"Entry {cmd.handle} of {table.name} modified")

    def _do_TableDelete(self, cmd: TableDelete) -> Outcome:
        table = self._table(cmd.table, cmd.loc)
        self.control.table_delete(table.name, cmd.handle)
        return Outcome(f"Entry {cmd.handle} of {table.name} deleted")

    def _do_TableClear(self, cmd: TableClear) -> Outcome:
        table = self._table(cmd.table, cmd.loc)
        self.control.table_clear(table.name)
        return Outcome(f"Table {table.name} cleared")

    def _do_RemoveAll(self, cmd: RemoveAll) -> Outcome:
        for table in self.control.tables():
            if not table.const_entries:
                self.control.table_clear(table.name)
        self.entry_ids.clear()
        return Outcome("All table entries removed")

    def _do_TableDump(self, cmd: TableDump) -> Outcome:
        table = self._table(cmd.table, cmd.loc)
        entries = self.control.table_entries(table.name)
        if cmd.count_only:
            return Outcome(str(len(entries)))
        lines = [f"{table.name}: {len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"]
        for e in entries:
            keys = " ".join(_format_key(k) for k in e.keys)
            args = ", ".join(hex(a) for a in e.args)
            prio = f" priority {e.priority}" if e.priority is not None else ""
            lines.append(f"  {e.handle}: {keys} => {e.action}({args}){prio}")
        return Outcome("\n".join(lines))

    def _do_ShowTables(self, cmd: ShowTables) -> Outcome:
        tables = sorted(self.control.tables(), key=lambda t: t.name)
        return Outcome("\n".join(_table_line(t) for t in tables))

    def _do_ShowActions(self, cmd: ShowActions) -> Outcome:
        if cmd.table is not None:
            actions = list(self._table(cmd.table, cmd.loc).actions)
        else:
            actions = [a for t in self.control.tables() for a in t.actions]
        unique = {a.name: a for a in actions}
        return Outcome("\n".join(_action_line(unique[n]) for n in sorted(unique)))

    def _do_TableInfoCmd(self, cmd: TableInfoCmd) -> Outcome:
        table = self._table(cmd.table, cmd.loc)
        lines = [_table_line(table), "*" * 80]
        lines += [_action_line(a) for a in sorted(table.actions, key=lambda a: a.name)]
        return Outcome("\n".join(lines))

    # -- replication
    def _do_MirroringAdd(self, cmd: MirroringAdd) -> Outcome:
        self.control.mirroring_add(cmd.session, cmd.port)
        return Outcome(f"Mirror session {cmd.session} -> port {cmd.port}")

    def _do_MirroringAddMc(self, cmd: MirroringAddMc) -> Outcome:
        self.control.mirroring_add_mc(cmd.session, cmd.mgrp)
        return Outcome(f"Mirror session {cmd.session} -> multicast group {cmd.mgrp}")

    def _do_MirroringDelete(self, cmd: MirroringDelete) -> Outcome:
        self.control.mirroring_delete(cmd.session)
        return Outcome(f"Mirror session {cmd.session} deleted")

    def _do_McMgrpCreate(self, cmd: McMgrpCreate) -> Outcome:
        self.control.mc_mgrp_create(cmd.mgrp)
        return Outcome(f"Multicast group {cmd.mgrp} created")

    def _do_McNodeCreate(self, cmd: McNodeCreate) -> Outcome:
        handle = self.control.mc_node_create(cmd.rid, list(cmd.ports))
        return Outcome(f"Multicast node created with handle {handle}")

    def _do_McNodeAssociate(self, cmd: McNodeAssociate) -> Outcome:
        self.control.mc_node_associate(cmd.mgrp, cmd.node)
        return Outcome(f"Node {cmd.node} associated with multicast group {cmd.mgrp}")

    # -- counters and registers
    def _do_CounterRead(self, cmd: CounterRead) -> Outcome:
        packets, bytes_ = self.control.counter_read(cmd.name,
                                                    self._entry_index(cmd.index, cmd.loc))
        return Outcome(f"{cmd.name}[{cmd.index}]= (BYTES {bytes_}, PACKETS {packets})")

    def _do_CounterWrite(self, cmd: CounterWrite) -> Outcome:
        self.control.counter_write(cmd.name, self._entry_index(cmd.index, cmd.loc),
                                   cmd.packets, cmd.bytes_)
        return Outcome()

    def _do_CounterReset(self, cmd: CounterReset) -> Outcome:
        self.control.counter_reset(cmd.name)
        return Outcome()

    def _do_RegisterRead(self, cmd: RegisterRead) -> Outcome:
        if cmd.index is None:
            raise P4Error("register_read without an index is not supported; give INDEX",
                          cmd.loc)
        value = self.control.register_read(cmd.name, cmd.index)
        return Outcome(f"{cmd.name}[{cmd.index}]= {value}")

    def _do_RegisterWrite(self, cmd: RegisterWrite) -> Outcome:
        self.control.register_write(cmd.name, cmd.index, cmd.value)
        return Outcome()

    def _do_RegisterReset(self, cmd: RegisterReset) -> Outcome:
        self.control.register_reset(cmd.name)
        return Outcome()

    def _do_MeterSetRates(self, cmd: MeterSetRates) -> Outcome:
        method = "meter_set_rates" if cmd.index is not None else "meter_array_set_rates"
        setter = getattr(self.control, method, None)
        if setter is None:
            raise P4Error(f"{method} is not supported by this switch", cmd.loc)
        if cmd.index is None:
            setter(cmd.name, list(cmd.rates))
        else:
            setter(cmd.name, cmd.index, list(cmd.rates))
        return Outcome()

    def _do_CheckCounter(self, cmd: CheckCounter) -> Outcome:
        index = self._entry_index(cmd.index, cmd.loc)
        packets, bytes_ = self.control.counter_read(cmd.name, index)
        text = f"{cmd.name}({cmd.index}): packets {packets}, bytes {bytes_}"
        if cmd.count_type is None:
            ok = packets == 0 and bytes_ == 0
            want = "packets == 0 and bytes == 0"
        else:
            actual = packets if cmd.count_type == "packets" else bytes_
            ok = _COMPARE[cmd.op](actual, cmd.value)
            want = f"{cmd.count_type} {cmd.op} {cmd.value}"
        failure = None if ok else f"check_counter {cmd.name}({cmd.index}): expected {want}; {text}"
        return Outcome(text, failure)


def _table_line(t: TableInfo) -> str:
    """``simple_switch_CLI``'s one-line table description."""
    keys = ",\t".join(f"{k.name}({k.match_kind}, {k.width})" for k in t.keys)
    return f"{t.name:30} [{keys}]"


def _action_line(a: ActionInfo) -> str:
    params = ",\t".join(f"{name}({width})" for name, width in a.params)
    return f"{a.name:30} [{params}]"


def _format_key(k: KeyMatch) -> str:
    if k.kind == "lpm":
        return f"{k.value:#x}/{k.prefix_len}"
    if k.kind == "ternary":
        return f"{k.value:#x}&&&{k.mask or 0:#x}"
    if k.kind == "range":
        return f"{k.value:#x}->{k.high or 0:#x}"
    if k.kind == "optional" and k.wildcard:
        return "*"
    return f"{k.value:#x}"
