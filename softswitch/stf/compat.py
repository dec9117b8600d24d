"""Where an STF file would mean something else under p4c's own BMv2 STF driver.

``softswitch stf`` reads a superset of p4c's STF (``bmv2stf.py`` and
``tools/stf/stf_parser.py``, p4c 1.2.5.16): it also takes ``simple_switch_CLI`` commands
and values, and runs the lines strictly in order. A file that relies on any of that fails
under p4c's driver, or passes with another meaning. :func:`check` finds such lines; the
runner reports each as a warning (``FILE:LINE: warning: … [p4c-KIND]``), so a test can
keep its files runnable on both targets. The kinds are :class:`CompatNote`'s.

Not reported, because softswitch is stricter or the same: ``check_counter`` (the driver
ignores it, softswitch checks it), ``wait`` (a no-op in both), ``expect PORT`` without
data (one packet of any content in both), ``$`` and ``*`` in expectations.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from softswitch.core.control import TableInfo
from softswitch.diagnostics import P4Error, SourceLoc
from softswitch.stf import commands as c
from softswitch.stf import names
from softswitch.stf.reader import PacketCmd

# Commands of p4c's STF grammar (bmv2stf.py's Bmv2StfParser): keyword -> whether the
# driver executes it (False: parsed, then "ignoring stf command").
# ("remove" is a keyword too, but its lexer returns 'all' as an ID, not ALL, so
# "remove all" is a parse error.)
STF_KEYWORDS = {
    "add": True, "setdefault": True, "check_counter": True,
    "mirroring_add": True, "mirroring_add_mc": True, "mirroring_delete": True,
    "mirroring_get": True, "mc_mgrp_create": True, "mc_node_create": True,
    "mc_node_update": False, "mc_node_associate": True, "counter_read": True,
    "counter_write": True, "register_read": True, "register_write": True,
    "register_reset": True, "meter_get_rates": True, "meter_set_rates": True,
    "meter_array_set_rates": True,
}
# Commands that change the switch (the "order" check).
_CONTROL = (c.TableAdd, c.TableSetDefault, c.TableModify, c.TableDelete, c.TableClear,
            c.MirroringAdd, c.MirroringAddMc, c.McMgrpCreate, c.McNodeCreate,
            c.McNodeAssociate, c.CounterWrite, c.CounterReset, c.RegisterWrite,
            c.RegisterReset, c.MeterSetRates)
_DRIVER_KINDS = ("exact", "ternary", "lpm")
_NUMBER = re.compile(r"[0-9]+|0x[0-9a-fA-F]+|0b[01]+")
_STARRED = re.compile(r"0x[0-9a-fA-F*]+|0b[01*]+")


@dataclass(frozen=True)
class CompatNote:
    """One line p4c's driver would reject or read differently; ``kind`` is one of:

    ``grammar``
        not in p4c's STF grammar, so p4c's driver rejects the file: ``simple_switch_CLI``
        commands (``table_add``, ``counter_reset`` …), ``register_read`` without an index,
        and ``remove all`` (in the grammar, but the lexer reads ``all`` as a name: "parse
        error: Unexpected token 'all'"; softswitch clears the tables).
    ``syntax``
        a value p4c's driver cannot read or translate: dotted IPv4, MAC and IPv6 addresses,
        ``&&&`` masks, ``value/len`` (an LPM written so crashes the driver), a decimal or
        ``0X`` ternary/LPM value (it needs ``0x``/``0b`` literals, ``*`` digits as wildcards),
        ``*`` digits in an exact key or an action argument, ``-`` and ``_`` in numbers.
    ``match-kind``
        an entry of a table with a ``range`` or ``optional`` key: the driver cannot add one
        (``Unexpected key type range``), whatever the entry's values.
    ``priority``
        an entry of a table with ternary keys without a priority: the driver crashes.
    ``ignored``
        parsed by the driver but never executed (``mc_node_update``); the softswitch runner
        ignores it too.
    ``order``
        a control command after a packet. The driver feeds BMv2 from pcap files and BMv2
        reads them only once every input port has a packet waiting or is closed (at the end
        of the file), so the command may reach the switch before the packets written above
        it: on BMv2 the file's meaning depends on timing.
    """

    loc: SourceLoc | None
    kind: str
    message: str

    def __str__(self) -> str:
        where = f"{self.loc}: " if self.loc is not None else ""
        return f"{where}warning: {self.message} [p4c-{self.kind}]"


def _value_note(kind: str, text: str, what: str) -> str | None:
    """Why p4c's driver cannot take ``text`` as a ``kind`` key (or "arg") value."""
    pattern = _STARRED if kind in ("ternary", "lpm") else _NUMBER
    if pattern.fullmatch(text):
        return None
    if kind in ("ternary", "lpm"):
        return (f"{what} '{text}': p4c's driver takes a 0x/0b literal whose '*' digits are "
                f"wildcards here (e.g. 0x0a00****), not this")
    return f"{what} '{text}': p4c's driver takes a decimal, 0x or 0b number here"


def _add_notes(cmd: c.TableAdd, tables: list[TableInfo]) -> Iterable[CompatNote]:
    try:
        table = names.resolve_table(tables, cmd.table, cmd.loc)
    except P4Error:
        return                       # the runner reports it
    kinds = {k.match_kind for k in table.keys}
    odd = sorted(kinds - set(_DRIVER_KINDS) - {"selector"})
    if odd:
        yield CompatNote(cmd.loc, "match-kind",
                         f"table {table.name} has {'/'.join(odd)} keys: p4c's driver cannot "
                         "add an entry to it ('Unexpected key type')")
    if kinds & {"ternary", "range", "optional"} and cmd.priority is None:
        yield CompatNote(cmd.loc, "priority",
                         f"an entry of {table.name} (ternary keys) without a priority: "
                         "p4c's driver crashes on it")
    for name, text in cmd.keys:
        try:
            key = names.resolve_key(table, name or text, cmd.loc)
        except P4Error:
            continue
        kind = key.match_kind if key.match_kind in _DRIVER_KINDS else "exact"
        if key.match_kind not in _DRIVER_KINDS and (".." in text or "->" in text):
            continue                 # covered by the match-kind note
        why = _value_note(kind, text, f"key {name}")
        if why:
            yield CompatNote(cmd.loc, "syntax", why)
    for name, text in cmd.args:
        why = _value_note("exact", text, f"argument {name}")
        if why:
            yield CompatNote(cmd.loc, "syntax", why)


def check(commands: list, tables: list[TableInfo]) -> list[CompatNote]:
    """Every line of ``commands`` (parsed STF, in order) that p4c's BMv2 STF driver would
    reject or read differently; ``tables`` are the switch's."""
    notes: list[CompatNote] = []
    seen_packet = False
    for cmd in commands:
        if isinstance(cmd, PacketCmd):
            seen_packet = True
            continue
        if not isinstance(cmd, c.Command):
            continue
        keyword = cmd.keyword
        if keyword and keyword not in STF_KEYWORDS:
            notes.append(CompatNote(cmd.loc, "grammar",
                                    f"'{keyword}' is not STF: p4c's driver rejects the file"))
        elif keyword and not STF_KEYWORDS[keyword]:
            notes.append(CompatNote(cmd.loc, "ignored",
                                    f"p4c's driver parses '{keyword}' but never executes it; "
                                    "softswitch ignores it too"))
        if isinstance(cmd, c.TableAdd) and keyword == "add":
            notes.extend(_add_notes(cmd, tables))
        if isinstance(cmd, c.TableSetDefault) and keyword == "setdefault":
            for name, text in cmd.args:
                why = _value_note("exact", text, f"argument {name}")
                if why:
                    notes.append(CompatNote(cmd.loc, "syntax", why))
        if isinstance(cmd, (c.RegisterRead,)) and cmd.index is None:
            notes.append(CompatNote(cmd.loc, "grammar",
                                    "register_read without an index is not STF"))
        if seen_packet and isinstance(cmd, _CONTROL) and keyword in STF_KEYWORDS:
            notes.append(CompatNote(
                cmd.loc, "order",
                f"'{keyword}' after a packet: on BMv2, p4c's driver may apply it before the "
                "packets above are processed (BMv2 reads its pcap inputs only when each has "
                "a packet waiting or is closed)"))
    return notes
