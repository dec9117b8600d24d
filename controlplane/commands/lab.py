"""``tailcc lab SCENARIO``: the tail-latency lab (the ``taillab`` package) from the CLI."""

from __future__ import annotations

import argparse

from controlplane.commands.target import UsageError


def add_parsers(sub: argparse._SubParsersAction) -> None:
    from taillab.cli import add_arguments

    p = sub.add_parser("lab", help="run a tail-latency lab scenario (leaf-spine, PFC, DCQCN)",
                       description="Simulate a scenario on a leaf-spine fabric whose every "
                       "switch runs tailcc.p4 on softswitch: baseline, priority-only and "
                       "tailcc on identical traffic; per-class slowdown P50/P99/P999 with "
                       "95% CIs, PFC, ECN and CNP figures; JSON, CSV and PNGs.")
    add_arguments(p)
    p.set_defaults(func=cmd_lab)


def cmd_lab(args: argparse.Namespace) -> int:
    from taillab.cli import run
    from taillab.runner import LabError
    from taillab.scenario import ScenarioError

    try:
        return run(args)
    except (ScenarioError, LabError) as exc:
        raise UsageError(str(exc)) from None
