"""Differential testing of softswitch's front end against real ``p4test``.

Each mutant (:mod:`softswitch.devtools.difftest.mutate`) is compiled by ``p4test
--p4runtime-files`` (p4c's front and mid end plus its P4Runtime serializer, the way p4c's
own test corpus was made) and by softswitch (front end plus P4Info generation, what
``softswitch compile --p4runtime-files`` does). Then:

* both accept: the P4Info must be equal (entities compared by id, order aside);
* both reject: agreement (the messages may differ);
* one accepts, the other rejects: a disagreement. When p4test accepts and softswitch
  rejects, p4c's BMv2 compiler (``p4c-bm2-ss``) is asked too: softswitch compiles for
  the v1model target, so a program that BMv2's compiler rejects as well is rightly
  rejected (kind ``target``, an agreement);
* softswitch fails with an internal error: always a failure;
* p4test itself crashes (``Compiler Bug``), runs out of memory or time: there is no
  reference verdict, so the mutant is counted apart (``p4test-crash``), not compared.

PNA programs (:func:`pna_sources`) run the same way with ``p4test --arch pna``; there is
no p4c back end for p4c's generic PNA to escalate to, so a rejection by softswitch alone
is always a disagreement.

A disagreement is either a bug to fix or listed in the known-disagreements file
(``tests/differential_known.txt``): a kind and a regular expression over the case's
summary line, with the reason. :func:`undocumented` returns the rest.
"""

from __future__ import annotations

import json
import random
import re
import resource
import signal
import subprocess
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from softswitch.devtools.difftest import generate
from softswitch.devtools.difftest.mutate import Mutant, mutants, mutate
from softswitch.forked_jobs import run_forked

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_KNOWN = REPO_ROOT / "tests" / "differential_known.txt"
P4TEST_TIMEOUT = 30.0
CASE_TIMEOUT = 120.0
MEMORY_LIMIT = 3 << 30
KINDS = ("agree", "target", "p4test-crash", "softswitch-accepts", "softswitch-rejects",
         "p4info", "internal")
DISAGREEMENTS = ("softswitch-accepts", "softswitch-rejects", "p4info", "internal")

_P4C_ERROR = re.compile(r"\berror\b", re.I)


@dataclass
class Verdict:
    """One compiler's answer: ``accept``, ``reject``, ``crash`` (p4test) or ``internal``
    (softswitch), with its first error line."""

    outcome: str
    message: str = ""
    lines: list[int] = field(default_factory=list)  # error lines in the program (p4c)


@dataclass
class Case:
    index: int
    source: str
    what: str
    kind: str
    p4test: Verdict
    softswitch: Verdict
    bmv2: Verdict | None = None
    detail: str = ""
    seconds: float = 0.0

    def summary(self) -> str:
        """The line known-disagreement patterns match against."""
        parts = [f"{self.kind}: {self.source}: {self.what}",
                 f"p4test: {self.p4test.outcome} {self.p4test.message}",
                 f"softswitch: {self.softswitch.outcome} {self.softswitch.message}"]
        if self.detail:
            parts.append(self.detail)
        return " | ".join(parts)


@dataclass(frozen=True)
class Known:
    kind: str
    pattern: re.Pattern[str]
    reason: str


# --- running the compilers ---------------------------------------------------------------

def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _first_error(text: str) -> str:
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "Compiler Bug" in line:
            return "Compiler Bug: " + " ".join(lines[i + 1:i + 2]).strip()
        if _P4C_ERROR.search(line) and "warning" not in line.split("error")[0]:
            msg = line.strip()
            # p4c prints "---- Actual error:" details on the next lines
            if i + 2 < len(lines) and "Actual error" in lines[i + 1]:
                msg += " " + lines[i + 2].strip()
            return msg
    return lines[-1].strip() if lines else ""


_EVENT_ENGINE_ABORT = "(event_engine) Epoll1Poller"


def run_p4c(exe: str, path: Path, include_dirs: Iterable[str], out: Path | None,
            timeout: float = P4TEST_TIMEOUT, arch: str | None = None) -> Verdict:
    """``p4test``/``p4c-bm2-ss`` on ``path``; ``out`` receives the P4Info (text);
    ``arch`` is p4c's ``--arch`` (None: its default, v1model)."""
    cmd = [exe, "--std", "p4-16"]
    if arch is not None:
        cmd += ["--arch", arch]
    for d in include_dirs:
        cmd += ["-I", str(d)]
    if out is not None:
        cmd += ["--p4runtime-files", str(out)]
    if exe.endswith("p4c-bm2-ss"):
        cmd += ["-o", str(path.with_suffix(".json"))]
    cmd.append(str(path))
    for _attempt in range(2):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                                  preexec_fn=_limit_memory)
        except subprocess.TimeoutExpired:
            return Verdict("crash", f"timeout after {timeout:.0f} s")
        text = proc.stdout + proc.stderr
        # p4c 1.2.5's tools start gRPC's event engine, whose poller can kill p4test
        # ("Epoll1Poller ... epoll_wait error: Bad file descriptor", then a signal): a
        # failure of gRPC's runtime, not a verdict on the program, so such a run is
        # made once more. A real crash repeats.
        if not (proc.returncode < 0 and _EVENT_ENGINE_ABORT in text):
            break
    if "Compiler Bug" in text or proc.returncode < 0 or "bad_alloc" in text:
        return Verdict("crash", _first_error(text) or f"exit {proc.returncode}")
    if proc.returncode == 0:
        return Verdict("accept")
    lines = [int(m.group(1)) for m in re.finditer(
        rf"^{re.escape(str(path))}\((\d+)\):.*\berror\b", text, re.M)]
    return Verdict("reject", _first_error(text), lines)


def run_softswitch(path: Path, include_dirs: Iterable[str],
                   arch: str | None = None) -> tuple[Verdict, object]:
    """softswitch's front end and P4Info generator on ``path``, in this process:
    the verdict and, when it accepts, the P4Info message."""
    from softswitch import p4info
    from softswitch.diagnostics import P4Error
    from softswitch.frontend.compiler import compile_program

    try:
        checked = compile_program(str(path), tuple(str(d) for d in include_dirs), None)
        info = p4info.generate(checked, arch)
    except P4Error as err:
        return Verdict("reject", str(err).splitlines()[0] if str(err) else "error"), None
    except Exception as err:  # noqa: BLE001 - a bug is a verdict here, never a crash
        tb = traceback.format_exception(type(err), err, err.__traceback__)
        return Verdict("internal", f"{type(err).__name__}: {err} "
                       f"[{''.join(tb[-3:]).strip()[-300:]}]"), None
    return Verdict("accept"), info


def p4info_difference(ours: object, theirs_text: str) -> str:
    """'' when equal, else what differs first (by entity kind and id)."""
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    from softswitch.devtools.conformance import entities_by_id

    a = entities_by_id(ours)
    b = entities_by_id(text_format.Parse(theirs_text, p4info_pb2.P4Info()))
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            what = "missing" if key not in a else "unexpected" if key not in b else "differs"
            item = b.get(key) or a.get(key) or {}
            name = item.get("preamble", {}).get("name", key[1]) if isinstance(item, dict) \
                else key[1]
            return f"P4Info {key[0]} {name}: {what}"
    return ""


def check_mutant(index: int, source: str, what: str, path: Path,
                 include_dirs: list[str], p4test: str, p4c_bmv2: str | None,
                 arch: str | None = None) -> Case:
    """Compile one mutant with both and classify the outcome."""
    start = time.monotonic()
    ref_info = path.with_suffix(".p4test.p4info.txtpb")
    ref = run_p4c(p4test, path, include_dirs, ref_info, arch=arch)
    ours, info = run_softswitch(path, include_dirs, arch)
    case = Case(index, source, what, "agree", ref, ours)
    if ours.outcome == "internal":
        case.kind = "internal"
    elif ref.outcome == "crash":
        case.kind = "p4test-crash"
    elif ref.outcome == "accept" and ours.outcome == "accept":
        diff = p4info_difference(info, ref_info.read_text()) if ref_info.exists() else ""
        if diff:
            case.kind, case.detail = "p4info", diff
    elif ref.outcome == "reject" and ours.outcome == "accept":
        case.kind = "softswitch-accepts"
    elif ref.outcome == "accept" and ours.outcome == "reject":
        case.kind = "softswitch-rejects"
        if p4c_bmv2 and arch in (None, "v1model"):
            case.bmv2 = run_p4c(p4c_bmv2, path, include_dirs, None)
            if case.bmv2.outcome == "reject":
                case.kind = "target"
                case.detail = f"p4c-bm2-ss: {case.bmv2.message}"
    case.seconds = time.monotonic() - start
    return case


# --- the run -------------------------------------------------------------------------------

def _check_in_worker(args: tuple) -> dict:
    """In a worker: one mutant, under a memory limit and an alarm (as a dict: it
    crosses a pipe)."""
    _limit_memory()
    signal.alarm(int(CASE_TIMEOUT))
    return asdict(check_mutant(*args))


def _worker_failed(args: tuple, why: str) -> dict:
    index, source, what = args[:3]
    return asdict(Case(index, source, what, "internal", Verdict("?"),
                       Verdict("internal", why)))


def _case(d: dict) -> Case:
    d = dict(d)
    for key in ("p4test", "softswitch", "bmv2"):
        if d.get(key) is not None:
            d[key] = Verdict(**d[key])
    return Case(**d)


GENERATED = "generated"
GENERATED_SHARE = 0.35


def programs(texts: list[tuple[str, str]], seed: int, count: int,
             generated_share: float = GENERATED_SHARE) -> Iterator[tuple[int, str, Mutant]]:
    """``count`` test programs, deterministic in ``seed``: about ``generated_share`` of
    them generated (:mod:`softswitch.devtools.difftest.generate`, a third of those mutated once
    more), the rest mutants of ``texts``. Yields ``(index, source name, program)``."""
    rng = random.Random(seed ^ 0x5EED)
    from_corpus = mutants(texts, seed, count) if texts else iter(())
    made = generate.programs(seed, count)
    for index in range(count):
        if rng.random() < generated_share or not texts:
            prog = next(made)
            if rng.random() < 0.33:
                twice = mutate(prog.text, rng)
                if twice is not None:
                    prog = Mutant(twice.text, f"{prog.what}; then {twice.what}")
            yield index, GENERATED, prog
            continue
        item = next(from_corpus, None)
        if item is None:
            return
        yield index, item[1], item[2]


def run(sources: list[tuple[str, Path]], seed: int, count: int, p4test: str,
        p4c_bmv2: str | None = None, jobs: int = 2, workdir: Path | None = None,
        progress: Callable[[Case], None] | None = None,
        budget_s: float | None = None, arch: str | None = None,
        generated_share: float = GENERATED_SHARE) -> list[Case]:
    """Check ``count`` programs from ``seed`` (mutants of ``sources`` (name, path) and
    generated ones, see :func:`programs`), ``jobs`` at a time; stops starting new ones
    after ``budget_s`` seconds. ``arch`` is passed to p4test as ``--arch`` and to
    softswitch's P4Info generator."""
    from softswitch.devtools.conformance import worker_context

    context = worker_context()
    texts = [(name, path.read_text(errors="replace")) for name, path in sources]
    dirs = {name: str(path.parent) for name, path in sources}
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="softswitch-difftest-")
        workdir = Path(tmp.name)
    workdir.mkdir(parents=True, exist_ok=True)
    if arch is not None:          # the generator writes v1model programs only
        generated_share = 0.0

    def work_items() -> Iterator[tuple]:
        """Each program written to ``workdir`` just before its worker starts."""
        for index, name, m in programs(texts, seed, count, generated_share):
            path = workdir / f"m{index:05d}.p4"
            path.write_text(m.text)
            yield (index, name, m.what, path, [dirs.get(name, str(workdir))], p4test,
                   p4c_bmv2, arch)

    def finished(_args: tuple, got: dict) -> None:
        if progress is not None:
            progress(_case(got))

    try:
        found = run_forked(work_items(), _check_in_worker, _worker_failed, workers=jobs,
                           timeout=CASE_TIMEOUT + 10, budget_s=budget_s, context=context,
                           on_result=finished)
    finally:
        if tmp is not None:
            tmp.cleanup()
    cases = [_case(d) for d in found]
    return sorted(cases, key=lambda c: c.index)


# --- known disagreements -----------------------------------------------------------------

def read_known(path: Path = DEFAULT_KNOWN) -> list[Known]:
    """``KIND REGEX  # reason`` lines (the regex is searched in :meth:`Case.summary`)."""
    known = []
    if not path.exists():
        return known
    for lineno, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        body, _, reason = line.partition("  # ")
        kind, _, pattern = body.strip().partition(" ")
        if kind not in DISAGREEMENTS or not pattern.strip() or not reason.strip():
            raise ValueError(f"{path}:{lineno}: expected 'KIND REGEX  # reason' with KIND one "
                             f"of {', '.join(DISAGREEMENTS)}")
        known.append(Known(kind, re.compile(pattern.strip()), reason.strip()))
    return known


def explain(case: Case, known: list[Known]) -> Known | None:
    if case.kind not in DISAGREEMENTS or case.kind == "internal":
        return None
    summary = case.summary()
    return next((k for k in known if k.kind == case.kind and k.pattern.search(summary)),
                None)


def undocumented(cases: list[Case], known: list[Known]) -> list[Case]:
    """Disagreements the known list does not explain (internal errors never are)."""
    return [c for c in cases if c.kind in DISAGREEMENTS and explain(c, known) is None]


def summarize(cases: list[Case], known: list[Known]) -> str:
    counts = Counter(c.kind for c in cases)
    documented = sum(1 for c in cases if explain(c, known) is not None)
    both = sum(1 for c in cases if c.kind == "agree" and c.p4test.outcome == "accept")
    parts = [f"{k} {counts[k]}" + (f" ({both} accepted by both)" if k == "agree" else "")
             for k in KINDS if counts[k]]
    return (f"{len(cases)} mutants: " + ", ".join(parts)
            + f"; {documented} documented, {len(undocumented(cases, known))} undocumented")


def write_results(path: Path, cases: list[Case], known: list[Known]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "summary": summarize(cases, known),
        "cases": [dict(asdict(c), documented=bool(explain(c, known))) for c in cases
                  if c.kind != "agree"]}, indent=1, default=str))


def default_sources(corpus: Path | None, own: Path | None = None,
                    max_lines: int = 200) -> list[tuple[str, Path]]:
    """Seed programs: the corpus' small accepted v1model programs and the project's own
    front-end test programs."""
    out: list[tuple[str, Path]] = []
    if corpus is not None and (corpus / "manifest.json").exists():
        rows = json.loads((corpus / "manifest.json").read_text())["programs"]
        for row in rows:
            if row["kind"] != "accept":
                continue
            path = corpus / "p4_16_samples" / row["program"]
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            if "v1model.p4" in text and text.count("\n") <= max_lines:
                out.append((f"p4_16_samples/{row['program']}", path))
    own = own if own is not None else REPO_ROOT / "tests" / "p4" / "frontend"
    if own.is_dir():
        out += [(f"tests/p4/frontend/{p.name}", p) for p in sorted(own.glob("*.p4"))]
    return out



def pna_sources(corpus: Path | None, own: Path | None = None,
                max_lines: int = 400) -> list[tuple[str, Path]]:
    """Seed programs for ``--arch pna``: the PNA corpus' accepted programs written
    against the generic ``pna.p4`` (the DPDK dialect's are left out: its extra externs
    would make most mutants test p4c's DPDK include, not the language) and the
    project's own PNA samples (tests/p4/pna)."""
    out: list[tuple[str, Path]] = []
    pna = corpus / "pna" if corpus is not None else None
    if pna is not None and (pna / "manifest.json").exists():
        for row in json.loads((pna / "manifest.json").read_text())["programs"]:
            path = pna / "p4_16_samples" / row["program"]
            try:
                text = path.read_text(errors="replace")
            except OSError:
                continue
            if row["kind"] == "accept" and "<pna.p4>" in text and \
                    text.count("\n") <= max_lines:
                out.append((f"pna/{row['program']}", path))
    own = own if own is not None else REPO_ROOT / "tests" / "p4" / "pna"
    if own.is_dir():
        out += [(f"tests/p4/pna/{p.name}", p) for p in sorted(own.glob("*.p4"))]
    return out
