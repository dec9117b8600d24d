"""STF packet tests and the ``simple_switch_CLI`` command language, over any SwitchControl."""

from softswitch.stf.commands import CommandSession, Outcome, parse_command
from softswitch.stf.stf import StfResult, parse_stf_file, parse_stf_text, run_commands, run_stf

__all__ = [
    "CommandSession",
    "Outcome",
    "StfResult",
    "parse_command",
    "parse_stf_file",
    "parse_stf_text",
    "run_commands",
    "run_stf",
]
