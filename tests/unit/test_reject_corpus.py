"""The front end over p4c's corpus: accept rate on p4_16_samples, reject rate on p4_16_errors.

Both rates are printed (run with ``-s``); the test asserts only that no program makes
the front end raise anything but a P4Error (a Python exception there is a bug, and the
CLI would report it as an internal compiler error). Files are read in place from the
corpus; the test skips when the corpus is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from softswitch.devtools import conformance
from softswitch.diagnostics import P4Error
from softswitch.frontend.compiler import compile_program

CORPUS = conformance.corpus_dir()
pytestmark = pytest.mark.skipif(
    not (CORPUS / "manifest.json").exists(),
    reason=f"conformance corpus not found at {CORPUS} (set P4_CONFORMANCE_DIR)")


def _run(directory: Path) -> tuple[int, list[str], list[str]]:
    """(programs accepted, rejected with their first message, internal errors)."""
    accepted, rejected, crashes = 0, [], []
    for path in sorted(directory.glob("*.p4")):
        try:
            compile_program(path)
            accepted += 1
        except P4Error as err:
            if err.loc is None:
                crashes.append(f"{path.name}: diagnostic without location: {err.message}")
            rejected.append(f"{path.name}: {err.message}")
        except Exception as exc:  # noqa: BLE001 - the point is to catch every bug
            crashes.append(f"{path.name}: {type(exc).__name__}: {exc}")
    return accepted, rejected, crashes


def test_front_end_accepts_samples_and_rejects_errors():
    ok, rejected, crashes_a = _run(CORPUS / "p4_16_samples")
    total_a = ok + len(rejected) + len(crashes_a)
    accepted_bad, rejected_bad, crashes_r = _run(CORPUS / "p4_16_errors")
    total_r = accepted_bad + len(rejected_bad) + len(crashes_r)
    print(f"\nfront end accept rate: {ok}/{total_a} ({100 * ok / total_a:.1f}%)")
    print(f"front end reject rate: {len(rejected_bad)}/{total_r} "
          f"({100 * len(rejected_bad) / total_r:.1f}%)")
    for line in rejected:
        print("  wrongly rejected:", line)
    assert not crashes_a + crashes_r, "\n".join(crashes_a + crashes_r)
