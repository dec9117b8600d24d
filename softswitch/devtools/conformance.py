"""Run p4c's own test corpus against softswitch and report pass rates.

Usage: ``python -m softswitch.devtools.conformance [CORPUS_DIR] [--jobs N] [--only PATTERN]
[--update-known-failures]``. The corpus (``manifest.json`` + ``p4_16_samples/`` +
``p4_16_errors/``) defaults to ``$P4_CONFORMANCE_DIR`` or ``../shared/conformance``
relative to the repository root.

Checks per manifest row (a program is named ``DIR/FILE.p4``):

* ``accept``: the front end compiles the program without error;
* ``reject``: compiling raises a ``P4Error`` located (``file:line``) in the program's
  own file (or in a file where p4c itself locates an error). Any other exception is
  an internal error and a failure, never a correct rejection. How often one of our
  error lines is one p4c reported is measured too;
* ``stf``: the program's ``.stf`` packet test passes (``softswitch.stf.run_stf``);
* ``p4info``: the generated P4Info equals p4c's ``.p4info.txtpb`` (entities compared
  by id, independent of order).

Every program runs in its own forked worker with a time limit, so a hang or crash is one
failure instead of a stuck run; ``--jobs`` workers run at once. Results go to
``out/conformance-results.json``; the exit status is 1 when a failure is not listed in
the known-failures file or a listed one now passes.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import multiprocessing
import os
import re
import resource
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from softswitch import forked_jobs
from softswitch.forked_jobs import run_forked

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_KNOWN_FAILURES = REPO_ROOT / "tests" / "conformance_known_failures.txt"
DEFAULT_RESULTS = REPO_ROOT / "out" / "conformance-results.json"
CATEGORIES = ("accept", "reject", "stf", "p4info")
KIND_DIRS = {"accept": "p4_16_samples", "reject": "p4_16_errors"}
DEFAULT_TIMEOUT = 60.0
MEMORY_LIMIT = 3 << 30  # per worker; a runaway program must not take the machine down

_P4C_ERROR = re.compile(r"^(?P<file>[^\s(]+)\((?P<line>\d+)\):.*\berror\b")


def corpus_dir(explicit: str | None = None) -> Path:
    """Where the corpus is: the argument, ``$P4_CONFORMANCE_DIR``, or the default."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("P4_CONFORMANCE_DIR")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "conformance"


@dataclass
class CheckResult:
    """One check of one program; ``message`` explains a failure (first line first)."""

    category: str
    program: str
    ok: bool
    message: str = ""
    seconds: float = 0.0
    detail: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Program:
    """A manifest row, with paths resolved against the corpus."""

    name: str            # DIR/FILE.p4, unique across the corpus
    path: Path
    kind: str
    stf: Path | None
    p4info: Path | None
    stderr: Path | None

    def categories(self) -> list[str]:
        if self.kind == "reject":
            return ["reject"]
        cats = ["accept"]
        if self.stf:
            cats.append("stf")
        if self.p4info:
            cats.append("p4info")
        return cats


def load_programs(corpus: Path) -> list[Program]:
    rows = json.loads((corpus / "manifest.json").read_text())["programs"]
    programs = []
    for row in rows:
        folder = corpus / KIND_DIRS[row["kind"]]

        def opt(key: str, folder: Path = folder, row: dict = row) -> Path | None:
            return folder / row[key] if row.get(key) else None

        programs.append(Program(f"{KIND_DIRS[row['kind']]}/{row['program']}",
                                folder / row["program"], row["kind"], opt("stf"),
                                opt("p4info"), opt("stderr")))
    return programs


# --- the checks (run inside a worker) ---------------------------------------------------

def _first_line(text: str) -> str:
    return next((ln for ln in str(text).splitlines() if ln.strip()), "")


def _internal(err: BaseException) -> tuple[str, dict]:
    tb = traceback.format_exception(type(err), err, err.__traceback__)
    return (f"internal error: {type(err).__name__}: {_first_line(str(err))}",
            {"traceback": "".join(tb[-6:])})


def _same_file(loc_file: str, program: Path) -> bool:
    try:
        if Path(loc_file).resolve() == program.resolve():
            return True
    except OSError:
        pass
    return Path(loc_file).name == program.name


def _p4c_error_locations(stderr: Path | None) -> list[tuple[str, int]]:
    """(file name, line) of every error p4c reported."""
    if stderr is None or not stderr.exists():
        return []
    found = []
    for text in stderr.read_text(errors="replace").splitlines():
        m = _P4C_ERROR.match(text)
        if m:
            found.append((Path(m.group("file")).name, int(m.group("line"))))
    return found


def _compile(prog: Program) -> object:
    from softswitch.frontend.compiler import compile_program

    return compile_program(str(prog.path), (str(prog.path.parent),), None)


def check_accept(prog: Program) -> tuple[CheckResult, object]:
    from softswitch.diagnostics import P4Error

    try:
        checked = _compile(prog)
    except P4Error as err:
        return CheckResult("accept", prog.name, False, _first_line(str(err))), None
    except Exception as err:  # noqa: BLE001 - any bug is a failure, never a crash
        msg, detail = _internal(err)
        return CheckResult("accept", prog.name, False, msg, detail=detail), None
    return CheckResult("accept", prog.name, True), checked


def check_reject(prog: Program) -> CheckResult:
    from softswitch.diagnostics import P4Error

    p4c_locs = _p4c_error_locations(prog.stderr)
    p4c_lines = {line for name, line in p4c_locs if name == prog.path.name}
    # An error belongs in the program's own file, or wherever p4c itself puts it (a
    # bad V1MODEL_VERSION is reported in v1model.p4).
    allowed = {prog.path.name} | {name for name, _ in p4c_locs}
    try:
        _compile(prog)
    except P4Error as err:
        loc = err.loc
        detail = {"p4c_lines": sorted(p4c_lines), "line": loc.line if loc else None}
        if loc is None or loc.line <= 0:
            return CheckResult("reject", prog.name, False,
                               f"rejected without a source location: {_first_line(str(err))}",
                               detail=detail)
        if not _same_file(loc.file, prog.path) and Path(loc.file).name not in allowed:
            return CheckResult("reject", prog.name, False,
                               f"error located outside the program: {_first_line(str(err))}",
                               detail=detail)
        detail["line_agrees"] = any(d.loc and (Path(d.loc.file).name, d.loc.line) in p4c_locs
                                    for d in err.diagnostics if d.severity == "error")
        return CheckResult("reject", prog.name, True, _first_line(str(err)), detail=detail)
    except Exception as err:  # noqa: BLE001
        msg, detail = _internal(err)
        return CheckResult("reject", prog.name, False, msg, detail=detail)
    expected = _first_p4c_error(prog.stderr)
    return CheckResult("reject", prog.name, False,
                       f"accepted a program p4c rejects (p4c: {expected})")


def _first_p4c_error(stderr: Path | None) -> str:
    if stderr is None or not stderr.exists():
        return "?"
    for text in stderr.read_text(errors="replace").splitlines():
        if "error" in text:
            return text.strip()
    return "?"


def check_stf(prog: Program) -> CheckResult:
    from softswitch.diagnostics import P4Error
    from softswitch.stf import run_stf

    try:
        result = run_stf(str(prog.path), str(prog.stf), (str(prog.path.parent),), None)
    except P4Error as err:
        return CheckResult("stf", prog.name, False, _first_line(str(err)))
    except Exception as err:  # noqa: BLE001
        msg, detail = _internal(err)
        return CheckResult("stf", prog.name, False, msg, detail=detail)
    if result.ok:
        return CheckResult("stf", prog.name, True)
    problems = [f"port {p.port}: {why}" for p in result.ports for why in p.problems]
    problems += result.failures
    return CheckResult("stf", prog.name, False, problems[0] if problems else "STF test failed",
                       detail={"report": result.report[:4000]})


def entities_by_id(message: object) -> dict:
    """P4Info as {(entity kind, id): dict}, so entity order does not matter."""
    from google.protobuf.json_format import MessageToDict

    flat: dict = {}
    for kind, value in MessageToDict(message).items():
        if isinstance(value, list):
            for item in value:
                ident = item.get("preamble", {}).get("id") or item.get("id") or json.dumps(
                    item, sort_keys=True)
                flat[(kind, str(ident))] = item
        else:
            flat[(kind, "")] = value
    return flat


def check_p4info(prog: Program, checked: object) -> CheckResult:
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    try:
        from softswitch import p4info

        ours = entities_by_id(p4info.generate(checked))
    except Exception as err:  # noqa: BLE001
        msg, detail = _internal(err)
        return CheckResult("p4info", prog.name, False, msg, detail=detail)
    theirs = entities_by_id(text_format.Parse(prog.p4info.read_text(), p4info_pb2.P4Info()))
    for key in sorted(set(ours) | set(theirs)):
        if ours.get(key) != theirs.get(key):
            name = (theirs.get(key) or ours.get(key) or {})
            name = name.get("preamble", {}).get("name", key[1]) if isinstance(name, dict) \
                else key[1]
            what = "missing" if key not in ours else "unexpected" if key not in theirs \
                else "differs"
            return CheckResult("p4info", prog.name, False, f"{key[0]} {name}: {what}",
                               detail={"ours": ours.get(key), "p4c": theirs.get(key)})
    return CheckResult("p4info", prog.name, True)


def run_program(prog: Program) -> list[CheckResult]:
    """All checks of one program (the worker's job), messages relative to the corpus."""
    results = _run_checks(prog)
    folder = str(prog.path.parent) + os.sep
    for r in results:
        r.message = r.message.replace(folder, "")
    return results


def _run_checks(prog: Program) -> list[CheckResult]:
    if prog.kind == "reject":
        return [_timed(check_reject, prog)]
    start = time.monotonic()
    accept, checked = check_accept(prog)
    accept.seconds = time.monotonic() - start
    results = [accept]
    if prog.stf:
        results.append(_timed(check_stf, prog) if accept.ok else CheckResult(
            "stf", prog.name, False, f"does not compile: {accept.message}"))
    if prog.p4info:
        results.append(_timed(check_p4info, prog, checked) if accept.ok else CheckResult(
            "p4info", prog.name, False, f"does not compile: {accept.message}"))
    return results


def _timed(fn: Callable[..., CheckResult], *args: object) -> CheckResult:
    start = time.monotonic()
    result = fn(*args)
    result.seconds = time.monotonic() - start
    return result


# --- the worker pool ----------------------------------------------------------------------

def _run_one(prog: Program) -> list[dict]:
    """In a worker: one program's results (as dicts: they cross a pipe)."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    try:
        results = run_program(prog)
    except BaseException as err:  # noqa: BLE001 - an internal error fails every check
        msg, detail = _internal(err)
        results = [CheckResult(c, prog.name, False, msg, detail=detail)
                   for c in prog.categories()]
    return [asdict(r) for r in results]


def _failed_dicts(prog: Program, why: str) -> list[dict]:
    return [asdict(r) for r in _failed_all(prog, why)]


def _failed_all(prog: Program, message: str) -> list[CheckResult]:
    return [CheckResult(c, prog.name, False, message) for c in prog.categories()]


_PRELOAD = ("softswitch.frontend.compiler", "softswitch.stf", "softswitch.v1model.switch",
            "softswitch.p4info")


def worker_context() -> multiprocessing.context.BaseContext:
    """Workers start warm: the heavy modules imported once (see
    :func:`softswitch.forked_jobs.worker_context`)."""
    return forked_jobs.worker_context(["softswitch.devtools.conformance", *_PRELOAD])


Progress = Callable[[int, int, list[CheckResult]], None]


def run_corpus(programs: list[Program], jobs: int = 2, timeout: float = DEFAULT_TIMEOUT,
               progress: Progress | None = None) -> list[CheckResult]:
    """Run every program in a forked worker, ``jobs`` at a time."""
    results: list[CheckResult] = []
    done = 0

    def finished(_prog: Program, got: list[dict]) -> None:
        nonlocal done
        done += 1
        checks = [CheckResult(**r) for r in got]
        results.extend(checks)
        if progress:
            progress(done, len(programs), checks)

    run_forked(programs, _run_one, _failed_dicts, workers=jobs, timeout=timeout,
               context=worker_context(), on_result=finished)
    order = {p.name: i for i, p in enumerate(programs)}
    results.sort(key=lambda r: (order[r.program], CATEGORIES.index(r.category)))
    return results


# --- known failures and reporting ---------------------------------------------------------

def read_known_failures(path: Path) -> dict[tuple[str, str], str]:
    """``CATEGORY PROGRAM  # reason`` lines as {(category, program): reason}."""
    known: dict[tuple[str, str], str] = {}
    if not path.exists():
        return known
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        body, _, reason = line.partition("#")
        words = body.split()
        if not words:
            continue
        if len(words) != 2 or words[0] not in CATEGORIES:
            raise ValueError(f"{path}:{lineno}: expected 'CATEGORY PROGRAM  # reason', "
                             f"CATEGORY one of {', '.join(CATEGORIES)}")
        known[(words[0], words[1])] = reason.strip()
    return known


def write_known_failures(path: Path, results: list[CheckResult],
                         keep: dict[tuple[str, str], str] | None = None) -> None:
    """Rewrite the known-failures file from ``results`` (plus ``keep`` entries of
    programs that were not run this time)."""
    entries = dict(keep or {})
    for r in results:
        if not r.ok:
            entries[(r.category, r.program)] = r.message.replace("\n", " ")[:160]
    lines = [
        "# Conformance checks softswitch is known to fail (tests/test_conformance.py fails on",
        "# any other failure and on any entry here that passes).",
        "# Format: CATEGORY PROGRAM  # reason. Regenerate with",
        "#   python -m softswitch.devtools.conformance --update-known-failures",
    ]
    for (cat, prog), reason in sorted(entries.items(),
                                      key=lambda kv: (CATEGORIES.index(kv[0][0]), kv[0][1])):
        lines.append(f"{cat} {prog}  # {reason}" if reason else f"{cat} {prog}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


@dataclass
class Comparison:
    regressions: list[CheckResult]
    stale: list[tuple[str, str]]


def compare_with_known(results: list[CheckResult],
                       known: dict[tuple[str, str], str]) -> Comparison:
    """Failures not listed (regressions) and listed entries that passed (stale)."""
    regressions = [r for r in results if not r.ok and (r.category, r.program) not in known]
    stale = [(r.category, r.program) for r in results
             if r.ok and (r.category, r.program) in known]
    return Comparison(regressions, stale)


def rates(results: list[CheckResult]) -> dict[str, tuple[int, int]]:
    """{category: (passed, total)} for the categories that ran."""
    total, passed = Counter(), Counter()
    for r in results:
        total[r.category] += 1
        passed[r.category] += r.ok
    return {cat: (passed[cat], total[cat]) for cat in CATEGORIES if total[cat]}


def summary(results: list[CheckResult]) -> str:
    """Pass rates per category (and how often a rejection's line agrees with p4c)."""
    lines = []
    for cat, (ok, total) in rates(results).items():
        lines.append(f"{cat:7} {ok:4}/{total:<4} ({100.0 * ok / total:5.1f}%)")
    agree = [r for r in results if r.category == "reject" and r.ok]
    if agree:
        n = sum(bool(r.detail.get("line_agrees")) for r in agree)
        lines.append(f"reject lines agreeing with p4c: {n}/{len(agree)}")
    return "\n".join(lines)


def select(programs: list[Program], pattern: str | None) -> list[Program]:
    if not pattern:
        return programs
    return [p for p in programs
            if fnmatch.fnmatch(p.name, pattern) or fnmatch.fnmatch(p.path.name, pattern)
            or pattern in p.name]


def _print_progress(done: int, total: int, got: list[CheckResult]) -> None:
    for r in got:
        if not r.ok:
            print(f"  FAIL {r.category} {r.program}: {r.message}", flush=True)
    if done % 50 == 0 or done == total:
        print(f"[{done}/{total}] programs done", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m softswitch.devtools.conformance",
                                 description="Run p4c's test corpus against softswitch.")
    ap.add_argument("corpus", nargs="?", help="corpus directory (with manifest.json)")
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--only", metavar="PATTERN", help="glob or substring of program names")
    ap.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                    help="seconds per program")
    ap.add_argument("--known-failures", type=Path, default=DEFAULT_KNOWN_FAILURES)
    ap.add_argument("--update-known-failures", action="store_true")
    ap.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    ap.add_argument("--quiet", "-q", action="store_true", help="no per-failure lines")
    args = ap.parse_args(argv)

    corpus = corpus_dir(args.corpus)
    if not (corpus / "manifest.json").exists():
        print(f"error: no conformance corpus at {corpus} (set P4_CONFORMANCE_DIR)",
              file=sys.stderr)
        return 2
    programs = select(load_programs(corpus), args.only)
    start = time.monotonic()
    progress = None if args.quiet else _print_progress
    results = run_corpus(programs, args.jobs, args.timeout, progress)
    elapsed = time.monotonic() - start
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps({
        "corpus": str(corpus), "seconds": elapsed,
        "rates": {cat: {"passed": ok, "total": total}
                  for cat, (ok, total) in rates(results).items()},
        "results": [asdict(r) for r in results]}, indent=1))
    print(summary(results))
    print(f"{len(programs)} programs in {elapsed:.1f} s; results in {args.results}")
    print("slowest: " + ", ".join(f"{r.category} {r.program} {r.seconds:.1f} s"
                                  for r in sorted(results, key=lambda r: -r.seconds)[:3]))

    known = read_known_failures(args.known_failures)
    if args.update_known_failures:
        ran = {p.name for p in programs}
        keep = {k: v for k, v in known.items() if k[1] not in ran}
        write_known_failures(args.known_failures, results, keep)
        print(f"updated {args.known_failures}")
        return 0
    cmp = compare_with_known(results, known)
    for r in cmp.regressions:
        print(f"REGRESSION {r.category} {r.program}: {r.message}")
    for cat, prog in cmp.stale:
        print(f"STALE {cat} {prog}: passes now; remove it from {args.known_failures.name}")
    return 1 if cmp.regressions or cmp.stale else 0


if __name__ == "__main__":
    sys.exit(main())
