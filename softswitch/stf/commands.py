"""The control command language shared by STF files and the runtime CLI channel.

One parser turns a line into a typed command, and one
:class:`~softswitch.stf.session.CommandSession` executes commands against any
:class:`~softswitch.core.control.SwitchControl`, so an STF test and an operator typing
``simple_switch_CLI`` commands program the switch identically.

The forms each command takes are listed on :func:`parse_command`.

Names resolve as :mod:`softswitch.stf.names` documents; values parse as
:mod:`softswitch.stf.values` documents; :mod:`softswitch.stf.session` executes. A
check without a condition (``check_counter c(3)``) requires the cell to be zero in
packets and bytes. Meter rates (BMv2 units: per microsecond, committed then peak) need
a switch that offers ``meter_set_rates``/``meter_array_set_rates`` beyond the
SwitchControl protocol. ``register_read`` needs an INDEX (SwitchControl has no sizes).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from softswitch.diagnostics import P4Error, SourceLoc
from softswitch.stf.values import parse_int


@dataclass(frozen=True)
class Command:
    loc: SourceLoc | None
    # the keyword it was written with (lower case): "add" and "table_add" both make a
    # TableAdd, but only the first is STF that p4c's driver reads (softswitch.stf.compat)
    keyword: str = field(default="", compare=False, kw_only=True)


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
class ShowActions(Command):
    table: str | None          # None: the actions of every table


@dataclass(frozen=True)
class TableInfoCmd(Command):
    table: str


@dataclass(frozen=True)
class MirroringAdd(Command):
    session: int
    port: int


@dataclass(frozen=True)
class MirroringAddMc(Command):
    session: int
    mgrp: int


@dataclass(frozen=True)
class MirroringDelete(Command):
    session: int


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


_Parser = Callable[[str, SourceLoc | None], "Command"]


def _one_name(cls: type, usage: str) -> _Parser:
    """A parser for ``KEYWORD NAME`` commands building ``cls(loc, NAME)``."""
    def parse(rest: str, loc: SourceLoc | None) -> Command:
        return cls(loc, _words(rest, 1, usage, loc)[0])
    return parse


def _two_numbers(cls: type, usage: str, what: tuple[str, str]) -> _Parser:
    """A parser for ``KEYWORD N M`` commands building ``cls(loc, N, M)``."""
    def parse(rest: str, loc: SourceLoc | None) -> Command:
        a, b = _words(rest, 2, usage, loc)
        return cls(loc, _num(a, loc, what[0]), _num(b, loc, what[1]))
    return parse


def _parse_mirroring_delete(rest: str, loc: SourceLoc | None) -> Command:
    return MirroringDelete(loc, _num(_words(rest, 1, "mirroring_delete SESSION", loc)[0], loc,
                                     "mirror session"))


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


def _parse_show_actions(rest: str, loc: SourceLoc | None) -> Command:
    _words(rest, 0, "show_actions", loc)
    return ShowActions(loc, None)


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
    "show_actions": _parse_show_actions,
    "table_show_actions": _one_name(ShowActions, "table_show_actions TABLE"),
    "table_info": _one_name(TableInfoCmd, "table_info TABLE"),
    "mirroring_add": _two_numbers(MirroringAdd, "mirroring_add SESSION PORT",
                                  ("mirror session", "port")),
    "mirroring_add_mc": _two_numbers(MirroringAddMc, "mirroring_add_mc SESSION MGRP",
                                     ("mirror session", "multicast group")),
    "mirroring_delete": _parse_mirroring_delete,
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
    """Parse one control command (STF or ``simple_switch_CLI`` form).

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
        table_info TABLE                          table_show_actions TABLE      show_actions

    Both::

        mirroring_add SESSION PORT                mirroring_add_mc SESSION MGRP
        mirroring_delete SESSION
        mc_mgrp_create MGRP                       mc_node_create RID PORT…
        mc_node_associate MGRP NODE
        counter_read NAME INDEX                   counter_write NAME INDEX PACKETS BYTES
        counter_reset NAME                        register_read NAME [INDEX]
        register_write NAME INDEX VALUE           register_reset NAME
        meter_set_rates NAME INDEX RATE:BURST…    meter_array_set_rates NAME RATE:BURST…
    """
    stripped = text.strip()
    keyword, _, rest = stripped.partition(" ")
    if not keyword:
        raise P4Error("empty command", loc)
    parser = _PARSERS.get(keyword.lower())
    if parser is None:
        raise P4Error(f"unknown command '{keyword}'", loc)
    return replace(parser(rest.strip(), loc), keyword=keyword.lower())

