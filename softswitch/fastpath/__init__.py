"""softswitch's compiled fast path: the whole v1model pipeline of a program as C.

At pipeline load the interpreter builds the switch as always (it stays the oracle and
owns the control-plane state); then this package generates C for the program
(:mod:`cprogram`: parser states, controls, actions, tables' apply, externs, checksums,
hashes, deparser, and BMv2's clone/resubmit/recirculate/multicast driver) and compiles
it with the system C compiler into a CPython extension (:mod:`build`, cached by a hash
of the source); :func:`softswitch.v1model.fast_switch.attach` runs packets there
(a :class:`~softswitch.v1model.fast_switch.FastSwitch`).

``SOFTSWITCH_FASTPATH`` (or the ``fastpath`` argument of ``load_switch``) is the
one switch for compiled C: the pipeline, and with it ``softswitch run``'s native
forwarding loop and native queues (which run whenever the pipeline is C), batched port
I/O (``ports/batchio``) and the P4Runtime entry decoder (``p4runtime/entrywire``):

* ``auto`` (default): C where it can be built, else the Python way, with a warning
  naming the construct that was refused and where it is, or why a helper is missing;
* ``off``: no generated or compiled C at all: the interpreter, the Python port loop
  with per-frame socket calls, protobuf decoding of every update;
* ``require``: C or an error (``P4Error``) with the reason, for the pipeline and the
  helpers alike (``softswitch run`` builds the helpers at start-up then).

``tests/test_fastpath_differential.py`` runs the p4c corpus and the project's STF files
through both paths and requires identical results.
"""

from __future__ import annotations

import logging
import os
from typing import Any

log = logging.getLogger("softswitch.fastpath")

MODES = ("off", "auto", "require")


def mode(explicit: str | None = None) -> str:
    m = (explicit or os.environ.get("SOFTSWITCH_FASTPATH") or "auto").strip().lower()
    if m not in MODES:
        from softswitch.diagnostics import P4Error
        raise P4Error(f"SOFTSWITCH_FASTPATH must be one of {', '.join(MODES)}, not '{m}'")
    return m


def refusal(switch: Any) -> str | None:
    """Why a switch runs on the interpreter (None when it runs C)."""
    fp = getattr(switch, "fastpath", None)
    return None if fp == "c" else fp
