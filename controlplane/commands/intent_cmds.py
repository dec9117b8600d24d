"""``tailcc validate | diff | apply``: intent files against the switches."""

from __future__ import annotations

import argparse
import sys
import time

from controlplane.commands.target import UsageError, non_negative_int, positive_float
from controlplane.intent import Intent, IntentError, load_intent
from controlplane.reconcile import Pipeline, load_pipeline, reconcile_all
from controlplane.reconcile.report import plan_lines, queue_lines, summary_line


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
    print(f"{args.intent}: ok: {len(intent.switches)} switches, {len(intent.classes)} "
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
    unknown = sorted(set(args.switch or ()) - {s.name for s in intent.switches})
    if unknown:
        names = ", ".join(s.name for s in intent.switches) or "none"
        raise UsageError(f"no switch {', '.join(unknown)} in {args.intent} "
                         f"(switches: {names})")


def _apply_once(args: argparse.Namespace, intent: Intent, pipeline: Pipeline | None,
                quiet_in_sync: bool) -> int:
    """One reconcile of every chosen switch; the number of switches that failed."""
    results = reconcile_all(intent, pipeline, args.switch, dry_run=args.dry_run,
                            timeout=args.timeout)
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
    try:
        while True:
            _apply_once(args, intent, pipeline, quiet_in_sync=rounds > 0)
            rounds += 1
            if args.rounds and rounds >= args.rounds:
                return 0
            time.sleep(args.every)
            try:
                intent = load_intent(args.intent)
                _check_switch_names(args, intent)
            except (IntentError, UsageError) as exc:
                print(f"tailcc: {args.intent} is invalid, keeping the last valid intent:",
                      file=sys.stderr)
                print(str(exc), file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        return 0
