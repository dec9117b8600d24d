"""Colour and progress for a person at a terminal, plain text for everything else.

``tailcc`` output is read by people (diffs, summaries, findings) and by scripts and
tests (the same lines, captured). Colour and progress lines appear only when the stream
is a terminal and ``NO_COLOR`` is not set (https://no-color.org); ``TAILCC_COLOR=always``
forces colour, e.g. under ``watch`` or ``less -R``.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

_CODES = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "bold": "1", "dim": "2"}


def colour_enabled(stream: TextIO | None = None) -> bool:
    stream = stream if stream is not None else sys.stdout
    forced = os.environ.get("TAILCC_COLOR", "").lower()
    if forced in ("always", "never"):
        return forced == "always"
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def paint(text: str, style: str, stream: TextIO | None = None) -> str:
    """``text`` in ``style`` (red, green, yellow, blue, bold, dim) when colour is on."""
    if not colour_enabled(stream):
        return text
    return f"\033[{_CODES[style]}m{text}\033[0m"


class Progress:
    """``[done/total] label`` on one rewritten stderr line while long work runs; nothing
    when stderr is not a terminal, so captured output stays exactly the results."""

    def __init__(self, total: int, what: str, stream: TextIO | None = None) -> None:
        self.total, self.what, self.done = total, what, 0
        self.stream = stream if stream is not None else sys.stderr
        self.active = total > 1 and bool(getattr(self.stream, "isatty", None)
                                         and self.stream.isatty())

    def step(self, label: str) -> None:
        self.done += 1
        if self.active:
            self.stream.write(f"\r\033[K[{self.done}/{self.total}] {self.what}: {label}")
            self.stream.flush()

    def finish(self) -> None:
        if self.active:
            self.stream.write("\r\033[K")
            self.stream.flush()
