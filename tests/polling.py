"""Waiting in tests: poll a condition, or a port for a frame, until a deadline.

``wait_until`` answers whether the condition came true in time; ``receive_ipv4`` answers
the first IPv4 frame a port gives in time, or ``None``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol


class FramePort(Protocol):
    def receive(self) -> bytes | None: ...


def wait_until(condition: Callable[[], Any], seconds: float, step: float = 0.02) -> bool:
    """Poll ``condition`` every ``step`` seconds until it is true or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return False


def receive_ipv4(port: FramePort, seconds: float = 5) -> bytes | None:
    """The first IPv4 frame ``port`` receives within ``seconds`` (other frames are passed)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        frame = port.receive()
        if frame is not None and frame[12:14] == b"\x08\x00":
            return frame
        time.sleep(0.005)
    return None
