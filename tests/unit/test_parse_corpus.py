"""The parser over p4c's own corpus: accepted programs parse, nothing ever crashes.

Rates are printed (run with ``-s`` to see them). Programs p4c rejects are often
syntactically fine and rejected later by the type checker, so for ``p4_16_errors`` we
only report how many parse and how often our syntax verdict agrees with p4c's.
"""

from __future__ import annotations

import random
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from softswitch.devtools.conformance import corpus_dir
from softswitch.diagnostics import P4Error
from softswitch.frontend.parser import parse_file, parse_preprocessed
from softswitch.frontend.preprocess import Preprocessed, preprocess

CORPUS = corpus_dir()
needs_corpus = pytest.mark.skipif(
    not (CORPUS / "p4_16_samples").is_dir(),
    reason=f"conformance corpus not found at {CORPUS} (set P4_CONFORMANCE_DIR)")


@dataclass
class Outcome:
    path: Path
    error: str | None  # first diagnostic line, None when the program parsed
    crash: str | None = None  # a non-P4Error exception: always a bug


def _parse_one(path: Path) -> Outcome:
    try:
        parse_file(path)
        return Outcome(path, None)
    except P4Error as exc:
        return Outcome(path, str(exc).splitlines()[0])
    except Exception as exc:  # noqa: BLE001 - the point is to catch every crash
        return Outcome(path, None, f"{type(exc).__name__}: {exc}")


def _parse_all(folder: str) -> list[Outcome]:
    # Threads overlap the cpp subprocesses (most of the time) with parsing.
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(_parse_one, sorted((CORPUS / folder).glob("*.p4"))))


@pytest.fixture(scope="module")
def samples() -> list[Outcome]:
    return _parse_all("p4_16_samples")


@pytest.fixture(scope="module")
def rejects() -> list[Outcome]:
    return _parse_all("p4_16_errors")


@needs_corpus
def test_accepted_programs_parse(samples: list[Outcome]):
    failed = [o for o in samples if o.error or o.crash]
    parsed = len(samples) - len(failed)
    print(f"\np4_16_samples: {parsed}/{len(samples)} parse")
    for o in failed:
        print(f"  {o.path.name}: {o.error or o.crash}")
    assert samples, "no programs found"
    assert not [o for o in samples if o.crash]
    assert parsed / len(samples) >= 0.99


@needs_corpus
def test_rejected_programs_never_crash(rejects: list[Outcome]):
    parsed = sum(1 for o in rejects if o.error is None and o.crash is None)
    p4c_syntax = caught = same_line = 0
    for o in rejects:
        stderr = o.path.with_name(o.path.name + "-stderr")
        text = stderr.read_text(errors="replace") if stderr.exists() else ""
        if "syntax error" in text:
            p4c_syntax += 1
            caught += o.error is not None
        if o.error is not None:
            p4c_lines = set(re.findall(re.escape(o.path.name) + r"\((\d+)\)", text))
            ours = re.search(re.escape(o.path.name) + r":(\d+):", o.error)
            same_line += bool(ours and ours.group(1) in p4c_lines)
    rejected = len(rejects) - parsed
    print(f"\np4_16_errors: {parsed}/{len(rejects)} parse; {rejected} rejected by the parser "
          f"(on a line p4c reports: {same_line}); p4c's {p4c_syntax} syntax errors are "
          f"parser rejections here in {caught} cases")
    crashes = [f"{o.path.name}: {o.crash}" for o in rejects if o.crash]
    assert not crashes, "\n".join(crashes)
    assert all(o.error.split(":")[0].endswith(".p4") for o in rejects if o.error), \
        "every parser error names a .p4 file"


def _mutations(text: str, rng: random.Random, count: int) -> list[str]:
    """Truncations, deletions and stray tokens at random points of a program."""
    junk = ["<", ">", "(", ")", "{", "}", "@", "'", '"', "/*", "[", ":", "#", "...", "$",
            "<<", "&&&", "default", "_", "8w", "0x"]
    out = []
    for _ in range(count):
        cut = rng.randrange(len(text) + 1)
        kind = rng.randrange(3)
        if kind == 0:
            out.append(text[:cut])
        elif kind == 1:
            out.append(text[:cut] + text[cut + rng.randrange(1, 40):])
        else:
            out.append(text[:cut] + rng.choice(junk) + text[cut:])
    return out


@needs_corpus
def test_mangled_programs_raise_only_p4error():
    rng = random.Random(4242)
    programs = sorted((CORPUS / "p4_16_samples").glob("*.p4"))
    for path in rng.sample(programs, 12):
        pre = preprocess(path)
        for text in _mutations(pre.text, rng, 15):
            try:
                parse_preprocessed(Preprocessed(text, pre.lines))
            except P4Error as exc:
                assert exc.loc is not None
