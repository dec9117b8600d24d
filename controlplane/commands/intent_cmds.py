"""``tailcc validate | diff | apply``: intent files against the switches."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Callable

from controlplane.commands.target import UsageError, non_negative_int, positive_float
from controlplane.intent import Intent, IntentError, load_intent
from controlplane.intent import model as m
from controlplane.p4rt import Client
from controlplane.p4rt.errors import P4RuntimeClientError
from controlplane.reconcile import Pipeline, SwitchResult, load_pipeline, reconcile_all
from controlplane.reconcile.credentials import switch_tls
from controlplane.reconcile.learning import QpLearner
from controlplane.reconcile.report import plan_lines, queue_lines, summary_line
from controlplane.terminal import Progress


def add_parsers(sub: argparse._SubParsersAction) -> None:
    v = sub.add_parser("validate", help="check an intent file, print every problem",
                       description="Validate an intent file: every problem is printed as "
                       "file:line: path: reason; exit 1 if there is any.")
    v.add_argument("intent", help="intent YAML file")
    v.set_defaults(func=cmd_validate)

    for name, helptext in (("diff", "show what apply would write (a dry run)"),
                           ("apply", "make the switches hold what the intent says")):
        p = sub.add_parser(name, help=helptext, description=helptext.capitalize() + ". "
                           "Only the difference between the intent and the switch is "
                           "written; applying the same intent twice writes nothing.")
        p.add_argument("intent", help="intent YAML file")
        p.add_argument("--switch", "-s", action="append", metavar="NAME",
                       help="only this switch (repeatable; default: all)")
        p.add_argument("--pipeline", metavar="FILE",
                       help="P4 program (softswitch) or BMv2 JSON to load when a switch "
                       "lacks it or runs another program")
        p.add_argument("--p4info", metavar="FILE", help="P4Info of --pipeline (default: "
                       "compiled from the .p4; else the device's own)")
        p.add_argument("--timeout", type=positive_float, default=10.0,
                       help="RPC timeout, s (10)")
        p.add_argument("--quiet", "-q", action="store_true", help="summary lines only")
        p.add_argument("--allow-partial", action="store_true",
                       help="apply the queue/link settings a switch's target supports and "
                       "warn about the others (e.g. DWRR weights, link rates or PFC on "
                       "BMv2); without it such an intent is refused before any write")
        p.add_argument("--self-rollback", action="store_true",
                       help="never ask the switch for atomic (ROLLBACK_ON_ERROR) batches: "
                       "the controller undoes a failed apply itself, as it must on BMv2")
        if name == "apply":
            p.add_argument("--dry-run", "-n", action="store_true",
                           help="print the changes, write nothing")
            p.add_argument("--every", type=positive_float, metavar="SECONDS",
                           help="keep running: re-read the intent and reconcile every "
                           "SECONDS (undoes drift; prints only rounds that change something)")
            p.add_argument("--rounds", type=non_negative_int, default=0,
                           help="with --every: stop after N rounds (0: never)")
        p.set_defaults(func=cmd_apply, dry_run=(name == "diff"))


def cmd_validate(args: argparse.Namespace) -> int:
    intent = load_intent(args.intent)
    rules = sum(len(c.rules) for c in intent.classes)
    rules_seg = sum(len(t.rules) for t in intent.tenants)
    routes = sum(len(s.routes) for s in intent.switches)
    nics = f"{len(intent.nics)} NICs, " if intent.nics else ""
    print(f"{args.intent}: ok: {len(intent.switches)} switches, {nics}{len(intent.classes)} "
          f"classes ({rules} rules), {len(intent.ecn_profiles)} ECN profiles, "
          f"{len(intent.tenants)} tenants ({rules_seg} rules), {routes} routes, "
          f"Fast CNP {'on' if intent.fast_cnp.enabled else 'off'}")
    return 0


def cmd_apply(args: argparse.Namespace) -> int:
    intent = load_intent(args.intent)
    _check_switch_names(args, intent)
    pipeline = load_pipeline(args.p4info, args.pipeline)
    if getattr(args, "every", None):
        return _apply_loop(args, intent, pipeline)
    return 1 if _apply_once(args, intent, pipeline, quiet_in_sync=False) else 0


def _check_switch_names(args: argparse.Namespace, intent: Intent) -> None:
    unknown = sorted(set(args.switch or ()) - {s.name for s in intent.devices})
    if unknown:
        names = ", ".join(s.name for s in intent.devices) or "none"
        raise UsageError(f"no switch {', '.join(unknown)} in {args.intent} "
                         f"(switches: {names})")


def _apply_once(args: argparse.Namespace, intent: Intent, pipeline: Pipeline | None,
                quiet_in_sync: bool, learning: Learning | None = None) -> int:
    """One reconcile of every chosen switch; the number of switches that failed."""
    clients = learning.sessions(intent, args.switch) if learning else None
    count = len([s for s in intent.devices if not args.switch or s.name in args.switch])
    progress = Progress(count, "reconciled")
    results = reconcile_all(intent, pipeline, args.switch, dry_run=args.dry_run,
                            timeout=args.timeout, clients=clients,
                            on_done=lambda r: progress.step(r.switch),
                            allow_partial=args.allow_partial,
                            atomic_writes=False if args.self_rollback else None)
    progress.finish()
    if learning:
        for line in learning.after_round(results):
            print(line, flush=True)
    for result in results:
        changed = bool(result.plan) or result.error is not None
        if quiet_in_sync and not changed:
            continue
        if not args.quiet:
            for line in plan_lines(result):
                print(f"{result.switch}: {line}")
            if args.dry_run:
                for line in queue_lines(result):
                    print(f"{result.switch}: queue: {line}")
        print(summary_line(result, args.dry_run), flush=True)
    return sum(r.error is not None for r in results)


def _apply_loop(args: argparse.Namespace, intent: Intent, pipeline: Pipeline | None) -> int:
    """Controller mode: re-read the intent and reconcile every ``--every`` seconds, so
    edits reach the switches and drift (a hand-made change, a restarted switch) is
    undone. An intent that turns invalid is reported and the last valid one is kept."""
    rounds = 0
    learning = None if args.dry_run else Learning(args.timeout, args.self_rollback)
    restore, stopped = _stop_on_sigterm()
    try:
        while not stopped.is_set():
            _apply_once(args, intent, pipeline, quiet_in_sync=rounds > 0, learning=learning)
            rounds += 1
            if (args.rounds and rounds >= args.rounds) or stopped.is_set():
                return 0
            if learning:
                for line in learning.wait(args.every):
                    print(line, flush=True)
            else:
                time.sleep(args.every)
            try:
                intent = load_intent(args.intent)
                _check_switch_names(args, intent)
            except (IntentError, UsageError) as exc:
                print(f"tailcc: {args.intent} is invalid, keeping the last valid intent:",
                      file=sys.stderr)
                print(str(exc), file=sys.stderr, flush=True)
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        restore()
        if learning:
            learning.close()


def _stop_on_sigterm() -> tuple[Callable[[], None], threading.Event]:
    """Controller mode ends on SIGTERM (a service manager's stop, or ``kill``) as on
    Ctrl-C: the round in progress is cut, the learners' sessions are closed, exit 0.
    (A controller started in the background by a script inherits SIGINT ignored, as
    shells do for background jobs: SIGTERM is then how it is stopped.) The handler also
    sets the returned event, which the loop checks between rounds: Python drops an
    exception raised while it runs a finalizer or weakref callback, and the stop must
    not be lost with it. Returns what puts the previous handler back (nothing where
    signals cannot be set: not the main thread) and that event."""
    stopped = threading.Event()

    def stop(signum: int, frame: object) -> None:
        stopped.set()
        raise KeyboardInterrupt
    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:
        return (lambda: None), stopped
    return (lambda: signal.signal(signal.SIGTERM, previous)), stopped


class Learning:
    """Controller mode's Fast CNP QP learning (``fast_cnp.learning``): one long-lived
    primary session per learning switch — digests only reach a connected primary — that
    reconcile rounds reuse (a second session with the same election id would be
    refused). A session that fails is dropped and opened again next round, and a
    reloaded pipeline restarts the learner (the switch forgot digests and flows)."""

    def __init__(self, timeout: float, self_rollback: bool = False) -> None:
        self.timeout = timeout
        self.atomic_writes = False if self_rollback else None
        self.clients: dict[str, Client] = {}
        self.learners: dict[str, QpLearner] = {}
        self._switches: dict[str, m.Switch] = {}

    def sessions(self, intent: Intent, chosen: list[str] | None) -> dict[str, Client]:
        wanted = {s.name: s for s in intent.devices
                  if intent.fast_cnp.enabled and intent.fast_cnp.learning
                  and (not chosen or s.name in chosen)}
        for name in list(self.clients):
            sw = self._switches.get(name)
            if name not in wanted or (sw and (sw.address, sw.device_id, sw.election_id)
                                      != (wanted[name].address, wanted[name].device_id,
                                          wanted[name].election_id)):
                self._drop(name)
        self._switches = wanted
        for name, sw in wanted.items():
            if name in self.clients:
                continue
            client = Client(sw.address, sw.device_id, election_id=sw.election_id,
                            timeout=self.timeout, atomic_writes=self.atomic_writes,
                            tls=switch_tls(intent, sw))
            try:
                client.connect(require_primary=True)
            except P4RuntimeClientError:
                client.close()       # reconcile connects itself and reports why
                continue
            self.clients[name] = client
        return dict(self.clients)

    def after_round(self, results: list[SwitchResult]) -> list[str]:
        lines = []
        for r in results:
            if r.switch not in self.clients:
                continue
            if r.error is not None:
                self._drop(r.switch)
                continue
            learner = self.learners.get(r.switch)
            try:
                if learner is None or r.pipeline_loaded:
                    assert r.index is not None
                    learner = QpLearner(r.switch, self.clients[r.switch], r.index)
                    learner.start()
                    self.learners[r.switch] = learner
                elif r.plan:
                    learner.refresh()
            except Exception as exc:  # noqa: BLE001 - learning must not stop the controller
                lines.append(f"{r.switch}: qp-learn: {exc}")
                self._drop(r.switch)
        return lines

    def wait(self, seconds: float) -> list[str]:
        """Handle digests until ``seconds`` have passed."""
        deadline = time.monotonic() + seconds
        lines: list[str] = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return lines
            if not self.learners:
                time.sleep(remaining)
                continue
            for name, learner in list(self.learners.items()):
                try:
                    lines += learner.poll(min(0.02, remaining))
                except Exception as exc:  # noqa: BLE001 - see after_round
                    lines.append(f"{name}: qp-learn: {exc}")
                    self._drop(name)
            if lines:
                return lines + self.wait(deadline - time.monotonic())

    def _drop(self, name: str) -> None:
        self.learners.pop(name, None)
        client = self.clients.pop(name, None)
        if client is not None:
            client.close()

    def close(self) -> None:
        for name in list(self.clients):
            self._drop(name)
