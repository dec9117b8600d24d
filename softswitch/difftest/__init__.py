"""softswitch's front end against real p4test on seeded mutants of P4 programs.

:mod:`softswitch.difftest.mutate` makes the programs, :mod:`softswitch.difftest.run`
compiles them with both and classifies every outcome; ``python -m softswitch.difftest``
is the command line (``make difftest``), ``tests/test_differential.py`` the bounded run
in ``make test``.
"""
