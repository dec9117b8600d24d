"""The tail-latency lab: per-class P50/P99/P999 under training-era vs tailcc configuration.

Runs one seeded inference workload (scheduling signals and hot KV-cache blocks beside
MoE all-to-all bursts and bulk transfers, all RoCEv2 with the same DSCP, incast into one
decode node) through ``p4src/tailcc.p4`` on softswitch twice — programmed as a
training-era fabric, then as tailcc — and prints each class's message-completion
percentiles, the ECN/CNP activity, and a PNG of the percentiles.

    python bench/tail_latency.py [--duration-us 4000] [--seed 1] [--plot out/tail_latency.png]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

from softswitch.v1model.fast_switch import load_switch
from taillab.fabric import CONFIGS, LabSwitch  # noqa: E402
from taillab.programs import TAILCC_P4  # noqa: E402
from taillab.report import ClassLatency, format_table, plot, summarise  # noqa: E402
from taillab.sim import LinkSpec, Simulation  # noqa: E402
from taillab.workload import DEFAULT_MIX, generate  # noqa: E402

NUM_SENDERS = 8


def run_config(name: str, switch_factory, messages, duration_us: float,
               link: LinkSpec) -> tuple[list[ClassLatency], dict[str, int]]:
    commands_for, receiver_cnps = CONFIGS[name]
    lab_switch = LabSwitch.build(switch_factory(), commands_for(NUM_SENDERS), NUM_SENDERS,
                                 link.rate_bps)
    sim = Simulation(lab_switch, NUM_SENDERS, link, receiver_cnps=receiver_cnps)
    started = time.monotonic()
    sim.run(messages, duration_us, drain_us=duration_us * 4)
    samples: dict[str, list[float]] = defaultdict(list)
    for c in sim.completions:
        samples[c.msg.cls].append(c.latency_us)
    ordered = {cls: samples.get(cls, []) for cls in DEFAULT_MIX}
    stats = {
        "messages": len(messages),
        "completed": len(sim.completions),
        "packets": sim.packets_delivered,
        "ce_at_receiver": sim.ce_received,
        "cnps_at_senders": sim.cnps_received,
        "fast_cnps": lab_switch.counter("fast_cnp_counter", 0)[0],
        "tm_drops": lab_switch.queued.dropped_at_enqueue + sum(
            ep.stats(q).dropped for ep in lab_switch.queued.tm.ports.values()
            for q in range(8)),
        "wall_s": round(time.monotonic() - started, 1),
    }
    return summarise(ordered), stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration-us", type=float, default=4000.0,
                    help="simulated time during which messages start (default 4000)")
    ap.add_argument("--seed", type=int, default=1, help="workload seed")
    ap.add_argument("--link-gbps", type=float, default=10.0, help="every link's rate")
    ap.add_argument("--plot", default="out/tail_latency.png", help="PNG output path")
    args = ap.parse_args(argv)
    if args.duration_us <= 0 or args.link_gbps <= 0:
        ap.error("--duration-us and --link-gbps must be positive")

    from softswitch.diagnostics import P4Error
    from softswitch.frontend.compiler import compile_program

    print(f"compiling {TAILCC_P4.name} on softswitch ...", flush=True)
    try:
        checked = compile_program(str(TAILCC_P4))
    except P4Error as err:
        print(err, file=sys.stderr)
        return 1
    link = LinkSpec(rate_bps=args.link_gbps * 1e9, prop_us=1.0)
    messages = generate(args.duration_us, seed=args.seed)
    print(f"workload: {len(messages)} messages in {args.duration_us:.0f} us from "
          f"{NUM_SENDERS} senders into one {args.link_gbps:g} Gb/s port", flush=True)

    results: dict[str, list[ClassLatency]] = {}
    for name in CONFIGS:
        print(f"running {name} ...", flush=True)
        rows, stats = run_config(name, lambda: load_switch(checked), messages,
                                 args.duration_us, link)
        results[name] = rows
        print(format_table(f"\n{name}: message completion time", rows))
        print("  " + ", ".join(f"{k} {v}" for k, v in stats.items()) + "\n", flush=True)

    _print_verdict(results)
    Path(args.plot).parent.mkdir(parents=True, exist_ok=True)
    plot(results, args.plot)
    print(f"plot: {args.plot}")
    return 0


def _print_verdict(results: dict[str, list[ClassLatency]]) -> None:
    base = {r.cls: r for r in results["training-era"]}
    ours = {r.cls: r for r in results["tailcc"]}
    print("P99 change, tailcc vs training-era:")
    for cls in base:
        b, t = base[cls], ours.get(cls)
        if t is None or not b.p99 or not t.count:
            continue
        print(f"  {cls:<14}{b.p99:>10.1f} us -> {t.p99:>10.1f} us  ({t.p99 / b.p99:>5.2f}x)")


if __name__ == "__main__":
    sys.exit(main())
