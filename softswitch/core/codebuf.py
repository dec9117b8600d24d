"""Buffers of generated source lines for one function, with indentation.

:class:`LineBuf` is what both back ends share: lines at an indentation level, a
:meth:`~LineBuf.mark` and :meth:`~LineBuf.insert` that let a lowering hoist an
already-generated left operand in front of statements a later operand needed (so
evaluation stays left to right, as P4 requires), and ``if_``/``else_`` blocks. Each
back end's buffer spells the blocks: :class:`CodeBuf` in Python (the interpreter),
``CBuf`` in C (:mod:`softswitch.fastpath.cexpr`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager


class LineBuf:
    """Lines of one generated function body at an indentation level."""

    def __init__(self, level: int = 0) -> None:
        self.lines: list[str] = []
        self.level = level

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.level + line)

    def mark(self) -> int:
        return len(self.lines)

    def insert(self, at: int, line: str) -> None:
        self.lines.insert(at, "    " * self.level + line)

    def source(self) -> str:
        return "\n".join(self.lines) + "\n"

    def if_(self, cond: str) -> AbstractContextManager[None]:
        """The lines emitted inside run when ``cond`` holds."""
        raise NotImplementedError

    def else_(self) -> AbstractContextManager[None]:
        """The lines emitted inside run when the ``if_`` just closed did not."""
        raise NotImplementedError


class CodeBuf(LineBuf):
    """Python source: blocks by indentation (an empty block gets ``pass``)."""

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

    @contextmanager
    def if_(self, cond: str) -> Iterator[None]:
        self.emit(f"if {cond}:")
        with self.block():
            yield

    @contextmanager
    def else_(self) -> Iterator[None]:
        self.emit("else:")
        with self.block():
            yield
