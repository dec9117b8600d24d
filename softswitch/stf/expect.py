"""Packet expectations of an STF test and how received packets are checked against them.

The rules are those of p4c's BMv2 STF driver (``backends/bmv2/bmv2stf.py``), because the
corpus' expectations were written against it:

* An expectation is a string of hex nibbles where ``*`` matches any nibble. Without a
  trailing ``$`` it is a *prefix*: a longer received packet still matches, a shorter one
  fails. With ``$`` the received packet must have exactly that many nibbles.
* ``expect PORT`` without data expects one packet of any content on that port.
* Per port, the received packets must equal the expected ones in number and order;
  there is no ordering between ports.
* Only *observed* ports are checked: the driver attaches BMv2 interfaces only to the
  ports named in some ``packet`` or ``expect`` command, so packets sent anywhere else are
  not captured and not failures (a packet emitted on an input-only port is, because
  zero packets are expected there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from softswitch.diagnostics import P4Error, SourceLoc

_PATTERN_CHARS = re.compile(r"[0-9a-fA-F*]*")


@dataclass(frozen=True)
class ExpectedPacket:
    """One ``expect`` line: ``pattern`` is None for "any packet"."""

    port: int
    pattern: str | None        # upper-case hex nibbles and '*'
    exact_length: bool = False
    loc: SourceLoc | None = None

    def describe(self) -> str:
        if self.pattern is None:
            return "<any packet>"
        return self.pattern + ("$" if self.exact_length else "")


def parse_expectation(port: int, words: list[str], loc: SourceLoc | None) -> ExpectedPacket:
    """Build an expectation from the data words of ``expect PORT words…``.

    Whitespace between words is insignificant (as in the driver, which joins them), and
    ``$`` may stand alone or end the last word.
    """
    text = "".join(words)
    if not text:
        return ExpectedPacket(port, None, False, loc)
    exact = text.endswith("$")
    if exact:
        text = text[:-1]
    if not _PATTERN_CHARS.fullmatch(text):
        bad = next(c for c in text if not _PATTERN_CHARS.fullmatch(c))
        raise P4Error(f"invalid character {bad!r} in expected packet data "
                      "(hex digits, '*' and a final '$' only)", loc)
    if not text:
        raise P4Error("'$' without expected packet data", loc)
    return ExpectedPacket(port, text.upper(), exact, loc)


def mismatch(expected: ExpectedPacket, data: bytes) -> str | None:
    """Why ``data`` does not satisfy ``expected`` (None when it does)."""
    if expected.pattern is None:
        return None
    got = data.hex().upper()
    want = expected.pattern
    if len(got) < len(want):
        return f"received packet too short: {len(got)} vs {len(want)} hex digits"
    for i, (w, g) in enumerate(zip(want, got, strict=False)):
        if w != "*" and w != g:
            return f"differs at hex digit {i} (byte {i // 2}): expected {w}, received {g}"
    if expected.exact_length and len(got) > len(want):
        return f"received packet too long: {len(got)} vs {len(want)} hex digits"
    return None


@dataclass
class PortReport:
    """Outcome of checking one observed port."""

    port: int
    expected: list[ExpectedPacket]
    received: list[bytes]
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def check_port(port: int, expected: list[ExpectedPacket], received: list[bytes]) -> PortReport:
    """Compare one port's received packets with its expectations (count, then each)."""
    problems: list[str] = []
    if len(expected) != len(received):
        problems.append(f"expected {len(expected)} packet(s), received {len(received)}")
    for i, (exp, got) in enumerate(zip(expected, received, strict=False)):
        why = mismatch(exp, got)
        if why is not None:
            where = f" (expect at {exp.loc})" if exp.loc is not None else ""
            problems.append(f"packet #{i + 1}{where}: {why}")
    return PortReport(port, expected, received, problems)


def check_outputs(expected: dict[int, list[ExpectedPacket]], received: dict[int, list[bytes]],
                  observed: set[int]) -> list[PortReport]:
    """Check every observed port, in port order."""
    return [check_port(p, expected.get(p, []), received.get(p, [])) for p in sorted(observed)]


_SHORT = 64  # hex digits shown of packets on ports that passed


def _shorten(text: str, full: bool) -> str:
    if full or len(text) <= _SHORT:
        return text
    return f"{text[:_SHORT]}… ({(len(text) + 1) // 2} bytes)"


def format_report(reports: list[PortReport], ignored: dict[int, int]) -> str:
    """Human-readable expected vs received listing, one block per port (packets in full
    on failing ports, shortened on passing ones)."""
    lines: list[str] = []
    for rep in reports:
        status = "ok" if rep.ok else "FAIL"
        lines.append(f"port {rep.port}: {status} (expected {len(rep.expected)}, "
                     f"received {len(rep.received)})")
        for i in range(max(len(rep.expected), len(rep.received))):
            exp = rep.expected[i].describe() if i < len(rep.expected) else "-"
            got = rep.received[i].hex().upper() if i < len(rep.received) else "-"
            lines.append(f"  #{i + 1} expected {_shorten(exp, not rep.ok)}")
            lines.append(f"  #{i + 1} received {_shorten(got, not rep.ok)}")
        lines.extend(f"  {p}" for p in rep.problems)
    for port, count in sorted(ignored.items()):
        lines.append(f"port {port}: {count} packet(s) not checked (port not named in the STF)")
    return "\n".join(lines)
