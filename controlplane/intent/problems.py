"""Validation problems: every error found in an intent, each naming its path.

An operator fixing an intent file wants *all* mistakes at once, with the exact place
(`classes[2].match.dscp`) and the file line, so validation collects :class:`Problem`
objects instead of raising at the first one.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    path: str
    message: str
    line: int | None = None

    def format(self, source: str | None = None) -> str:
        """``file:line: path: message`` (the parts that are known)."""
        where = ""
        if source:
            where = f"{source}:{self.line}: " if self.line else f"{source}: "
        elif self.line:
            where = f"line {self.line}: "
        path = f"{self.path}: " if self.path else ""
        return f"{where}{path}{self.message}"


class IntentError(Exception):
    """The intent is invalid; :attr:`problems` lists every reason."""

    def __init__(self, problems: list[Problem], source: str | None = None) -> None:
        self.problems = problems
        self.source = source
        super().__init__("\n".join(p.format(source) for p in problems))


@dataclass
class Problems:
    """Collects problems; ``lines`` maps a path to its line in the YAML source."""

    lines: dict[str, int] = field(default_factory=dict)
    items: list[Problem] = field(default_factory=list)

    def add(self, path: str, message: str) -> None:
        self.items.append(Problem(path, message, self.line_of(path)))

    def line_of(self, path: str) -> int | None:
        """The line of ``path`` or of its nearest ancestor that has one."""
        while True:
            if path in self.lines:
                return self.lines[path]
            if not path:
                return None
            path = parent_path(path)

    def raise_if_any(self, source: str | None) -> None:
        if self.items:
            raise IntentError(list(self.items), source)


def child_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def parent_path(path: str) -> str:
    if path.endswith("]"):
        return path[: path.rindex("[")]
    return path[: path.rindex(".")] if "." in path else ""
