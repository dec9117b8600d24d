"""What the PTF suites are expected to do on each target, and the check of a run.

Two machine-readable lists, both read here (by ``ptf_tests/compare.py`` and
``tests/test_ptf_suites.py``), so a run is judged the same way everywhere:

- ``ptf_tests/known_failures.txt``: tests that do not pass yet on a target,
  ``TARGET module.Test reason`` one per line (``#`` comments);
- the "Target differences" table of ``ptf_tests/README.md``: tests that skip on a
  target because they need a softswitch extension that target lacks, one row
  ``| `module.Test` | target | `extension` | why |``; the test's skip message must name
  the extension.

A run is as expected when every test passes except the listed ones, each listed
failure still fails, and each listed skip still skips naming its extension (a stale
entry is an error, so the lists only shrink). ``results.txt`` (written by
``ptf_tests/run.py``) has one ``VERDICT module.Test[ reason]`` line per test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
KNOWN_FAILURES = HERE / "known_failures.txt"
README = HERE / "README.md"
TARGETS = ("softswitch", "bmv2")
DIFFERENCES_HEADING = "## Target differences"


@dataclass(frozen=True)
class Result:
    verdict: str            # PASS | FAIL | SKIP
    reason: str = ""        # the skip message, for SKIP


@dataclass(frozen=True)
class Expected:
    verdict: str            # FAIL (known failure) | SKIP (documented skip)
    reason: str             # why, as the list says
    extension: str = ""     # SKIP: the softswitch extension the skip message must name


@dataclass
class Verdict:
    """A run checked against the lists."""

    unexpected: dict[str, Result] = field(default_factory=dict)   # not passing, not listed
    stale: dict[str, tuple[Expected, Result]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)              # listed, did not run

    @property
    def ok(self) -> bool:
        return not (self.unexpected or self.stale or self.missing)

    def describe(self) -> str:
        lines = [f"{name}: {r.verdict} {r.reason}, and not listed".replace(" ,", ",")
                 for name, r in sorted(self.unexpected.items())]
        for name, (e, r) in sorted(self.stale.items()):
            if e.verdict == r.verdict:
                lines.append(f"{name}: skips, but not naming `{e.extension}`: {r.reason}")
            else:
                lines.append(f"{name}: listed as {e.verdict} ({e.reason}) but {r.verdict}"
                             + (f" ({r.reason})" if r.reason else "")
                             + ": take it off the list")
        lines += [f"{name}: listed but did not run" for name in self.missing]
        return "\n".join(lines)


def read_results(path: Path) -> dict[str, Result]:
    out: dict[str, Result] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        verdict, _, rest = line.partition(" ")
        name, _, reason = rest.partition(" ")
        out[name] = Result(verdict, reason)
    return out


def known_failures(path: Path = KNOWN_FAILURES) -> dict[str, dict[str, Expected]]:
    """target -> test -> Expected("FAIL", reason)."""
    out: dict[str, dict[str, Expected]] = {t: {} for t in TARGETS}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 2)
        if len(parts) < 3 or parts[0] not in TARGETS:
            raise ValueError(f"{path}:{number}: expected 'TARGET module.Test reason' with "
                             f"TARGET one of {', '.join(TARGETS)}: {line!r}")
        target, name, reason = parts
        out[target][name] = Expected("FAIL", reason)
    return out


_ROW = re.compile(r"^\|\s*`?(?P<test>[\w.]+)`?\s*\|\s*(?P<target>\w+)\s*\|\s*"
                  r"`?(?P<ext>[\w-]+)`?\s*\|\s*(?P<why>.+?)\s*\|\s*$")


def documented_skips(path: Path = README) -> dict[str, dict[str, Expected]]:
    """target -> test -> Expected("SKIP", why, extension), from the README's table."""
    out: dict[str, dict[str, Expected]] = {t: {} for t in TARGETS}
    text = path.read_text()
    if DIFFERENCES_HEADING not in text:
        raise ValueError(f"{path}: no '{DIFFERENCES_HEADING}' section")
    section = text.split(DIFFERENCES_HEADING, 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    for line in rows[2:]:                       # after the header and the |---| line
        m = _ROW.match(line)
        if m is None or m["target"] not in TARGETS:
            raise ValueError(f"{path}: '{DIFFERENCES_HEADING}' row not understood (want "
                             f"| `module.Test` | target | `extension` | why |): {line!r}")
        out[m["target"]][m["test"]] = Expected("SKIP", m["why"], m["ext"])
    return out


def expected(target: str) -> dict[str, Expected]:
    """Every listed non-pass of ``target``: known failures and documented skips."""
    skips, failures = documented_skips()[target], known_failures()[target]
    both = sorted(set(skips) & set(failures))
    if both:
        raise ValueError(f"{target}: listed both as a known failure and as a skip: {both}")
    return {**failures, **skips}


def matches(e: Expected, r: Result) -> bool:
    if e.verdict != r.verdict:
        return False
    return e.verdict != "SKIP" or e.extension in r.reason


def check(target: str, results: dict[str, Result]) -> Verdict:
    listed = expected(target)
    v = Verdict()
    for name, r in results.items():
        e = listed.get(name)
        if e is None:
            if r.verdict != "PASS":
                v.unexpected[name] = r
        elif not matches(e, r):
            v.stale[name] = (e, r)
    v.missing = sorted(set(listed) - set(results))
    return v
