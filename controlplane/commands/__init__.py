"""The ``tailcc`` subcommands, one module per group; :mod:`controlplane.cli` wires them."""
