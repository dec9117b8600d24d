"""softswitch: a P4_16 compiler front end and BMv2-compatible v1model target in Python."""

__version__ = "0.1.0"
