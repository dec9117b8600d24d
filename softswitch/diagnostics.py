"""Source locations and diagnostics.

Every message softswitch prints about a user's program reads
``file:line:col: error: message`` with the file and line of the user's own source
(not the preprocessed text), so editors and CI logs can jump to it. All front-end and
runtime problems with user input are raised as :class:`P4Error`; anything else
escaping is a softswitch bug and is reported as an internal error by the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class SourceLoc:
    """A position in the user's source: file name, 1-based line and column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


UNKNOWN_LOC = SourceLoc("<unknown>", 0, 0)


@dataclass(slots=True)
class Diagnostic:
    """One message about the program; ``severity`` is ``error``, ``warning`` or ``note``."""

    loc: SourceLoc | None
    severity: str
    message: str

    def __str__(self) -> str:
        where = str(self.loc) if self.loc is not None else "<input>"
        return f"{where}: {self.severity}: {self.message}"


class P4Error(Exception):
    """An error in user input (program, STF file, command): carries its diagnostics."""

    def __init__(self, message: str, loc: SourceLoc | None = None,
                 notes: list[Diagnostic] | None = None) -> None:
        super().__init__(message)
        self.diagnostics: list[Diagnostic] = [Diagnostic(loc, "error", message)]
        if notes:
            self.diagnostics.extend(notes)

    @property
    def loc(self) -> SourceLoc | None:
        return self.diagnostics[0].loc

    @property
    def message(self) -> str:
        return self.diagnostics[0].message

    def __str__(self) -> str:
        return "\n".join(str(d) for d in self.diagnostics)


class P4Errors(P4Error):
    """Several independent errors found in one pass (reported together, like p4c)."""

    def __init__(self, errors: list[Diagnostic]) -> None:
        first = errors[0]
        super().__init__(first.message, first.loc)
        self.diagnostics = list(errors)


@dataclass(slots=True)
class DiagnosticSink:
    """Collects errors and warnings of a compilation; passes call :meth:`error` and go on."""

    diagnostics: list[Diagnostic] = field(default_factory=list)

    def error(self, message: str, loc: SourceLoc | None) -> None:
        self.diagnostics.append(Diagnostic(loc, "error", message))

    def warning(self, message: str, loc: SourceLoc | None) -> None:
        self.diagnostics.append(Diagnostic(loc, "warning", message))

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    def raise_if_errors(self) -> None:
        """Stop the compilation if any error was recorded (warnings alone do not)."""
        errs = self.errors
        if errs:
            raise P4Errors(errs)
