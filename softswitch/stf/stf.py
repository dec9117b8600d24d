"""STF packet tests: reading the file and running it against a switch.

An STF file is a sequence of lines; ``#`` starts a comment, keywords are
case-insensitive. Besides the control commands of :mod:`softswitch.stf.commands` it has

    packet PORT HEX…          inject a packet (hex digits; spaces are ignored)
    expect PORT [HEX…] [$]    expect a packet on PORT (see softswitch.stf.expect)
    wait                      let the switch finish (a no-op: injection is synchronous)

Like p4c's ``bmv2stf.py``, the runner executes the lines in order (table updates between
packets take effect for later packets), collects every packet the switch emits, and only
at the end compares them with *all* expectations, port by port. Any other directive is
an error naming ``file:line``, never skipped — except what p4c's driver parses and then
ignores (``mc_node_update``) or only prints (``mirroring_get``, ``meter_get_rates``):
softswitch does the same.

``StfResult.warnings`` lists the lines p4c's driver would reject or read differently
(:mod:`softswitch.stf.compat`); ``softswitch stf`` prints them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from softswitch.diagnostics import P4Error, SourceLoc
from softswitch.stf import compat
from softswitch.stf.commands import Command, parse_command
from softswitch.stf.compat import CompatNote
from softswitch.stf.expect import (
    ExpectedPacket,
    PortReport,
    check_outputs,
    format_report,
    parse_expectation,
)
from softswitch.stf.session import CommandSession
from softswitch.v1model.control import SwitchControl

_HEX = re.compile(r"[0-9a-fA-F]*")


@dataclass(frozen=True)
class PacketCmd:
    loc: SourceLoc
    port: int
    data: bytes


@dataclass(frozen=True)
class ExpectCmd:
    loc: SourceLoc
    expected: ExpectedPacket


@dataclass(frozen=True)
class WaitCmd:
    loc: SourceLoc


@dataclass(frozen=True)
class IgnoredCmd(Command):
    """A command p4c's driver parses but does not execute, or whose output nothing checks."""


# p4c's STF grammar has these, and its driver never changes the switch with them.
_IGNORED = ("mc_node_update", "mirroring_get", "meter_get_rates")

StfCommand = PacketCmd | ExpectCmd | WaitCmd | Command


def _port(words: list[str], keyword: str, loc: SourceLoc) -> int:
    if not words or not words[0].isdigit():
        raise P4Error(f"usage: {keyword} PORT …: missing or invalid port number", loc)
    return int(words[0])


def _parse_packet(words: list[str], loc: SourceLoc) -> PacketCmd:
    port = _port(words, "packet", loc)
    text = "".join(words[1:])
    if not text:
        raise P4Error("packet without data", loc)
    if not _HEX.fullmatch(text):
        raise P4Error("packet data must be hex digits", loc)
    if len(text) % 2:
        raise P4Error(f"packet data has an odd number of hex digits ({len(text)})", loc)
    return PacketCmd(loc, port, bytes.fromhex(text))


def parse_stf_line(line: str, loc: SourceLoc) -> StfCommand | None:
    """One STF line to a command (None for blank and comment-only lines)."""
    text = line.split("#", 1)[0].strip()
    if not text:
        return None
    words = text.split()
    keyword = words[0].lower()
    if keyword == "packet":
        return _parse_packet(words[1:], loc)
    if keyword == "expect":
        port = _port(words[1:], "expect", loc)
        return ExpectCmd(loc, parse_expectation(port, words[2:], loc))
    if keyword == "wait":
        if len(words) > 1:
            raise P4Error("usage: wait", loc)
        return WaitCmd(loc)
    if keyword in _IGNORED:
        return IgnoredCmd(loc, keyword=keyword)
    return parse_command(text, loc)


def parse_stf_text(text: str, filename: str = "<stf>") -> list[StfCommand]:
    """All commands of an STF text, each with its ``file:line`` location."""
    commands: list[StfCommand] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        col = len(line) - len(line.lstrip()) + 1
        cmd = parse_stf_line(line, SourceLoc(filename, lineno, col))
        if cmd is not None:
            commands.append(cmd)
    return commands


def parse_stf_file(path: str | Path) -> list[StfCommand]:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise P4Error(f"cannot read STF file: {err.strerror}", SourceLoc(str(path), 0, 0)) \
            from None
    return parse_stf_text(text, str(path))


@dataclass
class StfResult:
    """Outcome of an STF test: ``ok`` only when every expectation and check is met."""

    ok: bool
    report: str
    ports: list[PortReport] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    warnings: list[CompatNote] = field(default_factory=list)


@dataclass
class _Run:
    """What a run accumulates: expectations, captured packets, check failures."""

    expected: dict[int, list[ExpectedPacket]] = field(default_factory=dict)
    received: dict[int, list[bytes]] = field(default_factory=dict)
    observed: set[int] = field(default_factory=set)
    failures: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)


def _step(session: CommandSession, run: _Run, cmd: StfCommand) -> None:
    if isinstance(cmd, PacketCmd):
        run.observed.add(cmd.port)
        for out in session.control.inject(cmd.port, cmd.data):
            run.received.setdefault(out.port, []).append(bytes(out.data))
    elif isinstance(cmd, ExpectCmd):
        run.observed.add(cmd.expected.port)
        run.expected.setdefault(cmd.expected.port, []).append(cmd.expected)
    elif isinstance(cmd, WaitCmd):
        return
    elif isinstance(cmd, IgnoredCmd):
        run.log.append(f"{cmd.loc}: '{cmd.keyword}' ignored, as p4c's BMv2 STF driver does")
    else:
        outcome = session.execute(cmd)
        if outcome.text:
            run.log.append(f"{cmd.loc}: {outcome.text}")
        if outcome.failure:
            run.failures.append(f"{cmd.loc}: {outcome.failure}")


def run_commands(control: SwitchControl, commands: list[StfCommand]) -> StfResult:
    """Execute parsed STF commands against ``control`` and check the outputs."""
    session = CommandSession(control)
    run = _Run()
    warnings = compat.check(commands, list(control.tables()))
    for cmd in commands:
        _step(session, run, cmd)
    ports = check_outputs(run.expected, run.received, run.observed)
    ignored = {p: len(pkts) for p, pkts in run.received.items() if p not in run.observed}
    report = format_report(ports, ignored)
    dropped = getattr(control, "priority_drops", 0)
    if dropped:
        queues = getattr(control, "priority_queues", None)
        note = (f"{dropped} packet(s) dropped: standard_metadata.priority names no queue of "
                f"the switch's {queues} per port (BMv2: 'Priority out of range'; give the "
                "switch more with --priority-queues N)")
        run.log.append(note)
        report = f"{report}\n{note}" if report else note
    if run.failures:
        report = "\n".join([report, *run.failures]) if report else "\n".join(run.failures)
    ok = all(p.ok for p in ports) and not run.failures
    return StfResult(ok, report, ports, run.failures, run.log, warnings)


def run_stf(program_path: str, stf_path: str, include_dirs=(), defines=None,
            priority_queues: int = 1) -> StfResult:
    """Compile ``program_path``, load it into a switch and run the STF test on it.

    The STF file is parsed first, so a malformed test is reported (``P4Error`` naming
    ``file:line``) before any compilation work. ``priority_queues`` is simple_switch's
    ``--priority-queues``: p4c's STF driver starts simple_switch without it, so by default
    there is one queue per port and a packet whose ``standard_metadata.priority`` is not
    0 is dropped, as on BMv2.
    """
    commands = parse_stf_file(stf_path)
    from softswitch.v1model.switch import Switch  # the target loads lazily: it is heavy

    switch = Switch.from_file(program_path, tuple(include_dirs or ()), defines)
    switch.priority_queues = priority_queues
    return run_commands(switch, commands)
