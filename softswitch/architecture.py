"""Which P4 architecture a program is written for: v1model (a switch) or PNA (a NIC).

p4c picks its architecture handler from ``--arch``; softswitch reads it from the type
of ``main`` (``V1Switch`` -> v1model, ``PNA_NIC`` -> pna), so a program needs no flag.
A requested architecture (``--arch``) must agree with the package: running a PNA
program on the v1model pipeline, or the reverse, is refused here with a message that
names both, instead of failing later inside a back end.
"""

from __future__ import annotations

from typing import Any

from softswitch.diagnostics import P4Error

V1MODEL = "v1model"
PNA = "pna"
ARCHITECTURES = (V1MODEL, PNA)

#: The package type of ``main`` that identifies each architecture.
PACKAGES = {"V1Switch": V1MODEL, "PNA_NIC": PNA}


def package_name(elab: Any) -> str | None:
    """The type name of ``main`` in an elaboration (None when there is no ``main``)."""
    pkg = getattr(elab, "package", None)
    return getattr(pkg, "name", None)


def detect(elab: Any, requested: str | None = None) -> str:
    """The architecture of an elaborated program.

    ``requested`` is the user's ``--arch`` (None: detect). A program whose package is
    neither known one is treated as v1model, as p4c does by default, unless the user
    asked for another architecture.
    """
    if requested is not None and requested not in ARCHITECTURES:
        raise P4Error(f"--arch {requested}: unknown architecture (softswitch knows "
                      f"{', '.join(ARCHITECTURES)})")
    name = package_name(elab)
    found = PACKAGES.get(name or "")
    if found is None:
        return requested or V1MODEL
    if requested is not None and requested != found:
        main = getattr(elab, "main", None)
        raise P4Error(f"--arch {requested} was given, but main is a {name}, which is the "
                      f"{found} architecture", getattr(main, "loc", None))
    return found


def load_target(checked: Any, arch: str | None = None, fastpath: str | None = None) -> Any:
    """The loaded pipeline of a checked program on its architecture's target: a v1model
    :class:`~softswitch.v1model.switch.Switch` or a PNA :class:`~softswitch.pna.nic.Nic`
    (both imported lazily: each is heavy)."""
    from softswitch.frontend.elaborate import elaborate

    if detect(elaborate(checked), arch) == PNA:
        from softswitch.pna.nic import Nic
        return Nic.from_program(checked, fastpath=fastpath)
    from softswitch.v1model.fast_switch import load_switch
    return load_switch(checked, fastpath=fastpath)
