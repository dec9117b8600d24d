"""P4Info generation: the P4Runtime description of a program, as p4c writes it.

``generate(checked)`` builds the ``p4.config.v1.P4Info`` message of a type-checked
v1model program; ``write(p4info, path)`` stores it as text (``.txt``/``.txtpb``), binary
(``.bin``) or JSON (``.json``). Names come from :mod:`softswitch.frontend.elaborate`,
ids and aliases from :mod:`softswitch.p4info.ids`.
"""

from softswitch.p4info.builder import generate
from softswitch.p4info.writer import read, write

__all__ = ["generate", "read", "write"]
