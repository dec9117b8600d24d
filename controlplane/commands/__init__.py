"""The ``tailcc`` subcommands, one module per group; :mod:`controlplane.cli` registers them
(``COMMAND_MODULES``)."""
