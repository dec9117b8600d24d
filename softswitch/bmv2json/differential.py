"""p4c's STF corpus run on softswitch twice: from the P4 source and from p4c's BMv2 JSON.

Usage: ``python -m softswitch.bmv2json.differential [CORPUS] [--jobs N] [--only PATTERN]
[--limit N] [--json-dir DIR] [--json-fastpath off|auto|require]``. Each STF program of
the corpus (walked as :mod:`softswitch.devtools.conformance` walks it) is compiled by the
real ``p4c-bm2-ss`` into ``--json-dir`` (kept as a cache keyed by the source's
modification time), then its STF test runs on softswitch from the source and from the
JSON, each in a forked worker with a time limit (``--json-fastpath require``: the JSON
side on the compiled C pipeline only). A program *agrees* when both runs give the same
verdict (pass or fail); otherwise the line names the difference and its reason (the
JSON refused at load, or the first line of the failing run's report). The last line is
the agreement figure; the exit status is 1 when a program disagrees.
"""

from __future__ import annotations

import argparse
import fnmatch
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from softswitch.diagnostics import P4Error

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_JSON_DIR = REPO_ROOT / "out" / "bmv2json"
DEFAULT_CORPUS = REPO_ROOT.parent / "shared" / "conformance"
TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Case:
    """One STF program: its source, test, and where p4c's JSON of it goes."""

    name: str
    source: Path
    stf: Path
    json: Path
    fastpath: str | None = None   # the JSON side's packet path (off, auto, require)


@dataclass
class Verdicts:
    """The two verdicts of one program (``None``: p4c could not compile it)."""

    name: str
    source_ok: bool | None
    json_ok: bool | None
    reason: str = ""
    error: bool = False   # the worker crashed or timed out: neither verdict is known

    @property
    def agrees(self) -> bool:
        return self.source_ok == self.json_ok


def cases(corpus: Path, json_dir: Path, only: str | None = None) -> list[Case]:
    """The corpus's STF programs (``only``: a glob over their names)."""
    from softswitch.devtools.conformance import load_programs

    out = []
    for prog in load_programs(corpus):
        if prog.stf is None or prog.kind != "accept":
            continue
        if only and not fnmatch.fnmatch(prog.name, only):
            continue
        out.append(Case(prog.name, prog.path, prog.stf,
                        json_dir / (prog.path.stem + ".json")))
    return out


def compile_json(case: Case, p4c: str) -> str | None:
    """Compile ``case`` with p4c-bm2-ss unless its JSON is fresh; the error, or None."""
    if case.json.exists() and case.json.stat().st_mtime >= case.source.stat().st_mtime:
        return None
    case.json.parent.mkdir(parents=True, exist_ok=True)
    cmd = [p4c, "--arch", "v1model", "-I", str(case.source.parent), "-o", str(case.json),
           str(case.source)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return "p4c-bm2-ss timed out"
    if proc.returncode != 0:
        case.json.unlink(missing_ok=True)
        lines = [ln for ln in proc.stderr.splitlines() if "error" in ln] or ["failed"]
        return "p4c-bm2-ss: " + lines[0]
    return None


def _first(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def _verdict(run) -> tuple[bool, str]:
    try:
        result = run()
    except P4Error as e:
        return False, _first(str(e))
    return result.ok, "" if result.ok else _first(result.report)


def run_case(case: Case) -> Verdicts:
    """Both runs of one compiled program (inside a worker)."""
    from softswitch import bmv2json
    from softswitch.stf import run_stf

    src_ok, src_why = _verdict(lambda: run_stf(str(case.source), str(case.stf),
                                               (str(case.source.parent),), None))
    json_ok, json_why = _verdict(lambda: bmv2json.run_stf(case.json, case.stf,
                                                          fastpath=case.fastpath))
    reason = ""
    if src_ok != json_ok:
        reason = f"json: {json_why}" if src_ok else f"source: {src_why}"
    return Verdicts(case.name, src_ok, json_ok, reason)


def _failed(case: Case, why: str) -> Verdicts:
    return Verdicts(case.name, None, None, f"error: {_first(why)}", error=True)


def compare(selected: list[Case], p4c: str, jobs: int = 2,
            fastpath: str | None = None) -> list[Verdicts]:
    """Compile and run ``selected`` (the JSON side on packet path ``fastpath``); outcomes
    in the order the programs finish."""
    from softswitch.forked_jobs import run_forked

    outcomes: list[Verdicts] = []
    ready = []
    for case in selected:
        err = compile_json(case, p4c)
        if err:
            outcomes.append(Verdicts(case.name, None, None, err))
        else:
            ready.append(replace(case, fastpath=fastpath))
    outcomes += run_forked(ready, run_case, _failed, workers=jobs, timeout=TIMEOUT_S)
    return outcomes


def summary(outcomes: list[Verdicts]) -> str:
    ran = [o for o in outcomes if not (o.source_ok is None and o.json_ok is None)]
    same = sum(o.agrees for o in ran)
    share = 100.0 * same / len(ran) if ran else 0.0
    errors = sum(o.error for o in outcomes)
    return (f"agreement: {same}/{len(ran)} programs give the same STF verdict from p4c's "
            f"JSON as from source ({share:.1f}%); {len(ran) - same} differ; "
            f"{errors} worker errors; {len(outcomes) - len(ran) - errors} not compiled by "
            "p4c-bm2-ss")


def _line(o: Verdicts) -> str:
    def word(ok: bool | None) -> str:
        return {True: "pass", False: "FAIL", None: "-"}[ok]
    status = "same" if o.agrees else "DIFF"
    if o.source_ok is None and o.json_ok is None:
        status = "ERR" if o.error else "skip"
    tail = f"  {o.reason}" if o.reason else ""
    return f"{status:4}  source {word(o.source_ok):4}  json {word(o.json_ok):4}  {o.name}{tail}"


def main(argv: list[str] | None = None) -> int:
    from softswitch.devtools import reference_tools

    ap = argparse.ArgumentParser(prog="python -m softswitch.bmv2json.differential")
    ap.add_argument("corpus", nargs="?")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", help="glob over program names (DIR/FILE.p4)")
    ap.add_argument("--limit", type=int, help="at most this many programs")
    ap.add_argument("--json-dir", type=Path, default=DEFAULT_JSON_DIR)
    ap.add_argument("--json-fastpath", choices=("off", "auto", "require"),
                    help="the JSON side's packet path (default: as the source side's)")
    args = ap.parse_args(argv)
    tools = reference_tools.find()
    if tools is None:
        print("error: p4c-bm2-ss not found: " + reference_tools.missing_reason(),
              file=sys.stderr)
        return 2
    selected = cases(Path(args.corpus or DEFAULT_CORPUS), args.json_dir, args.only)[:args.limit]
    outcomes = compare(selected, tools.p4c, args.jobs, args.json_fastpath)
    outcomes.sort(key=lambda o: o.name)
    for o in outcomes:
        print(_line(o))
    print(summary(outcomes))
    return 0 if all(o.agrees and not o.error for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
