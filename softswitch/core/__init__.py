"""softswitch's shared core: what every architecture's target is built from.

A P4 program checked by the front end (softswitch.frontend) is lowered here into
Python compiled once per program, and run with BMv2's semantics for the parts that do
not depend on the architecture. Modules, from the bottom up:

* ``bits`` — bit-level packet cursor and writer; ``hashes`` — BMv2's hash/checksum
  algorithms; ``values`` — runtime classes for headers/structs/stacks/unions;
  ``wire`` — generated extract/emit code per header type.
* ``tables`` — match-action tables; ``externs`` — counters, registers, meters;
  ``execution`` — control-flow signals and the ``_RT`` services generated code uses.
* ``codebuf``, ``lower`` (expressions), ``stmts`` (statements, calls),
  ``extern_calls`` (the extern-call dispatcher, its helpers and core.p4's externs),
  ``blocks`` (one parser/control instance) — the lowering of the typed AST.
* ``build`` — :class:`~softswitch.core.build.ProgramBuilder`, which builds all blocks
  and control-plane objects of a program through its architecture's hooks;
  ``control`` — the control interface (:class:`SwitchControl`) and its value types;
  ``target`` — :class:`~softswitch.core.target.Target`, that interface over a built
  program (tables, counters, meters, registers, PRE, digests, value sets).

The architectures sit on top, one package each: :mod:`softswitch.v1model` (BMv2
``simple_switch``) and :mod:`softswitch.pna` (a PNA NIC). The traffic manager is
:mod:`softswitch.tm`; the compiled C packet path is :mod:`softswitch.fastpath`.
"""
