"""Reading an STF file: each line to a typed command with its ``file:line``.

An STF file is a sequence of lines; ``#`` starts a comment, keywords are
case-insensitive. Besides the control commands of :mod:`softswitch.stf.commands` it has

    packet PORT HEX…          inject a packet (hex digits; spaces are ignored)
    expect PORT [HEX…] [$]    expect a packet on PORT (see softswitch.stf.expect)
    wait                      let the switch finish (a no-op: injection is synchronous)

What p4c's driver parses and then ignores (``mc_node_update``) or only prints
(``mirroring_get``, ``meter_get_rates``) becomes an :class:`IgnoredCmd`. Running the
commands is :mod:`softswitch.stf.stf`'s job.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from softswitch.diagnostics import P4Error, SourceLoc
from softswitch.stf.commands import Command, parse_command
from softswitch.stf.expect import ExpectedPacket, parse_expectation

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
