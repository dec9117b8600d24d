"""Human-readable plans and results (what ``tailcc diff``/``apply`` print)."""

from __future__ import annotations

from controlplane.p4rt.describe import entity_text
from controlplane.p4rt.p4info import P4InfoIndex
from controlplane.reconcile.diff import Change
from controlplane.reconcile.switch import SwitchResult
from controlplane.terminal import paint

SIGN = {"INSERT": "+", "DELETE": "-", "MODIFY": "~"}
COLOUR = {"INSERT": "green", "DELETE": "red", "MODIFY": "yellow"}


def change_lines(index: P4InfoIndex, change: Change) -> list[str]:
    text = entity_text(index, change.entity)
    line = paint(f"{SIGN[change.kind]} {text}", COLOUR[change.kind])
    if change.kind == "MODIFY" and change.old is not None:
        return [line, paint(f"    (was {entity_text(index, change.old)})", "dim")]
    return [line]


def plan_lines(result: SwitchResult) -> list[str]:
    if result.plan is None or result.index is None:
        return []
    out = []
    for change in result.plan.changes:
        out += change_lines(result.index, change)
    return out


def summary_line(result: SwitchResult, dry_run: bool) -> str:
    if result.error is not None:
        warnings = "".join(f"\n  {paint('warning', 'yellow')}: {w}" for w in result.warnings)
        return f"{result.switch}: {paint('FAILED', 'red')}: {result.error}{warnings}"
    counts = result.plan.counts() if result.plan else {"INSERT": 0, "MODIFY": 0, "DELETE": 0}
    total = sum(counts.values())
    verb = "would write" if dry_run else "wrote"
    parts = [f"{result.switch}: "]
    if total == 0:
        parts.append(paint("in sync, nothing to write", "green"))
    else:
        parts.append(paint(f"{verb} {total}", "yellow")
                     + f" ({counts['INSERT']} insert, {counts['MODIFY']} modify, "
                       f"{counts['DELETE']} delete)")
    if result.pipeline_loaded:
        parts.append("; pipeline loaded")
    if result.tm_commands:
        parts.append(f"; {result.tm_commands} queue/link settings")
    parts.append(f" in {result.seconds:.2f} s")
    notes = "".join(f"\n  note: {n}" for n in result.notes)
    warnings = "".join(f"\n  {paint('warning', 'yellow')}: {w}" for w in result.warnings)
    return "".join(parts) + notes + warnings


def queue_lines(result: SwitchResult) -> list[str]:
    """Traffic-manager settings P4Runtime cannot carry, as runtime-channel (softswitch)
    or simple_switch_CLI (BMv2) commands; what the target cannot take, as refusals."""
    if result.tm is None:
        return []
    return result.tm.commands + [paint(f"refused: {r}", "red") for r in result.tm.refused]
