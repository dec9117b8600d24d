"""STF packet tests and the ``simple_switch_CLI`` command language, over any SwitchControl."""

from softswitch.stf.commands import parse_command
from softswitch.stf.session import CommandSession, Outcome
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
