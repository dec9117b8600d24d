"""Batched port I/O: every ready frame of a socket in one call, a burst out in one call.

Per frame, Python's ``socket.recvmsg``/``send`` cost more than the compiled pipeline
itself, so the port loop reads and writes bursts. ``batchio.c`` does it with
``recvmmsg``/``sendmmsg`` (the switch's ports: a ``PACKET_RX_RING``, ``ring_recv``),
compiled once into the fast path's cache; where it is not built (no compiler, or
``SOFTSWITCH_FASTPATH=off``: ``fastpath.build.load_helper``) the same functions loop over
the single-frame socket calls, so behaviour is identical either way, only slower.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

log = logging.getLogger("softswitch.daemon.ports")
SOURCE = Path(__file__).with_name("batchio.c")
MAX_BATCH = 256            # frames read from one socket per wake-up, at most

RecvBatch = Callable[[int, int], list[bytes]]
SendBatch = Callable[[int, Sequence[bytes]], int]


@cache
def native() -> Any | None:
    """The compiled module, or None: with ``SOFTSWITCH_FASTPATH=off``, or where it cannot
    be built here (logged once; an error with ``require``)."""
    from softswitch.fastpath import build

    return build.load_helper(SOURCE, log, "batched port I/O", "using per-frame socket calls")


def python_send_batch(sock: socket.socket, frames: Sequence[bytes]) -> int:
    """``send_batch`` without the C module: one ``send`` per frame."""
    sent = 0
    for frame in frames:
        try:
            sock.send(frame)
            sent += 1
        except OSError:
            pass
    return sent
