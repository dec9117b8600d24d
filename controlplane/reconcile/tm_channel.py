"""softswitch's runtime channel: queue weights, rates, depths and link rates.

P4Runtime has no message for traffic-manager settings; BMv2 takes them over Thrift
(``simple_switch_CLI``), softswitch over a JSON-lines TCP channel that speaks the same
commands (``softswitch/runtime_channel.py``). Settings are absolute, so re-sending
them on every apply is idempotent.
"""

from __future__ import annotations

import json
import socket

from controlplane.p4rt.errors import P4RuntimeClientError


class RuntimeChannelError(P4RuntimeClientError):
    """The channel is unreachable or refused a command."""


def send_commands(address: str, commands: list[str], timeout: float = 10.0) -> int:
    """Send each command; the first refusal raises (naming the command)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as sock:
            stream = sock.makefile("rwb")
            for cmd in commands:
                stream.write((json.dumps({"cmd": cmd}) + "\n").encode())
                stream.flush()
                line = stream.readline()
                if not line:
                    raise RuntimeChannelError(f"{address}: runtime channel closed")
                reply = json.loads(line)
                if not reply.get("ok"):
                    raise RuntimeChannelError(f"{address}: {cmd!r} refused: "
                                              f"{reply.get('output', '')}")
    except OSError as exc:
        raise RuntimeChannelError(f"{address}: runtime channel: {exc.strerror or exc}") \
            from None
    except json.JSONDecodeError:
        raise RuntimeChannelError(f"{address}: runtime channel answered garbage") from None
    return len(commands)
