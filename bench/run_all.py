"""``make bench``: every benchmark, softswitch beside BMv2 in one run, one ratio table.

Runs, in this order (each writes its own JSON under ``out/bench/``):

* ``veth_pps.py``: bare veth, then l3_basic.p4 and tailcc.p4 over veth on each target;
* ``urgent_latency.py``: the urgent class's latency through tailcc.p4, idle, with
  elephants queued, and with a controller writing over the CLI channel or P4Runtime,
  in ``LATENCY_ROUNDS`` rounds the scenarios take turns in (its doc has the method);
* ``pps.py``: in-process packets/s (interpreter vs C), tailcc.p4 included;
* ``p4runtime_write.py``: P4Runtime insert/modify/delete/read at batches 1/100/1000;
* ``cli_commands.py``: runtime CLI table_modify/delete/add against table size;
* ``tailcc_apply.py --default-intent``: the whole ``tailcc apply`` command;
* compile time of tailcc.p4: ``softswitch compile`` vs ``p4c-bm2-ss`` (whole commands).

BMv2 legs run where the reference tools are installed (``softswitch/reference_tools``)
and are left out with a note otherwise. The table (measure, BMv2, softswitch, ratio,
where a ratio > 1 means softswitch is better) is printed and written to
``out/bench/summary.json``, each row naming its benchmark (``bench``), with each
benchmark's title, for ``performance_doc.py``. A benchmark that fails is reported in the
table and the run goes on; the exit status is 1 then. Needs root for the veth legs.

    python bench/run_all.py [--quick] [--latency-seconds 60] [--skip NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import cli_commands, veth_pps, veth_switch
from bench.performance_doc import fmt_ratio, fmt_value
from softswitch.devtools import reference_tools  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "out" / "bench"
BENCHES = ("veth", "latency", "pps", "p4runtime", "cli", "apply", "compile")
TITLES = {                 # each benchmark's heading in docs/performance.md
    "veth": "Frames/s over veth (bench/veth_pps.py)",
    "latency": "Urgent-class latency under load (bench/urgent_latency.py)",
    "pps": "Packets/s in process (bench/pps.py)",
    "p4runtime": "P4Runtime writes and reads (bench/p4runtime_write.py)",
    "cli": "Runtime CLI commands against table size (bench/cli_commands.py)",
    "apply": "tailcc apply, the whole command (bench/tailcc_apply.py)",
    "compile": "Compile time of tailcc.p4",
}
Row = dict[str, Any]       # measure, unit, bmv2, softswitch, better ("higher"/"lower")


def row(measure: str, unit: str, bmv2: float | None, soft: float | None,
        better: str = "higher") -> Row:
    return {"measure": measure, "unit": unit, "bmv2": bmv2, "softswitch": soft,
            "better": better}


def ratio(r: Row) -> float | None:
    """How many times better softswitch is (> 1: better), whichever way is better."""
    a, b = r["softswitch"], r["bmv2"]
    if not a or not b:
        return None
    return a / b if r["better"] == "higher" else b / a


# --- the benchmarks ------------------------------------------------------------------------
def veth(args: argparse.Namespace, targets: list[str]) -> list[Row]:
    report = veth_pps.measure(args.frames, targets)
    (OUT / "veth_pps.json").write_text(json.dumps(report, indent=2) + "\n")
    pps = {(r["target"], r["program"]): r["pps"] for r in report["rows"]}
    bare = pps.get(("veth", None))
    rows = [row("veth, bare pair, same sender", "frames/s", None, bare)]
    for prog in ("l3_basic", "tailcc"):
        rows.append(row(f"veth, {prog}.p4, max rate", "frames/s", pps.get(("bmv2", prog)),
                        pps.get(("softswitch", prog))))
    if ("softswitch", "tailcc-json") in pps:      # from p4c's JSON, BMv2's config
        rows.append(row("veth, tailcc.p4 from p4c's JSON, max rate", "frames/s",
                        pps.get(("bmv2", "tailcc")), pps[("softswitch", "tailcc-json")]))
    soft_l3 = pps.get(("softswitch", "l3_basic"))
    if bare and soft_l3:
        rows.append(row("veth, l3_basic.p4 / bare veth (softswitch)", "fraction", None,
                        soft_l3 / bare))
    return rows


LATENCY_ROUNDS = 4         # even: each scenario as early as late (urgent_latency)


def latency(args: argparse.Namespace, targets: list[str]) -> list[Row]:
    rounds = LATENCY_ROUNDS if args.latency_seconds >= 2 * LATENCY_ROUNDS else 1
    cmd = [sys.executable, str(ROOT / "bench" / "urgent_latency.py"), "--seconds",
           str(args.latency_seconds / rounds), "--rounds", str(rounds), "--targets",
           *targets, "--json", str(OUT / "urgent_latency.json")]
    _run(cmd)             # each target's max rate measured as it runs there (its doc)
    report = json.loads((OUT / "urgent_latency.json").read_text())
    rows = [row("urgent latency, the max rate its load is 50% of (as configured there)",
                "frames/s", *(report["targets"].get(t, {}).get("max_pps")
                              for t in ("bmv2", "softswitch")))]
    by = {t: {s["scenario"]: s for s in r["scenarios"]} for t, r in report["targets"].items()}
    for scenario in ("idle", "elephants", "elephants+writes", "elephants+p4runtime"):
        for key, label, unit in (
                ("p50_us", "P50", "µs"), ("p99_us", "P99", "µs"), ("p999_us", "P999", "µs"),
                ("max_us", "max", "µs"), ("e2e_p99_us", "P99 from the sender", "µs"),
                ("e2e_max_us", "max from the sender", "µs"),
                ("host_steal_ms", "CPU the hypervisor took meanwhile", "ms")):
            rows.append(row(f"urgent latency, {scenario}, {label}", unit,
                            by.get("bmv2", {}).get(scenario, {}).get(key),
                            by.get("softswitch", {}).get(scenario, {}).get(key), "lower"))
        # the writes scenarios' P99 is while the controller writes; beside it, the
        # same rounds' P99 between its writes (urgent_latency.WRITE_WINDOW_S)
        # and the P99 while writing over the elephants scenario's (the target: within
        # 1.2x), each ratio with where another run's could fall (95%, block_bootstrap)
        for key, label, unit in (
                ("between_p99_us", "P99 between the writes (same rounds)", "µs"),
                ("writing_vs_between_p99", "P99 while writing / between the writes", "x"),
                ("writing_vs_between_p99_interval", "the same, 95% interval", "x"),
                ("vs_elephants_p99", "P99 while writing / the elephants'", "x"),
                ("vs_elephants_p99_interval", "the same, 95% interval", "x")):
            bmv2, soft = (by.get(t, {}).get(scenario, {}).get(key)
                          for t in ("bmv2", "softswitch"))
            if bmv2 is None and soft is None:
                continue
            if not key.endswith("interval"):
                rows.append(row(f"urgent latency, {scenario}, {label}", unit, bmv2, soft,
                                "lower"))
                continue
            for bound, end in ((0, "low"), (1, "high")):
                rows.append(row(f"urgent latency, {scenario}, {label}, {end}", unit,
                                bmv2[bound] if bmv2 else None,
                                soft[bound] if soft else None, "lower"))
    return rows


def pps(args: argparse.Namespace, targets: list[str]) -> list[Row]:
    quick = ["--seconds", "0.5", "--sizes", "1000,10000", "--programs", "0"]
    _run([sys.executable, str(ROOT / "bench" / "pps.py"), *(quick if args.quick else []),
          "--json", str(OUT / "pps.json")])
    results = json.loads((OUT / "pps.json").read_text())
    rows = []
    for name, r in results.items():
        if isinstance(r, dict) and "c_pps" in r and name.startswith(("tailcc", "l3_basic")):
            rows.append(row(f"in process, {name}, C", "packets/s", None, r["c_pps"]))
            rows.append(row(f"in process, {name}, interpreter", "packets/s", None,
                            r["interpreter_pps"]))
    return rows


def p4runtime(args: argparse.Namespace, targets: list[str]) -> list[Row]:
    path = OUT / "p4runtime_write.json"
    cmd = [sys.executable, str(ROOT / "bench" / "p4runtime_write.py"), "--targets",
           *targets, "--json", str(path)]
    if args.quick:
        cmd += ["--entries", "2000"]
    _run(cmd)
    report = json.loads(path.read_text())
    phases = {t: {(p["phase"], p["batch"]): p["entries_per_s"] for p in r["phases"]}
              for t, r in report["targets"].items()}
    keys = list(phases.get("softswitch", {}))
    return [row(f"P4Runtime {phase}{f', batch {batch}' if batch else ''}", "entries/s",
                phases.get("bmv2", {}).get((phase, batch)),
                phases.get("softswitch", {}).get((phase, batch))) for phase, batch in keys]


def cli(args: argparse.Namespace, targets: list[str]) -> list[Row]:
    path = OUT / "cli_commands.json"
    sizes = ["5000", "20000"] if args.quick else ["5000", "20000", "100000"]
    _run([sys.executable, str(ROOT / "bench" / "cli_commands.py"), "--targets", *targets,
          "--sizes", *sizes, "--json", str(path)])
    report = json.loads(path.read_text())
    return [row(f"CLI {kind}, {size} entries", "commands/s",
                cli_commands.rate(report, "bmv2", size, kind),
                cli_commands.rate(report, "softswitch", size, kind))
            for size in report["sizes"] for kind in cli_commands.KINDS]


def apply(args: argparse.Namespace, targets: list[str]) -> list[Row]:
    out = _run([sys.executable, str(ROOT / "bench" / "tailcc_apply.py"), "--default-intent"])
    (OUT / "tailcc_apply.txt").write_text(out)
    rows = []
    for line in out.splitlines():
        m = re.match(r"(tailcc apply \(command\).*?)\s+([0-9.]+)\s*$", line)
        if m:
            rows.append(row(m.group(1).strip(), "s", None, float(m.group(2)), "lower"))
    if not rows:
        raise RuntimeError("tailcc_apply.py printed no 'tailcc apply (command)' rows")
    return rows


def compile_time(args: argparse.Namespace, targets: list[str]) -> list[Row]:
    program = ROOT / "p4src" / "tailcc.p4"
    with tempfile.TemporaryDirectory(prefix="bench-compile-") as tmp:
        soft = _timed([sys.executable, "-m", "softswitch", "compile", str(program), "-o",
                       f"{tmp}/s.json", "--p4runtime-files", f"{tmp}/s.p4info.txtpb"])
        tools = reference_tools.find() if "bmv2" in targets else None
        bmv2 = _timed([tools.p4c, "-o", f"{tmp}/b.json", "--p4runtime-files",
                       f"{tmp}/b.p4info.txtpb", str(program)]) if tools else None
    return [row("compile tailcc.p4 (whole command; BMv2: p4c-bm2-ss)", "s", bmv2, soft,
                "lower")]


# --- plumbing --------------------------------------------------------------------------------
def _run(cmd: list[str]) -> str:
    """Run a benchmark script; its output goes to the console and is returned."""
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    sys.stderr.write(proc.stderr[-4000:])
    print(proc.stdout, flush=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{Path(cmd[1]).name} exited {proc.returncode}")
    return proc.stdout


def _timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{Path(cmd[0]).name} failed: {proc.stderr.strip()[:500]}")
    return time.perf_counter() - t0


def table(rows: list[Row]) -> str:
    lines = [f"| {'measure':<58} | {'BMv2':>12} | {'softswitch':>12} | {'ratio':>7} |",
             f"|{'-' * 60}|{'-' * 14}|{'-' * 14}|{'-' * 9}|"]
    for r in rows:
        x = ratio(r)
        lines.append(f"| {r['measure']:<58} | {fmt_value(r['bmv2'], r['unit']):>12} | "
                     f"{fmt_value(r['softswitch'], r['unit']):>12} | {fmt_ratio(x):>7} |")
    lines.append("ratio: how many times better softswitch is (rate: soft/BMv2; time: BMv2/soft)")
    return "\n".join(lines)


STEPS: dict[str, Callable[[argparse.Namespace, list[str]], list[Row]]] = {
    "veth": veth, "latency": latency, "pps": pps, "p4runtime": p4runtime, "cli": cli,
    "apply": apply,
    "compile": compile_time}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="short runs (a smoke test of the whole bench, not figures)")
    ap.add_argument("--latency-seconds", type=float, default=None,
                    help="per latency scenario, in four rounds (60; --quick: 4, in one)")
    ap.add_argument("--frames", type=int, default=None, help="veth frames (30000)")
    ap.add_argument("--skip", nargs="*", default=[], choices=BENCHES)
    args = ap.parse_args(argv)
    args.latency_seconds = args.latency_seconds or (4.0 if args.quick else 60.0)
    args.frames = args.frames or (5000 if args.quick else 30000)
    if os.geteuid() != 0 and not {"veth", "latency"} <= set(args.skip):
        print("make bench needs root for the veth legs (or --skip veth latency)",
              file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    targets = ["softswitch"]
    notes = []
    why = veth_switch.available("bmv2")
    if why is None:
        targets.append("bmv2")
    else:
        notes.append(f"BMv2 left out: {why}")
    rows: list[Row] = []
    failed: list[str] = []
    errors: dict[str, str] = {}
    ran = [name for name in BENCHES if name not in args.skip]
    for name in ran:
        print(f"== {name}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            rows += [{**r, "bench": name} for r in STEPS[name](args, targets)]
        except (RuntimeError, OSError, KeyError, ValueError, SystemExit) as exc:
            failed.append(name)
            errors[name] = str(exc)
            rows.append({**row(f"{name}: FAILED ({exc})"[:58], "", None, None),
                         "bench": name})
        print(f"== {name}: {time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    print(table(rows))
    for note in notes:
        print(f"  {note}")
    summary = {"rows": [{**r, "ratio": ratio(r)} for r in rows], "notes": notes,
               "benches": {name: TITLES[name] for name in ran}, "targets": targets,
               "failed": failed, "errors": errors, "loadavg": os.getloadavg(),
               "cpus": os.cpu_count(), "host": platform.platform(), "quick": args.quick,
               "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    (OUT / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"  written to {OUT / 'summary.json'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
