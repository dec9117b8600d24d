"""What lowered code runs with: control-flow signals, per-packet state, switch services.

The lowering turns each block into generated Python; this module is that code's
support at run time, shared with the pipeline that drives it, for every architecture.

Generated code signals P4 control flow with Python exceptions (``exit`` unwinds every
enclosing control; a parser error unwinds every enclosing parser), and reaches the
packet being processed through ``_RT.pkt``, because forwarding externs (v1model's
``clone``, ``resubmit``; PNA's ``send_to_port``) act on the packet rather than on their
arguments. Each architecture's runtime (softswitch.v1model.runtime,
softswitch.pna.runtime) extends :class:`Runtime` with those.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from softswitch.diagnostics import P4Error, SourceLoc

MAX_DIGESTS = 65536
MAX_LOGS = 4096


class ExitSignal(Exception):
    """``exit``: carries the copy-out values of the control it passes through."""

    def __init__(self, values: Any = None) -> None:
        super().__init__()
        self.values = values


class ParserError(Exception):
    """A parser error (``verify``, extract past the end, no select match, reject)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code
        self.values: Any = None


class SwitchAbort(P4Error):
    """BMv2 aborts the whole switch (failed ``assert``/``assume``): reported like any
    other error in the user's program, at the failing call."""


@dataclass(slots=True)
class PacketState:
    """Per-packet state every architecture has: the length meters and counters see."""

    length: int = 0


def shl(value: int, amount: int, width: int) -> int:
    """``value << amount`` in ``width`` bits without building huge intermediates."""
    if amount >= width:
        return 0
    return (value << amount) & ((1 << width) - 1)


def shl_signed(value: int, amount: int, width: int) -> int:
    if amount >= width:
        return 0
    half = 1 << (width - 1)
    return (((value << amount) + half) & ((1 << width) - 1)) - half


class Runtime:
    """The switch-wide services generated code reaches as ``_RT``.

    ``pkt`` and ``payload`` are swapped per pipeline pass by the traffic manager; the
    rest (random source, digests, logs) lives as long as the switch.
    """

    def __init__(self, seed: int = 0) -> None:
        import random

        from softswitch.core import hashes
        self._hashes = hashes
        self.rng = random.Random(seed)
        self.pkt = PacketState()
        self.payload = b""
        # Bounded, so a long-running switch whose digests nobody drains (or whose
        # program logs every packet) does not grow without end: the oldest go first.
        self.digests: deque[tuple[int, str, tuple[Any, ...]]] = deque(maxlen=MAX_DIGESTS)
        self.logs: deque[str] = deque(maxlen=MAX_LOGS)

    def hash(self, algo: str, data: bytes) -> int:
        try:
            return self._hashes.compute(algo, data, self.rng)
        except KeyError:
            raise P4Error(f"hash algorithm '{algo}' is not supported") from None

    def random(self, lo: int, hi: int) -> int:
        if hi < lo:
            return lo
        return lo + self.rng.randrange(hi - lo + 1)

    def digest(self, receiver: int, type_name: str, values: tuple[Any, ...]) -> None:
        self.digests.append((receiver, type_name, values))

    def abort(self, what: str, loc: SourceLoc | None) -> None:
        raise SwitchAbort(f"{what} failed while processing a packet; BMv2 aborts the "
                          "switch here", loc)

    def loop_limit(self, loc: SourceLoc | None) -> None:
        raise SwitchAbort("for loop still running after 1048576 iterations; its "
                          "condition is probably always true", loc)

    def log(self, msg: str, values: tuple[Any, ...]) -> None:
        parts = msg.split("{}")
        out = parts[0]
        for i, rest in enumerate(parts[1:]):
            out += (str(values[i]) if i < len(values) else "{}") + rest
        self.logs.append(out)
