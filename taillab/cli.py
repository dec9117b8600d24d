"""``tailcc lab SCENARIO``: run a lab scenario and report it (also ``python -m taillab``).

The command is thin: it reads the scenario (a shipped name or a YAML path), runs the
grid of (scheme, seed) cells on local cores, prints the table and the issue's targets,
and writes JSON, CSV and PNGs under ``--out`` (default ``out/lab/<scenario>``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from taillab.scenario import SCHEMES, ScenarioError, builtin_names, load_scenario


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", help="shipped scenario name (" + ", ".join(builtin_names())
                   + ") or a scenario YAML file")
    p.add_argument("--duration-us", type=_positive, help="override the scenario's duration")
    p.add_argument("--seeds", type=_seeds, help="override the seeds, e.g. 1,2,3")
    p.add_argument("--load-scale", type=_positive, default=1.0,
                   help="multiply every class's offered load (a point of a load sweep)")
    p.add_argument("--sweep", type=_loads, metavar="LOADS",
                   help="a load sweep: run at each average host-link load (e.g. "
                   "0.3,0.5,0.7,0.9) and plot P99 slowdown against load")
    p.add_argument("--schemes", type=_schemes, help="subset of " + ",".join(SCHEMES))
    p.add_argument("--jobs", type=int, default=0,
                   help="parallel grid cells (default: every local core)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="run the grid on this Dask cluster (tcp://host:8786) instead of "
                   "local cores")
    p.add_argument("--out", help="output directory (default out/lab/SCENARIO)")
    p.add_argument("--fastpath", choices=("auto", "off", "require"), default="auto",
                   help="softswitch packet path (default auto: C where it builds)")
    p.add_argument("--fresh", action="store_true", help="rerun cells finished before")


def _positive(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return v


def _seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"seeds are integers separated by commas, not "
                                         f"{text!r}") from None
    return seeds


def _loads(text: str) -> tuple[float, ...]:
    try:
        loads = tuple(float(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"loads are numbers separated by commas, not "
                                         f"{text!r}") from None
    if not all(0 < x < 1 for x in loads):
        raise argparse.ArgumentTypeError(f"loads are shares of a link, in (0, 1): {text!r}")
    return loads


def _schemes(text: str) -> tuple[str, ...]:
    names = tuple(text.split(","))
    bad = [n for n in names if n not in SCHEMES]
    if bad:
        raise argparse.ArgumentTypeError(f"unknown scheme {bad[0]!r} (known: "
                                         f"{', '.join(SCHEMES)})")
    return names


def run(args: argparse.Namespace) -> int:
    """Returns the exit status; raises ScenarioError for a bad scenario."""
    if args.sweep:
        return run_sweep(args)
    run_one(args)
    return 0


def run_sweep(args: argparse.Namespace) -> int:
    """Each load of the sweep is one ordinary run (its own directory, cells kept), then
    P99 slowdown per class and scheme against load: sweep.csv and sweep.png."""
    from taillab.lab_report import write_sweep
    from taillab.traffic import average_load

    base = load_scenario(args.scenario).scaled(args.duration_us, args.seeds)
    nominal = average_load(base, base.seeds[0])
    root = Path(args.out or f"out/lab/{base.name}-sweep")
    points = []
    for load in args.sweep:
        print(f"\n=== average load {load:.0%} (x{load / nominal:.2f} of the scenario's "
              f"{nominal:.0%})", flush=True)
        sub = argparse.Namespace(**{**vars(args), "sweep": None,
                                    "load_scale": load / nominal,
                                    "out": str(root / f"load{load:g}")})
        points.append((load, run_one(sub)))
    paths = write_sweep(points, root)
    print("\nwrote " + ", ".join(str(p) for p in paths))
    return 0


def run_one(args: argparse.Namespace) -> dict[str, Any]:
    """One run of a scenario; returns its summary (per scheme)."""
    from dataclasses import replace

    from taillab.bounds import class_floors
    from taillab.lab_report import (
        aggregate,
        format_distances,
        format_tables,
        format_verdict,
        verdict,
        write_outputs,
    )
    from taillab.runner import default_jobs, run_grid

    scenario = load_scenario(args.scenario).scaled(args.duration_us, args.seeds,
                                                   args.load_scale)
    if args.schemes:
        scenario = replace(scenario, schemes=args.schemes)
    suffix = f"-load{args.load_scale:g}" if args.load_scale != 1.0 else ""
    out = Path(args.out or f"out/lab/{scenario.name}{suffix}")
    if args.fresh and (out / "cells").is_dir():
        for f in (out / "cells").glob("*.json"):
            f.unlink()
    jobs = args.jobs or default_jobs()
    where = f"Dask at {args.scheduler}" if args.scheduler else f"{jobs} parallel job(s)"
    print(f"{scenario.name}: {scenario.description}\n  {len(scenario.schemes)} schemes x "
          f"{len(scenario.seeds)} seeds, {scenario.duration_us:.0f} us each, "
          f"{scenario.topology.leaves} leaves x {scenario.topology.hosts_per_leaf} hosts, "
          f"{scenario.topology.spines} spines; {where}", flush=True)
    cells = run_grid(scenario, out, jobs, args.fastpath,
                     progress=lambda line: print(line, flush=True), scheduler=args.scheduler)
    floors = class_floors(scenario)
    summary = aggregate(scenario, cells, floors)
    print(format_tables(summary))
    print("\n" + format_distances(summary, floors))
    rows = verdict(summary, floors)
    if rows:
        print("\ntargets (issue 45, each tailcc scheme vs baseline, floor and ideal-srpt):")
        print(format_verdict(rows))
    paths = write_outputs(scenario, cells, summary, out, floors)
    print("\nwrote " + ", ".join(str(p) for p in paths))
    return summary


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="taillab", description=__doc__.split("\n\n")[0])
    add_arguments(p)
    args = p.parse_args(argv)
    from taillab.programs import LabError

    try:
        return run(args)
    except (ScenarioError, LabError) as exc:
        print(f"taillab: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
