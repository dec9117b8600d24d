"""An architecture's extern table: each extern call's meaning and its two emissions.

An :class:`Extern` is one extern function or method: a line saying what a call does,
the emission of the interpreter (Python source, the oracle) and, where the fast path
runs it, the emission of the C generator. An :class:`ExternTable` holds an
architecture's externs keyed by function name or ``(extern type, method)``; both back
ends read the same table (the program builder's ``externs``), so an extern is added,
fixed or refused in one place. A call the table lacks is a clear error naming the call
and the target; one without a C emission is the fast path's refusal, with its reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

#: (lowering, call, call info, function context) -> value code, or None after statements
Emission = Callable[[Any, Any, Any, Any], str | None]


@dataclass(frozen=True)
class Extern:
    """One extern function or method and how each back end emits a call of it."""

    semantics: str
    interp: Emission
    c: Emission | None = None


@dataclass(frozen=True)
class ExternTable:
    """The externs of one architecture (core.p4's included)."""

    target: str
    functions: dict[str, Extern] = field(default_factory=dict)
    methods: dict[tuple[str, str], Extern] = field(default_factory=dict)

    def extend(self, target: str, functions: dict[str, Extern] | None = None,
               methods: dict[tuple[str, str], Extern] | None = None) -> ExternTable:
        """This table with more externs (or other emissions of the same ones)."""
        return ExternTable(target, {**self.functions, **(functions or {})},
                           {**self.methods, **(methods or {})})

    def with_c(self, functions: dict[str, Emission],
               methods: dict[tuple[str, str], Emission]) -> ExternTable:
        """This table with the C emissions given for some of its externs."""
        missing = [k for k in functions if k not in self.functions] + [
            f"{t}.{m}" for t, m in methods if (t, m) not in self.methods]
        if missing:
            raise KeyError(f"C emissions for externs the {self.target} table lacks: "
                           f"{', '.join(missing)}")
        return ExternTable(
            self.target,
            {k: replace(x, c=functions.get(k, x.c)) for k, x in self.functions.items()},
            {k: replace(x, c=methods.get(k, x.c)) for k, x in self.methods.items()})

    def find(self, info: Any) -> Extern | None:
        """The extern a resolved call (``info``: an ``ast.CallInfo``) names, if any."""
        if info.kind == "extern_function":
            return self.functions.get(info.decl.name)
        ext = info.extern.name if info.extern is not None else ""
        return self.methods.get((ext, info.decl.name))


def call_name(info: Any) -> str:
    """How an error names the extern call ``info``."""
    if info.kind == "extern_function":
        return f"extern function '{info.decl.name}'"
    ext = info.extern.name if info.extern is not None else ""
    return f"method '{ext}.{info.decl.name}'"
