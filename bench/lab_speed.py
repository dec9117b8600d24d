"""The lab's speed: CPU-seconds per simulated millisecond of a MoE cell (or another
scenario's), an old commit against this tree, paired in one run on the same machine.

Each run is a fresh Python process that imports the lab from one tree (``PYTHONPATH``),
compiles tailcc.p4 and runs one cell (by default ``moe``, scheme tailcc, seed 1) in
full: traffic, drain, every switch and NIC; what it reports is the CPU time of the cell
(``run_cell``: building the network and running it), divided by the simulated time
(duration plus drain). Old and new alternate, so a load that changes during the run
weighs on both alike; the medians and their ratio (old / new: how many times fewer
CPU-seconds the new tree takes) are printed, and the cells' digests, which must agree
where the model did not change.

    python bench/lab_speed.py [--old 72891f8] [--pairs 3] [--scenario moe] [--scheme tailcc]

``--old``: a checkout of the old commit, or a commit of this repository (default: issue
45's baseline, 72891f8), exported to a temporary directory for the run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "72891f8"        # issue 45's old commit

CHILD = """
import hashlib, json, sys, time
from dataclasses import replace
from taillab.programs import compile_tailcc
from taillab.runner import run_cell
from taillab.scenario import load_scenario
duration, drain = float(sys.argv[1]), float(sys.argv[2])
seed, scheme, name = int(sys.argv[3]), sys.argv[4], sys.argv[5]
scenario = load_scenario(name).scaled(duration or None, (seed,))
if drain >= 0:
    scenario = replace(scenario, drain_us=drain)
checked = compile_tailcc()
started = time.process_time()
cell = run_cell(scenario, scheme, seed, "auto", checked)
cpu = time.process_time() - started
cell.pop("wall_s")
digest = hashlib.sha256(json.dumps(cell, sort_keys=True).encode()).hexdigest()[:16]
print(json.dumps({"cpu_s": cpu, "sim_ms": (scenario.duration_us + scenario.drain_us) / 1e3,
                  "digest": digest, "events": cell["sim_events"]}))
"""


def run_one(tree: Path, args: argparse.Namespace) -> dict[str, float | str]:
    """One cell in a fresh process importing the lab from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(args.duration_us),
                           str(args.drain_us), str(args.seed), args.scheme, args.scenario],
                          cwd=tree, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"lab_speed: the cell failed in {tree}:\n{proc.stderr.strip()[-2000:]}")
    result: dict[str, float | str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def export(commit: str, into: Path) -> Path:
    """The tree of ``commit`` (this repository's) written out under ``into``."""
    proc = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit],
                          capture_output=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"lab_speed: --old {commit}: neither a directory nor a commit here: "
                 f"{proc.stderr.decode(errors='replace').strip()}")
    tree = into / commit
    tree.mkdir()
    untar = subprocess.run(["tar", "-x", "-C", str(tree)], input=proc.stdout,
                           capture_output=True, check=False)
    if untar.returncode != 0:
        sys.exit(f"lab_speed: unpacking {commit}: {untar.stderr.decode(errors='replace')}")
    return tree


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--old", default=BASELINE,
                    help=f"checkout or commit of the old tree (default {BASELINE})")
    ap.add_argument("--new", type=Path, default=ROOT, help="checkout to compare (this one)")
    ap.add_argument("--pairs", type=int, default=3, help="old/new pairs, alternating")
    ap.add_argument("--duration-us", type=float, default=0.0,
                    help="traffic duration (default: the scenario's)")
    ap.add_argument("--drain-us", type=float, default=-1.0,
                    help="drain after the traffic (default: the scenario's)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scheme", default="tailcc")
    ap.add_argument("--scenario", default="moe", help="the lab scenario (default moe)")
    ap.add_argument("--json", type=Path, help="also write the runs and medians here")
    args = ap.parse_args(argv)
    if args.pairs < 1:
        ap.error(f"--pairs must be >= 1, not {args.pairs}")
    with tempfile.TemporaryDirectory(prefix="lab_speed-") as tmp:
        old = Path(args.old)
        if not old.is_dir():
            old = export(args.old, Path(tmp))
        for tree in (old, args.new):
            if not (tree / "taillab").is_dir():
                ap.error(f"{tree}: not a checkout of the project (no taillab/)")
        return compare(old, args)


def compare(old: Path, args: argparse.Namespace) -> int:
    """The pairs, old then new, and the medians."""
    runs: dict[str, list[dict[str, float | str]]] = {"old": [], "new": []}
    for k in range(args.pairs):
        for label, tree in (("old", old), ("new", args.new)):
            r = run_one(tree, args)
            runs[label].append(r)
            print(f"pair {k + 1} {label}: {r['cpu_s']:.2f} CPU-s for {r['sim_ms']:.2f} "
                  f"simulated ms = {float(r['cpu_s']) / float(r['sim_ms']):.3f} CPU-s/ms "
                  f"(digest {r['digest']}, {r['events']} events)", flush=True)
    med = {label: statistics.median(float(r["cpu_s"]) / float(r["sim_ms"]) for r in rs)
           for label, rs in runs.items()}
    same = {r["digest"] for r in runs["old"]} == {r["digest"] for r in runs["new"]}
    print(f"{args.scenario} {args.scheme} seed {args.seed}: old {med['old']:.3f}, "
          f"new {med['new']:.3f} CPU-s per simulated ms (medians of {args.pairs}); "
          f"old/new = {med['old'] / med['new']:.2f}x; cells "
          f"{'identical' if same else 'DIFFERENT'}")
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "median_cpu_s_per_ms": med,
                                         "ratio": med["old"] / med["new"],
                                         "cells_identical": same}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
