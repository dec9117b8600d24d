"""The runtime channel's wire: one JSON object per line each way.

``{"cmd": "..."}`` from the client, ``{"ok": true|false, "output": "..."}`` back, in
order. Both servers of a connection read and write it through these few functions: the
connection's own thread (:class:`~softswitch.daemon.cli_channel.commands.RuntimeChannelServer`)
and the port loop (:class:`~softswitch.daemon.cli_channel.connection.LoopConnection`), so a
line too long, a line that is not a command and the end of the stream mean the same
thing on both. :class:`Commands` is what a connection served on the port loop takes of
the channel (of the loop: :class:`~softswitch.daemon.ports.dataplane.PortLoop`).
"""

from __future__ import annotations

import json
from typing import Any, Protocol

MAX_LINE = 1 << 20                # a longer line ends the connection (after its replies)
TOO_LONG = {"ok": False, "output": "Error: command too long"}
NOT_A_COMMAND = {"ok": False, "output": 'Error: expected {"cmd": "..."}'}
IDLE_SECONDS = 600                # an idle connection is closed after ten minutes


def take_lines(pending: bytearray, data: bytes) -> tuple[list[bytes], bool]:
    """Add what one read brought (``data``; empty: the client is done) to ``pending``:
    the complete lines, and whether a line is too long (then the lines before it, and
    the connection ends after their replies: the rest cannot be trusted). ``pending``
    keeps the incomplete last line; at the end, the unterminated one is a line too."""
    pending += data
    lines = bytes(pending).split(b"\n")
    rest = lines.pop()
    pending[:] = rest
    if not data and rest:
        lines.append(rest)
    long_at = next((i for i, line in enumerate(lines) if len(line) > MAX_LINE), None)
    return lines[:long_at], long_at is not None or len(pending) > MAX_LINE


def encode_replies(replies: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in replies).encode()


def command_of(raw: bytes) -> str | None:
    """The command of one line, ``{"cmd": "..."}``; None if it is not one."""
    try:
        cmd = json.loads(raw)["cmd"]
    except (ValueError, KeyError, TypeError):
        return None
    return cmd if isinstance(cmd, str) else None


class Commands(Protocol):
    """What answers a connection's commands (:class:`softswitch.daemon.cli_channel.commands
    .RuntimeChannel`): ``(ok, output)`` per command, in order."""

    def execute_all(self, lines: list[str]) -> list[tuple[bool, str]]: ...


