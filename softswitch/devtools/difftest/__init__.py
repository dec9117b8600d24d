"""softswitch's front end against real p4test on seeded mutants of P4 programs.

:mod:`~softswitch.devtools.difftest.mutate` makes the programs,
:mod:`~softswitch.devtools.difftest.run` compiles them with both and classifies every
outcome; ``python -m softswitch.devtools.difftest`` is the command line
(``make difftest``), ``tests/test_differential.py`` the bounded run in ``make test``.
"""
