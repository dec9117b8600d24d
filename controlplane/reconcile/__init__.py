"""Make every switch hold what the intent says, writing only the difference.

Switches are reconciled concurrently; each gets its own :class:`SwitchResult` (plan,
counts, error), so one unreachable or failing switch never blocks the others.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed

from controlplane.intent import model as m
from controlplane.p4rt import Client
from controlplane.reconcile.diff import Change, Plan, diff
from controlplane.reconcile.switch import Pipeline, SwitchResult, load_pipeline, reconcile_switch

__all__ = ["Change", "Pipeline", "Plan", "SwitchResult", "diff", "load_pipeline",
           "reconcile_all", "reconcile_switch"]


def reconcile_all(intent: m.Intent, pipeline: Pipeline | None, switches: list[str] | None = None,
                  dry_run: bool = False, timeout: float = 10.0, workers: int = 16,
                  clients: dict[str, Client] | None = None,
                  on_done: Callable[[SwitchResult], None] | None = None,
                  allow_partial: bool = False,
                  atomic_writes: bool | None = None) -> list[SwitchResult]:
    """Reconcile the named switches (all by default) in parallel; results in intent order.
    ``clients``: open primary sessions by switch name to reuse (controller mode);
    ``on_done``: called as each switch finishes (progress for a person watching);
    ``allow_partial``: apply what a switch's traffic manager can take, warn about the
    rest; ``atomic_writes=False``: the controller rolls back failed writes itself even
    where the target grants ROLLBACK_ON_ERROR (see ``reconcile_switch``)."""
    chosen = [s for s in intent.devices if not switches or s.name in switches]
    if not chosen:
        return []
    with ThreadPoolExecutor(max_workers=min(workers, len(chosen))) as pool:
        # --pipeline is the switches' program; a NIC keeps the NIC program it runs
        futures = [pool.submit(reconcile_switch, intent, s,
                               None if isinstance(s, m.Nic) else pipeline, dry_run, timeout,
                               client=(clients or {}).get(s.name),
                               allow_partial=allow_partial, atomic_writes=atomic_writes)
                   for s in chosen]
        if on_done is not None:
            for done in as_completed(futures):
                on_done(done.result())
        return [f.result() for f in futures]
