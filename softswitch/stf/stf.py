"""STF packet tests: running an STF file against a switch.

The file is read by :mod:`softswitch.stf.reader` (``packet``, ``expect``, ``wait`` and
the control commands of :mod:`softswitch.stf.commands`). Like p4c's ``bmv2stf.py``, the
runner executes the lines in order (table updates between packets take effect for later
packets), collects every packet the switch emits, and only at the end compares them with
*all* expectations, port by port. Any other directive is an error naming ``file:line``,
never skipped — except what p4c's driver parses and then ignores (``mc_node_update``) or
only prints (``mirroring_get``, ``meter_get_rates``): softswitch does the same.

``StfResult.warnings`` lists the lines p4c's driver would reject or read differently
(:mod:`softswitch.stf.compat`); ``softswitch stf`` prints them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from softswitch.core.control import SwitchControl
from softswitch.stf import compat
from softswitch.stf.compat import CompatNote
from softswitch.stf.expect import ExpectedPacket, PortReport, check_outputs, format_report
from softswitch.stf.reader import (
    ExpectCmd,
    IgnoredCmd,
    PacketCmd,
    StfCommand,
    WaitCmd,
    parse_stf_file,
    parse_stf_line,
    parse_stf_text,
)
from softswitch.stf.session import CommandSession

__all__ = ["ExpectCmd", "IgnoredCmd", "PacketCmd", "StfCommand", "StfResult", "WaitCmd",
           "parse_stf_file", "parse_stf_line", "parse_stf_text", "run_commands", "run_stf"]


@dataclass
class StfResult:
    """Outcome of an STF test: ``ok`` only when every expectation and check is met."""

    ok: bool
    report: str
    ports: list[PortReport] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)
    warnings: list[CompatNote] = field(default_factory=list)


@dataclass
class _Run:
    """What a run accumulates: expectations, captured packets, check failures."""

    expected: dict[int, list[ExpectedPacket]] = field(default_factory=dict)
    received: dict[int, list[bytes]] = field(default_factory=dict)
    observed: set[int] = field(default_factory=set)
    failures: list[str] = field(default_factory=list)
    log: list[str] = field(default_factory=list)


def _step(session: CommandSession, run: _Run, cmd: StfCommand) -> None:
    if isinstance(cmd, PacketCmd):
        run.observed.add(cmd.port)
        for out in session.control.inject(cmd.port, cmd.data):
            run.received.setdefault(out.port, []).append(bytes(out.data))
    elif isinstance(cmd, ExpectCmd):
        run.observed.add(cmd.expected.port)
        run.expected.setdefault(cmd.expected.port, []).append(cmd.expected)
    elif isinstance(cmd, WaitCmd):
        return
    elif isinstance(cmd, IgnoredCmd):
        run.log.append(f"{cmd.loc}: '{cmd.keyword}' ignored, as p4c's BMv2 STF driver does")
    else:
        outcome = session.execute(cmd)
        if outcome.text:
            run.log.append(f"{cmd.loc}: {outcome.text}")
        if outcome.failure:
            run.failures.append(f"{cmd.loc}: {outcome.failure}")


def run_commands(control: SwitchControl, commands: list[StfCommand]) -> StfResult:
    """Execute parsed STF commands against ``control`` and check the outputs."""
    session = CommandSession(control)
    run = _Run()
    warnings = compat.check(commands, list(control.tables()))
    for cmd in commands:
        _step(session, run, cmd)
    ports = check_outputs(run.expected, run.received, run.observed)
    ignored = {p: len(pkts) for p, pkts in run.received.items() if p not in run.observed}
    report = format_report(ports, ignored)
    dropped = getattr(control, "priority_drops", 0)
    if dropped:
        queues = getattr(control, "priority_queues", None)
        note = (f"{dropped} packet(s) dropped: standard_metadata.priority names no queue of "
                f"the switch's {queues} per port (BMv2: 'Priority out of range'; give the "
                "switch more with --priority-queues N)")
        run.log.append(note)
        report = f"{report}\n{note}" if report else note
    if run.failures:
        report = "\n".join([report, *run.failures]) if report else "\n".join(run.failures)
    ok = all(p.ok for p in ports) and not run.failures
    return StfResult(ok, report, ports, run.failures, run.log, warnings)


def run_stf(program_path: str, stf_path: str, include_dirs=(), defines=None,
            priority_queues: int = 1) -> StfResult:
    """Compile ``program_path``, load it into a switch and run the STF test on it.

    The STF file is parsed first, so a malformed test is reported (``P4Error`` naming
    ``file:line``) before any compilation work. ``priority_queues`` is simple_switch's
    ``--priority-queues``: p4c's STF driver starts simple_switch without it, so by default
    there is one queue per port and a packet whose ``standard_metadata.priority`` is not
    0 is dropped, as on BMv2.
    """
    commands = parse_stf_file(stf_path)
    # the target of main's architecture (loaded lazily: it is heavy); a PNA program runs
    # as a NIC whose ports all face the network (STF has no port roles)
    from softswitch.architecture import load_target
    from softswitch.frontend.compiler import compile_program

    switch = load_target(compile_program(program_path, tuple(include_dirs or ()), defines))
    switch.priority_queues = priority_queues
    return run_commands(switch, commands)
