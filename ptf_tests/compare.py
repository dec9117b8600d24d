#!/usr/bin/env python3
"""Run the PTF suites on softswitch and on BMv2 and compare them test by test.

    ptf_tests/compare.py [--keep DIR] [--alone] [--no-json] [--results RUN=FILE]...
                         [-- TESTS]

Runs ``ptf_tests/run.py`` on both targets, one after the other (the machine's cores
go to one switch at a time, which the timing tests need): softswitch from its own
artifact, softswitch from p4c's BMv2 JSON and P4Info (``softswitch-json``; not with
``--no-json``), and BMv2; tailcc.p4 is compiled once by ``p4c-bm2-ss``. Prints one row
per test with every run's outcome (PASS/FAIL/SKIP, and the skip message) and a
closing line. A test whose outcomes differ must be explained, for each run where it
does not pass (``softswitch-json`` by softswitch's lists), by
``ptf_tests/known_failures.txt`` or the "Target differences" table of
``ptf_tests/README.md`` (read by ``ptf_tests/expectations.py``); the exit status is 1
when a difference is not explained, 2 when a run gave no results.

``--alone`` also runs every test on its own on each target and checks that it has the
same outcome as in the whole-suite run (no test depends on another one's leftovers).
``--results RUN=FILE`` takes a run's ``results.txt`` from an earlier run instead of
running it. ``make ptf-compare`` runs this; it needs root, as ``run.py`` does.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

from ptf_tests import expectations  # noqa: E402
from ptf_tests.expectations import Result  # noqa: E402

TARGETS = expectations.TARGETS
# run -> the target whose switch it runs and whose expectation lists judge it
JSON_RUN = "softswitch-json"
RUN_TARGET = {"softswitch": "softswitch", JSON_RUN: "softswitch", "bmv2": "bmv2"}


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    split = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(prog="ptf_tests/compare.py",
                                description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--keep", type=Path, metavar="DIR",
                   help="keep each run's work directory (DIR/softswitch, DIR/bmv2, ...)")
    p.add_argument("--alone", action="store_true",
                   help="also run each test alone on each target and compare")
    p.add_argument("--no-json", action="store_true",
                   help=f"leave out the {JSON_RUN} run (softswitch from p4c's BMv2 JSON)")
    p.add_argument("--results", action="append", default=[], metavar="RUN=FILE",
                   help="use this results.txt for RUN instead of running it")
    ns = p.parse_args(argv[:split])
    ns.runs = [r for r in RUN_TARGET if not (ns.no_json and r == JSON_RUN)]
    given: dict[str, Path] = {}
    for item in ns.results:
        run, _, path = item.partition("=")
        if run not in ns.runs or not path:
            p.error(f"--results {item!r}: expected RUN=FILE, RUN one of "
                    f"{', '.join(ns.runs)}")
        given[run] = Path(path)
    ns.given = given
    return ns, argv[split + 1:]


# ----------------------------------------------------------------- running
def compile_bmv2(work: Path) -> list[str]:
    """run.py arguments for BMv2 with tailcc.p4 compiled once here."""
    from softswitch.devtools import reference_tools as rt

    tools = rt.ensure()
    if tools is None:
        raise SystemExit(f"ptf-compare: BMv2: {rt.missing_reason()}")
    work.mkdir(parents=True, exist_ok=True)
    json, p4info = work / "tailcc.json", work / "tailcc.p4info.txtpb"
    proc = subprocess.run([tools.p4c, "--arch", "v1model", "-o", str(json),
                           "--p4runtime-files", str(p4info), str(ROOT / "p4src" / "tailcc.p4")],
                          capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"ptf-compare: p4c-bm2-ss failed:\n{proc.stderr[-3000:]}")
    return ["--bmv2-json", str(json), "--p4info", str(p4info)]


def run_suite(run: str, work: Path, target_args: list[str], tests: list[str]
              ) -> tuple[dict[str, Result], float]:
    """One run.py for ``run``; its results and how long it took (seconds)."""
    work.mkdir(parents=True, exist_ok=True)
    target = RUN_TARGET[run]
    cmd = [sys.executable, str(HERE / "run.py"), "--target", target, "--keep", str(work),
           *target_args, "--", *tests]
    start = time.monotonic()
    with open(work / "run.log", "w") as log:
        subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    elapsed = time.monotonic() - start
    results_file = work / "results.txt"
    if not results_file.exists():
        tail = (work / "run.log").read_text()[-3000:]
        raise SystemExit(f"ptf-compare: {run}: no results ({work / 'run.log'}):\n{tail}")
    return expectations.read_results(results_file), elapsed


# ----------------------------------------------------------------- judging
def outcome(r: Result | None) -> str:
    return "-" if r is None else r.verdict


def explain(name: str, results: dict[str, Result | None],
            listed: dict[str, dict[str, expectations.Expected]]) -> tuple[bool, str]:
    """(explained, note) for a test whose outcomes differ between the targets."""
    notes, ok = [], True
    for target, r in results.items():
        if r is not None and r.verdict == "PASS":
            continue
        e = listed[RUN_TARGET[target]].get(name)
        if r is None:
            ok = False
            notes.append(f"{target}: did not run")
        elif e is None:
            ok = False
            notes.append(f"{target}: UNEXPLAINED {r.verdict}")
        elif not expectations.matches(e, r):
            ok = False
            notes.append(f"{target}: skips without naming `{e.extension}`"
                         if e.verdict == r.verdict else
                         f"{target}: listed as {e.verdict}, but {r.verdict}")
        elif e.verdict == "SKIP":
            notes.append(f"{target} skip: {r.reason} [README]")
        else:
            notes.append(f"{target}: known failure: {e.reason}")
    return ok, "; ".join(notes)


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join([*(c.ljust(w) for c, w in zip(r, widths, strict=False)),
                                r[-1]]).rstrip() for r in rows)


def run_args(run: str, work: Path, built: dict[str, list[str]]) -> list[str]:
    """run.py arguments of a run; tailcc.p4 is compiled by p4c once for all of them."""
    if run == "softswitch":
        return []
    if "p4c" not in built:
        built["p4c"] = compile_bmv2(work / "bmv2-build")
    return built["p4c"] + (["--config", "json"] if run == JSON_RUN else [])


def main(argv: list[str] | None = None) -> int:
    ns, tests = parse_args(list(sys.argv[1:] if argv is None else argv))
    work = ns.keep or Path(tempfile.mkdtemp(prefix="tailcc-ptf-compare-"))
    try:
        runs = ns.runs     # the columns: each run, judged by its run's lists
        listed = {t: expectations.expected(t) for t in expectations.TARGETS}
        built: dict[str, list[str]] = {}
        whole: dict[str, dict[str, Result]] = {}
        for run in runs:
            if run in ns.given:
                whole[run] = expectations.read_results(ns.given[run])
                continue
            print(f"ptf-compare: {run}: running the suite ...", flush=True)
            whole[run], took = run_suite(run, work / run,
                                            run_args(run, work, built), tests)
            print(f"ptf-compare: {run}: {len(whole[run])} tests in {took:.0f} s",
                  flush=True)

        alone: dict[str, dict[str, Result]] = {t: {} for t in runs}
        if ns.alone:
            for run in runs:
                for name in sorted(whole[run]):
                    got, _ = run_suite(run, work / "alone" / run / name,
                                       run_args(run, work, built), [name])
                    alone[run][name] = got.get(name, Result("-"))
                    print(f"ptf-compare: {run}: alone {name}: "
                          f"{alone[run][name].verdict}", flush=True)

        names = sorted(set().union(*whole.values()))
        head = ["test", *runs] + ([f"{t} alone" for t in runs] if ns.alone else [])
        rows = [[*head, "note"]]
        differ = unexplained = isolation = 0
        for name in names:
            got = {t: whole[t].get(name) for t in runs}
            cells = [name, *(outcome(got[t]) for t in runs)]
            notes = []
            if ns.alone:
                for t in runs:
                    a = alone[t].get(name)
                    cells.append(outcome(a))
                    if a is not None and got[t] is not None and a.verdict != got[t].verdict:
                        isolation += 1
                        notes.append(f"{t}: {got[t].verdict} in the suite, {a.verdict} alone")
            if len({outcome(r) for r in got.values()}) > 1:
                differ += 1
                ok, note = explain(name, got, listed)
                unexplained += not ok
                notes.append(note)
            else:
                notes += [f"{t} skip: {r.reason}" for t, r in got.items()
                          if r is not None and r.verdict == "SKIP"]
            rows.append([*cells, "; ".join(notes)])
        print(table(rows))
        same = len(names) - differ
        print(f"ptf-compare: {len(names)} tests, {same} with the same outcome in every "
              f"run ({', '.join(runs)}), {differ} different ({differ - unexplained} explained, "
              f"{unexplained} unexplained)"
              + (f", {isolation} with another outcome alone" if ns.alone else ""))
        for run in runs:
            v = expectations.check(RUN_TARGET[run], whole[run])
            if not v.ok:
                print(f"ptf-compare: {run} against its lists:\n{v.describe()}")
        return 1 if unexplained or isolation else 0
    finally:
        if ns.keep is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"ptf-compare: runs kept in {work}")


if __name__ == "__main__":
    sys.exit(main())
