"""A buffer of generated Python source lines for one function, with indentation.

The lowering emits straight-line Python per P4 body; statements that an expression
needs first (the call and copy-out of a function with ``out`` arguments) are emitted
before the statement that uses the value, and :meth:`CodeBuf.insert` lets the lowering
hoist an already-generated left operand in front of them so evaluation order stays
left to right, as P4 requires.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


class CodeBuf:
    def __init__(self, indent: int = 0) -> None:
        self.lines: list[str] = []
        self.level = indent

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.level + line)

    def mark(self) -> int:
        return len(self.lines)

    def insert(self, at: int, line: str) -> None:
        self.lines.insert(at, "    " * self.level + line)

    @contextmanager
    def block(self) -> Iterator[None]:
        self.level += 1
        start = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == start:
                self.emit("pass")
            self.level -= 1

    def source(self) -> str:
        return "\n".join(self.lines) + "\n"
