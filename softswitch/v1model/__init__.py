"""The v1model target: a BMv2 ``simple_switch``-compatible switch in Python.

Entry point: :class:`softswitch.v1model.switch.Switch` (``from_file``/``from_program``),
which implements :class:`softswitch.v1model.control.SwitchControl`.

Modules, from the bottom up:

* ``bits`` — bit-level packet cursor and writer; ``hashes`` — BMv2's hash/checksum
  algorithms; ``values`` — runtime classes for headers/structs/stacks/unions;
  ``wire`` — generated extract/emit code per header type.
* ``tables`` — match-action tables; ``externs`` — counters, registers, meters;
  ``runtime`` — per-packet state and control-flow signals used by generated code.
* ``codebuf``, ``lower`` (expressions), ``stmts`` (statements, calls),
  ``lower_externs`` (extern calls), ``blocks`` (one parser/control instance) —
  the lowering of the typed AST into Python source compiled once per program.
* ``build`` — builds all blocks and control-plane objects of a program;
  ``switch`` — the pipeline and traffic manager with BMv2's order of operations;
  ``queueing`` — a variant with real queues between ingress and egress.
"""
