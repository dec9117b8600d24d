"""``tailcc watch | diagnose | export``: counters over time, BRIEF §1's diagnostics, and
Prometheus metrics."""

from __future__ import annotations

import argparse
import time

from controlplane.commands.target import (
    UsageError,
    add_target_args,
    non_negative_int,
    open_session,
    positive_float,
)
from controlplane.intent import load_intent
from controlplane.reconcile.credentials import switch_tls
from controlplane.telemetry import analysis
from controlplane.telemetry.snapshot import (
    CNP_OUTCOMES,
    DROP_REASONS,
    Scope,
    Snapshot,
    delta,
    take_snapshot,
)
from controlplane.terminal import paint

EXIT_FINDINGS = 3


def add_parsers(sub: argparse._SubParsersAction) -> None:
    w = sub.add_parser("watch", help="per-second rates of tailcc's counters",
                       description="Poll a switch's counters and print per-second rates: "
                       "packets per class, ECN marks and PFC pauses per port/queue, Fast "
                       "CNP outcomes, drops by reason, queue depths.")
    w.add_argument("--interval", type=positive_float, default=1.0,
                   help="seconds between polls (1)")
    w.add_argument("--count", type=non_negative_int, default=0,
                   help="stop after N polls (0: never)")
    add_target_args(w)
    w.set_defaults(func=cmd_watch)

    d = sub.add_parser("diagnose", help="check ECN mark rate, PFC pauses, P99/P50 vs load",
                       description="Sample a switch for --windows x --interval seconds and "
                       "report: ECN mark rate above --ecn-threshold for --sustain "
                       "consecutive windows; PFC pause frames above --pfc-max-rate; and, "
                       "with --latency FILE (CSV: load,p50,p99[,class]), P99/P50 at or above "
                       "--tail-ratio and rising with load. Exit 0 healthy, 3 findings.")
    d.add_argument("--windows", type=int, default=5, help="sampling windows (5)")
    d.add_argument("--interval", type=positive_float, default=1.0,
                   help="window length, s (1)")
    d.add_argument("--ecn-threshold", type=float, default=0.05,
                   help="ECN mark-rate threshold, fraction (0.05 = 5%%)")
    d.add_argument("--sustain", type=int, default=3,
                   help="consecutive windows above the threshold that count (3)")
    d.add_argument("--pfc-max-rate", type=float, default=0.0,
                   help="PFC pause frames per second tolerated per port-priority (0)")
    d.add_argument("--latency", metavar="CSV", help="latency table: load,p50,p99[,class]")
    d.add_argument("--tail-ratio", type=positive_float, default=3.0,
                   help="P99/P50 threshold (3)")
    add_target_args(d)
    d.set_defaults(func=cmd_diagnose)

    e = sub.add_parser("export", help="serve tailcc's counters as Prometheus metrics",
                       description="Serve /metrics for every switch of the intent (or the "
                       "one given); counters are read at scrape time.")
    e.add_argument("--port", type=non_negative_int, default=9100, help="HTTP port (9100)")
    e.add_argument("--listen", default="127.0.0.1",
                   help="listen address (127.0.0.1: this host only; 0.0.0.0 or a "
                        "host's address to let a remote Prometheus scrape)")
    e.add_argument("--once", action="store_true",
                   help="print the metrics once to stdout and exit")
    add_target_args(e)
    e.set_defaults(func=cmd_export)


def _class_maps(args: argparse.Namespace) -> tuple[dict[int, str], dict[int, int]]:
    """Class id -> name and -> queue from the intent, when one is given."""
    if not args.intent:
        return {}, {}
    intent = load_intent(args.intent)
    return ({c.id: c.name for c in intent.classes}, {c.id: c.queue for c in intent.classes})


def _scope(args: argparse.Namespace, switch_name: str) -> Scope | None:
    """The intent's ports and VRFs for this switch (None: read whole arrays)."""
    if not args.intent:
        return None
    intent = load_intent(args.intent)
    switch = next((s for s in intent.devices if s.name == switch_name), None)
    if switch is None or not switch.ports:
        return None
    return Scope(tuple(p.number for p in switch.ports), tuple(t.vrf for t in intent.tenants))


def _thrift(args: argparse.Namespace, switch_name: str):
    """BMv2's Thrift API for the intent's switch (``target: bmv2`` with a
    ``runtime_address``): registers P4Runtime cannot read there. None otherwise."""
    if not args.intent:
        return None
    intent = load_intent(args.intent)
    switch = next((s for s in intent.devices if s.name == switch_name), None)
    if switch is None or switch.target != "bmv2" or switch.runtime_address is None:
        return None
    from controlplane.reconcile.bmv2_thrift import Bmv2Thrift
    return Bmv2Thrift(switch.runtime_address, args.timeout)


def _unavailable_lines(snap: Snapshot) -> list[str]:
    return [f"note: {kind} not read: {why} (BMv2: give the switch target: bmv2 and its "
            "runtime_address in the intent to read registers over Thrift)"
            for kind, why in sorted(snap.unavailable.items())]


def _rate_lines(before: Snapshot, after: Snapshot, names: dict[int, str]) -> list[str]:
    seconds = max(after.time - before.time, 1e-9)

    def per_s(n: int) -> str:
        return f"{n / seconds:.0f}/s"

    lines = []
    for tc, n in sorted(delta(before, after, "class").items()):
        lines.append(f"class {names.get(tc, tc)}: {per_s(n)}")
    for kind, label in (("ecn_mark", "ECN marks"), ("ecn_drop", "ECN drops"),
                        ("pfc", "PFC pauses")):
        for slot, n in sorted(delta(before, after, kind).items()):
            lines.append(f"{label} port {slot >> 3} queue {slot & 7}: {per_s(n)}")
    for idx, n in sorted(delta(before, after, "fast_cnp").items()):
        lines.append(f"Fast CNP {CNP_OUTCOMES[idx] if idx < 4 else idx}: {per_s(n)}")
    for idx, n in sorted(delta(before, after, "drop").items()):
        lines.append(f"drops {DROP_REASONS[idx] if idx < 8 else idx}: {per_s(n)}")
    for slot, depth in sorted(after.registers.get("queue_depth", {}).items()):
        lines.append(f"queue depth port {slot >> 3} queue {slot & 7}: {depth} pkts")
    return lines or ["(no traffic)"]


def cmd_watch(args: argparse.Namespace) -> int:
    if args.interval <= 0:
        raise UsageError("--interval must be > 0")
    names, _ = _class_maps(args)
    with open_session(args, write=False) as s:
        scope = _scope(args, s.target.name)
        thrift = _thrift(args, s.target.name)
        try:
            before = take_snapshot(s.client, s.builder, scope, thrift)
            for line in _unavailable_lines(before):
                print(f"{s.target.name} {line}", flush=True)
            polls = 0
            while args.count == 0 or polls < args.count:
                time.sleep(args.interval)
                after = take_snapshot(s.client, s.builder, scope, thrift)
                stamp = time.strftime("%H:%M:%S")
                for line in _rate_lines(before, after, names):
                    print(f"{stamp} {s.target.name} {line}", flush=True)
                before, polls = after, polls + 1
        finally:
            if thrift is not None:
                thrift.close()
    return 0


def cmd_diagnose(args: argparse.Namespace) -> int:
    if args.windows < 1 or args.sustain < 1:
        raise UsageError("--windows and --sustain must be >= 1")
    if not 0 < args.ecn_threshold <= 1 or args.pfc_max_rate < 0:
        raise UsageError("--ecn-threshold must be in (0, 1] and --pfc-max-rate >= 0")
    findings: list[analysis.Finding] = []
    if args.latency:
        try:
            points = analysis.read_latency_csv(args.latency)
        except analysis.LatencyFileError as exc:
            raise UsageError(str(exc)) from None
        findings += analysis.tail_oscillation(points, args.tail_ratio)
    if args.address or args.intent:
        findings += _diagnose_switch(args)
    elif not args.latency:
        raise UsageError("give a switch (--intent/--switch or --address) and/or --latency")
    for f in findings:
        print(f"{paint(f.check, 'red')}: {f.message}")
    if not findings:
        print(paint("healthy", "green")
              + ": no sustained ECN marking, no PFC pauses, no tail oscillation")
    return EXIT_FINDINGS if findings else 0


def _diagnose_switch(args: argparse.Namespace) -> list[analysis.Finding]:
    _, class_queue = _class_maps(args)
    with open_session(args, write=False) as s:
        scope = _scope(args, s.target.name)
        thrift = _thrift(args, s.target.name)
        try:
            first = before = take_snapshot(s.client, s.builder, scope, thrift)
            windows = []
            for _ in range(args.windows):
                time.sleep(args.interval)
                after = take_snapshot(s.client, s.builder, scope, thrift)
                windows.append(analysis.mark_rates(before, after, class_queue))
                before = after
        finally:
            if thrift is not None:
                thrift.close()
    for i, ws in enumerate(windows):
        overall = ws[0]
        print(f"window {i + 1}: {overall.packets} packets, {overall.marks} ECN marks "
              f"({overall.rate:.1%})")
    return (analysis.sustained_ecn(windows, args.ecn_threshold, args.sustain)
            + analysis.pfc_pauses(first, before, args.pfc_max_rate))


def cmd_export(args: argparse.Namespace) -> int:
    from prometheus_client import CollectorRegistry, generate_latest, start_http_server

    from controlplane.telemetry.prometheus import TailccCollector

    targets = _scrape_targets(args)
    collector = TailccCollector(targets)
    registry = CollectorRegistry()
    registry.register(collector)
    try:
        if args.once:
            print(generate_latest(registry).decode(), end="")
            return 0
        start_http_server(args.port, addr=args.listen, registry=registry)
        print(f"serving metrics of {', '.join(t.name for t in targets)} on "
              f"http://{args.listen}:{args.port}/metrics", flush=True)
        while True:
            time.sleep(3600)
    finally:
        collector.close()


def _scrape_targets(args: argparse.Namespace):
    from controlplane.telemetry.prometheus import ScrapeTarget

    names, _ = _class_maps(args)
    if args.address:
        return [ScrapeTarget(args.address, args.address, args.device_id or 1, names,
                             args.timeout)]
    if not args.intent:
        raise UsageError("name switches: --intent FILE [--switch NAME], or --address")
    intent = load_intent(args.intent)
    chosen = [s for s in intent.devices if args.switch in (None, s.name)]
    if not chosen:
        raise UsageError(f"no switch {args.switch!r} in {args.intent}")
    vrfs = tuple(t.vrf for t in intent.tenants)
    return [ScrapeTarget(s.name, s.address, s.device_id, names, args.timeout,
                         Scope(tuple(p.number for p in s.ports), vrfs) if s.ports else None,
                         s.runtime_address if s.target == "bmv2" else None,
                         switch_tls(intent, s))
            for s in chosen]
