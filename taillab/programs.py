"""The P4 programs the lab loads: tailcc.p4 in every switch, tailcc_nic.p4 in every host
NIC of the tailcc-nic scheme; where they are, and each checked once per lab cell.

A program the lab cannot find or that does not compile is a :class:`LabError`, which
``tailcc lab`` reports as one line (never a traceback)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

P4SRC = Path(__file__).resolve().parents[1] / "p4src"
TAILCC_P4 = P4SRC / "tailcc.p4"
NIC_P4 = P4SRC / "nic" / "tailcc_nic.p4"


class LabError(RuntimeError):
    """The lab cannot run here (e.g. no tailcc.p4); the message says why."""


def tailcc_program() -> Path:
    """tailcc.p4 of this checkout, or $TAILCC_P4."""
    path = Path(os.environ.get("TAILCC_P4", TAILCC_P4))
    if not path.is_file():
        raise LabError(f"{path}: tailcc.p4 not found (run from a tailcc checkout or set "
                       f"TAILCC_P4)")
    return path


def compile_tailcc() -> Any:
    """tailcc.p4, type-checked once for every switch of a cell."""
    return _compile(tailcc_program())


def compile_nic_program() -> Any:
    """tailcc_nic.p4, checked once per lab cell and loaded into every host."""
    if not NIC_P4.is_file():
        raise LabError(f"{NIC_P4}: tailcc_nic.p4 not found (the tailcc-nic scheme needs it)")
    return _compile(NIC_P4)


def _compile(path: Path) -> Any:
    # softswitch's compiler loads only when a cell runs, not with the CLI
    from softswitch.diagnostics import P4Error
    from softswitch.frontend.compiler import compile_program

    try:
        return compile_program(str(path))
    except P4Error as exc:
        raise LabError(str(exc)) from None
