"""The control command language shared by STF files and the runtime CLI channel.

One parser turns a line into a typed command and one :class:`CommandSession` executes
commands against any :class:`~softswitch.target.control.SwitchControl`, so an STF test
and an operator typing ``simple_switch_CLI`` commands program the switch identically.

STF forms (p4c's ``bmv2stf.py``; keywords case-insensitive)::

    add TABLE [PRIO] KEY:VALUE… ACTION(ARG:VALUE, …) [= ID]   higher PRIO wins
    setdefault TABLE ACTION(ARG:VALUE, …)
    remove all                                                clear every table
    check_counter NAME(INDEX|$ID) [packets|bytes OP N]        OP: == != < <= > >=

``simple_switch_CLI`` forms (positional keys in table order, BMv2 priority: lower wins)::

    table_add TABLE ACTION KEY… => ARG… [PRIO]
    table_set_default TABLE ACTION ARG…       table_modify TABLE ACTION HANDLE ARG…
    table_delete TABLE HANDLE                 table_clear TABLE
    table_dump TABLE                          table_num_entries TABLE       show_tables

Both::

    mirroring_add SESSION PORT                mirroring_add_mc SESSION MGRP
    mc_mgrp_create MGRP                       mc_node_create RID PORT…
    mc_node_associate MGRP NODE
    counter_read NAME INDEX                   counter_write NAME INDEX PACKETS BYTES
    counter_reset NAME                        register_read NAME [INDEX]
    register_write NAME INDEX VALUE           register_reset NAME
    meter_set_rates NAME INDEX RATE:BURST…    meter_array_set_rates NAME RATE:BURST…

Names resolve as :mod:`softswitch.stf.names` documents; values parse as
:mod:`softswitch.stf.values` documents. A check without a condition
(``check_counter c(3)``) requires the cell to be zero in packets and bytes. Meter
rates (BMv2 units: per microsecond, committed then peak) need a switch that offers
``meter_set_rates``/``meter_array_set_rates`` beyond the SwitchControl protocol.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from softswitch.diagnostics import P4Error, SourceLoc
from softswitch.stf import names
from softswitch.stf.values import default_key_match, parse_int, parse_key_value
from softswitch.target.control import ActionInfo, KeyMatch, SwitchControl, TableInfo

# BMv2's CLI priority counts the other way round from SwitchControl's (higher wins).
CLI_PRIORITY_BASE = (1 << 31) - 1


@dataclass(frozen=True)
class Command:
    loc: SourceLoc | None


@dataclass(frozen=True)
class TableAdd(Command):
    table: str
    keys: tuple[tuple[str | None, str], ...]   # (name or None when positional, text)
    action: str
    args: tuple[tuple[str | None, str], ...]
    priority: int | None = None                # already higher-wins
    entry_id: str | None = None
    cli_tail: tuple[str, ...] | None = None    # table_add: args [+ priority], sorted out later


@dataclass(frozen=True)
class TableSetDefault(Command):
    table: str
    action: str
    args: tuple[tuple[str | None, str], ...]


@dataclass(frozen=True)
class TableModify(Command):
    table: str
    action: str
    handle: int
    args: tuple[tuple[str | None, str], ...]


@dataclass(frozen=True)
class TableDelete(Command):
    table: str
    handle: int


@dataclass(frozen=True)
class TableClear(Command):
    table: str


@dataclass(frozen=True)
class RemoveAll(Command):
    pass


@dataclass(frozen=True)
class TableDump(Command):
    table: str
    count_only: bool = False


@dataclass(frozen=True)
class ShowTables(Command):
    pass


@dataclass(frozen=True)
class MirroringAdd(Command):
    session: int
    port: int


@dataclass(frozen=True)
class MirroringAddMc(Command):
    session: int
    mgrp: int


@dataclass(frozen=True)
class McMgrpCreate(Command):
    mgrp: int


@dataclass(frozen=True)
class McNodeCreate(Command):
    rid: int
    ports: tuple[int, ...]


@dataclass(frozen=True)
class McNodeAssociate(Command):
    mgrp: int
    node: int


@dataclass(frozen=True)
class CounterRead(Command):
    name: str
    index: str


@dataclass(frozen=True)
class CounterWrite(Command):
    name: str
    index: str
    packets: int
    bytes_: int


@dataclass(frozen=True)
class CounterReset(Command):
    name: str


@dataclass(frozen=True)
class RegisterRead(Command):
    name: str
    index: int | None


@dataclass(frozen=True)
class RegisterWrite(Command):
    name: str
    index: int
    value: int


@dataclass(frozen=True)
class RegisterReset(Command):
    name: str


@dataclass(frozen=True)
class MeterSetRates(Command):
    name: str
    index: int | None          # None: every cell (meter_array_set_rates)
    rates: tuple[tuple[float, int], ...]


@dataclass(frozen=True)
class CheckCounter(Command):
    name: str
    index: str                 # a number or an entry id ($A / A)
    count_type: str | None     # packets | bytes | None (both must be zero)
    op: str
    value: int


# --- parsing --------------------------------------------------------------------------

_JOIN_OPERATORS = re.compile(r"\s*(:|&&&|/|\.\.|->)\s*")
_ENTRY_ID = re.compile(r"\)\s*=\s*(\$?[A-Za-z_][A-Za-z_0-9$]*)\s*$")
_PRIORITY = re.compile(r"[0-9]+")
_CHECK = re.compile(
    r"(?P<name>[^\s(]+)\s*\(\s*(?P<index>[^\s)]+)\s*\)"
    r"(?:\s+(?P<type>packets|bytes)\s*(?P<op>==|!=|<=|>=|<|>)\s*(?P<value>\S+))?\s*$",
    re.IGNORECASE)
_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


def _split_colon(word: str) -> tuple[str | None, str]:
    """``name:value`` split at the first ':' outside brackets (MAC values keep theirs)."""
    depth = 0
    for i, ch in enumerate(word):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == ":" and depth == 0:
            return word[:i].strip(), word[i + 1:].strip()
    return None, word.strip()


def _action_call(text: str, loc: SourceLoc | None) -> tuple[str, str, tuple]:
    """Split ``head ACTION(args) tail`` into (head + action name, tail, parsed args)."""
    open_at = text.find("(")
    close_at = text.rfind(")")
    if open_at < 0 or close_at < open_at:
        raise P4Error("expected an action call ACTION(ARG:VALUE, …)", loc)
    inner = text[open_at + 1:close_at].strip()
    args = tuple(_split_colon(a.strip()) for a in inner.split(",")) if inner else ()
    for name, value in args:
        if not value:
            raise P4Error(f"missing value for action argument '{name}'", loc)
    return text[:open_at], text[close_at + 1:].strip(), args


def _words(text: str, count: int | None, usage: str, loc: SourceLoc | None,
           at_least: int | None = None) -> list[str]:
    words = text.split()
    if (count is not None and len(words) != count) or (
            at_least is not None and len(words) < at_least):
        raise P4Error(f"usage: {usage}", loc)
    return words


def _num(word: str, loc: SourceLoc | None, what: str) -> int:
    return parse_int(word, loc, what)


def _parse_stf_add(rest: str, loc: SourceLoc | None) -> Command:
    entry_id = None
    m = _ENTRY_ID.search(rest)
    if m:
        entry_id = m.group(1)
        rest = rest[: m.start() + 1]
    head, tail, args = _action_call(rest, loc)
    if tail:
        raise P4Error(f"unexpected text '{tail}' after the action call", loc)
    words = _JOIN_OPERATORS.sub(r"\1", head).split()
    if len(words) < 2:
        raise P4Error("usage: add TABLE [PRIORITY] KEY:VALUE… ACTION(ARG:VALUE, …)", loc)
    table, action, middle = words[0], words[-1], words[1:-1]
    priority = None
    if middle and _PRIORITY.fullmatch(middle[0]):
        priority = int(middle[0])
        middle = middle[1:]
    keys = []
    for word in middle:
        name, value = _split_colon(word)
        if name is None or not value:
            raise P4Error(f"expected KEY:VALUE, found '{word}'", loc)
        keys.append((name, value))
    return TableAdd(loc, table, tuple(keys), action, args, priority, entry_id)


def _parse_setdefault(rest: str, loc: SourceLoc | None) -> Command:
    head, tail, args = _action_call(rest, loc)
    words = head.split()
    if len(words) != 2 or tail:
        raise P4Error("usage: setdefault TABLE ACTION(ARG:VALUE, …)", loc)
    return TableSetDefault(loc, words[0], words[1], args)


def _parse_cli_add(rest: str, loc: SourceLoc | None) -> Command:
    usage = "table_add TABLE ACTION KEY… => ARG… [PRIORITY]"
    if "=>" in rest:
        left, right = rest.split("=>", 1)
    else:
        left, right = rest, ""
    words = _words(left, None, usage, loc, at_least=2)
    keys = tuple((None, w) for w in words[2:])
    return TableAdd(loc, words[0], keys, words[1], (), cli_tail=tuple(right.split()))


def _parse_cli_set_default(rest: str, loc: SourceLoc | None) -> Command:
    words = _words(rest, None, "table_set_default TABLE ACTION ARG…", loc, at_least=2)
    return TableSetDefault(loc, words[0], words[1], tuple((None, w) for w in words[2:]))


def _parse_cli_modify(rest: str, loc: SourceLoc | None) -> Command:
    words = _words(rest, None, "table_modify TABLE ACTION HANDLE ARG…", loc, at_least=3)
    return TableModify(loc, words[0], words[1], _num(words[2], loc, "entry handle"),
                       tuple((None, w) for w in words[3:]))


def _parse_check_counter(rest: str, loc: SourceLoc | None) -> Command:
    m = _CHECK.match(rest.strip())
    if not m:
        raise P4Error("usage: check_counter NAME(INDEX) [packets|bytes OP VALUE]", loc)
    ctype = m.group("type").lower() if m.group("type") else None
    value = _num(m.group("value"), loc, "expected count") if ctype else 0
    return CheckCounter(loc, m.group("name"), m.group("index"), ctype,
                        m.group("op") or "==", value)


def _one_name(cls, usage: str):
    def parse(rest: str, loc: SourceLoc | None) -> Command:
        return cls(loc, _words(rest, 1, usage, loc)[0])
    return parse


def _two_numbers(cls, usage: str, what: tuple[str, str]):
    def parse(rest: str, loc: SourceLoc | None) -> Command:
        a, b = _words(rest, 2, usage, loc)
        return cls(loc, _num(a, loc, what[0]), _num(b, loc, what[1]))
    return parse


def _parse_mgrp_create(rest: str, loc: SourceLoc | None) -> Command:
    return McMgrpCreate(loc, _num(_words(rest, 1, "mc_mgrp_create MGRP", loc)[0], loc,
                                  "multicast group"))


def _parse_node_create(rest: str, loc: SourceLoc | None) -> Command:
    words = _words(rest, None, "mc_node_create RID PORT…", loc, at_least=1)
    ports = tuple(_num(w, loc, "port") for w in words[1:] if w != "|")
    return McNodeCreate(loc, _num(words[0], loc, "replication id"), ports)


def _parse_counter_read(rest: str, loc: SourceLoc | None) -> Command:
    name, index = _words(rest, 2, "counter_read NAME INDEX", loc)
    return CounterRead(loc, name, index)


def _parse_counter_write(rest: str, loc: SourceLoc | None) -> Command:
    name, index, pkts, byts = _words(rest, 4, "counter_write NAME INDEX PACKETS BYTES", loc)
    return CounterWrite(loc, name, index, _num(pkts, loc, "packets"), _num(byts, loc, "bytes"))


def _parse_register_read(rest: str, loc: SourceLoc | None) -> Command:
    words = _words(rest, None, "register_read NAME [INDEX]", loc, at_least=1)
    if len(words) > 2:
        raise P4Error("usage: register_read NAME [INDEX]", loc)
    index = _num(words[1], loc, "register index") if len(words) == 2 else None
    return RegisterRead(loc, words[0], index)


def _parse_register_write(rest: str, loc: SourceLoc | None) -> Command:
    name, index, value = _words(rest, 3, "register_write NAME INDEX VALUE", loc)
    return RegisterWrite(loc, name, _num(index, loc, "register index"),
                         _num(value, loc, "register value"))


def _rates(words: list[str], loc: SourceLoc | None) -> tuple[tuple[float, int], ...]:
    rates = []
    for word in words:
        rate, sep, burst = word.partition(":")
        try:
            if not sep:
                raise ValueError(word)
            rates.append((float(rate), int(burst, 0)))
        except ValueError:
            raise P4Error(f"expected RATE:BURST, found '{word}'", loc) from None
    return tuple(rates)


def _parse_meter_set_rates(rest: str, loc: SourceLoc | None) -> Command:
    words = _words(rest, None, "meter_set_rates NAME INDEX RATE:BURST…", loc, at_least=3)
    return MeterSetRates(loc, words[0], _num(words[1], loc, "meter index"),
                         _rates(words[2:], loc))


def _parse_meter_array_set_rates(rest: str, loc: SourceLoc | None) -> Command:
    words = _words(rest, None, "meter_array_set_rates NAME RATE:BURST…", loc, at_least=2)
    return MeterSetRates(loc, words[0], None, _rates(words[1:], loc))


def _parse_table_delete(rest: str, loc: SourceLoc | None) -> Command:
    table, handle = _words(rest, 2, "table_delete TABLE HANDLE", loc)
    return TableDelete(loc, table, _num(handle, loc, "entry handle"))


def _parse_remove(rest: str, loc: SourceLoc | None) -> Command:
    if rest.strip().lower() != "all":
        raise P4Error("usage: remove all", loc)
    return RemoveAll(loc)


def _parse_show_tables(rest: str, loc: SourceLoc | None) -> Command:
    _words(rest, 0, "show_tables", loc)
    return ShowTables(loc)


def _parse_num_entries(rest: str, loc: SourceLoc | None) -> Command:
    return TableDump(loc, _words(rest, 1, "table_num_entries TABLE", loc)[0], True)


_PARSERS: dict[str, Callable[[str, SourceLoc | None], Command]] = {
    "add": _parse_stf_add,
    "setdefault": _parse_setdefault,
    "remove": _parse_remove,
    "check_counter": _parse_check_counter,
    "table_add": _parse_cli_add,
    "table_set_default": _parse_cli_set_default,
    "table_modify": _parse_cli_modify,
    "table_delete": _parse_table_delete,
    "table_clear": _one_name(TableClear, "table_clear TABLE"),
    "table_dump": _one_name(TableDump, "table_dump TABLE"),
    "table_num_entries": _parse_num_entries,
    "show_tables": _parse_show_tables,
    "mirroring_add": _two_numbers(MirroringAdd, "mirroring_add SESSION PORT",
                                  ("mirror session", "port")),
    "mirroring_add_mc": _two_numbers(MirroringAddMc, "mirroring_add_mc SESSION MGRP",
                                     ("mirror session", "multicast group")),
    "mc_mgrp_create": _parse_mgrp_create,
    "mc_node_create": _parse_node_create,
    "mc_node_associate": _two_numbers(McNodeAssociate, "mc_node_associate MGRP NODE",
                                      ("multicast group", "node handle")),
    "counter_read": _parse_counter_read,
    "counter_write": _parse_counter_write,
    "counter_reset": _one_name(CounterReset, "counter_reset NAME"),
    "register_read": _parse_register_read,
    "register_write": _parse_register_write,
    "register_reset": _one_name(RegisterReset, "register_reset NAME"),
    "meter_set_rates": _parse_meter_set_rates,
    "meter_array_set_rates": _parse_meter_array_set_rates,
}

COMMAND_KEYWORDS = frozenset(_PARSERS)


def parse_command(text: str, loc: SourceLoc | None = None) -> Command:
    """Parse one control command (STF or ``simple_switch_CLI`` form)."""
    stripped = text.strip()
    keyword, _, rest = stripped.partition(" ")
    if not keyword:
        raise P4Error("empty command", loc)
    parser = _PARSERS.get(keyword.lower())
    if parser is None:
        raise P4Error(f"unknown command '{keyword}'", loc)
    return parser(rest.strip(), loc)


# --- execution ------------------------------------------------------------------------

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
        if self._tables is None:
            self._tables = list(self.control.tables())
        return names.resolve_table(self._tables, name, loc)

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
        action = names.resolve_action(table, cmd.action, cmd.loc)
        args, priority = cmd.args, cmd.priority
        if cmd.cli_tail is not None:
            tail = list(cmd.cli_tail)
            if len(tail) == len(action.params) + 1:
                bmv2_priority = parse_int(tail.pop(), cmd.loc, "priority")
                priority = CLI_PRIORITY_BASE - bmv2_priority
            args = tuple((None, w) for w in tail)
        handle = self.control.table_add(table.name, self._keys(table, cmd.keys, cmd.loc),
                                        action.name, self._args(action, args, cmd.loc),
                                        priority)
        if cmd.entry_id is not None:
            self.entry_ids[cmd.entry_id.lstrip("$")] = handle
        return Outcome(f"Entry has been added with handle {handle}")

    def _do_TableSetDefault(self, cmd: TableSetDefault) -> Outcome:
        table = self._table(cmd.table, cmd.loc)
        action = names.resolve_action(table, cmd.action, cmd.loc)
        self.control.table_set_default(table.name, action.name,
                                       self._args(action, cmd.args, cmd.loc))
        return Outcome(f"Default action of {table.name} set to {action.name}")

    def _do_TableModify(self, cmd: TableModify) -> Outcome:
        table = self._table(cmd.table, cmd.loc)
        action = names.resolve_action(table, cmd.action, cmd.loc)
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
        lines = []
        for t in sorted(self.control.tables(), key=lambda t: t.name):
            keys = ", ".join(f"{k.name}({k.match_kind}, {k.width})" for k in t.keys)
            lines.append(f"{t.name:30} [{keys}]")
        return Outcome("\n".join(lines))

    # -- replication
    def _do_MirroringAdd(self, cmd: MirroringAdd) -> Outcome:
        self.control.mirroring_add(cmd.session, cmd.port)
        return Outcome(f"Mirror session {cmd.session} -> port {cmd.port}")

    def _do_MirroringAddMc(self, cmd: MirroringAddMc) -> Outcome:
        self.control.mirroring_add_mc(cmd.session, cmd.mgrp)
        return Outcome(f"Mirror session {cmd.session} -> multicast group {cmd.mgrp}")

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
