"""softswitch's P4Info against ``p4test --arch pna``'s for p4c's PNA corpus.

``../shared/conformance/pna`` holds p4c's ``pna-*`` programs with the P4Info real
p4test wrote for each. Every program is compiled against softswitch's own ``pna.p4``
(or ``dpdk/pna.p4``), its architecture detected from ``main``'s package, and its
P4Info compared as a protobuf message (``doc`` fields ignored). The equality rate is
printed; the test fails on internal errors and when the rate drops below the issue's
95% floor.
"""

from __future__ import annotations

import json
import os
import traceback
from collections import Counter
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from test_p4info_corpus import strip_doc

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("P4_CONFORMANCE_DIR", REPO.parent / "shared" / "conformance"))
PNA = CORPUS / "pna"
SAMPLES = PNA / "p4_16_samples"
RATE_FLOOR = 0.95

pytestmark = pytest.mark.skipif(
    not (PNA / "manifest.json").exists(),
    reason=f"PNA corpus not found at {PNA} (set P4_CONFORMANCE_DIR)")


def check_one(program: str, p4info_file: str) -> tuple[str, str, str]:
    """(program, outcome, detail); outcome: equal, differ, rejected, internal-error."""
    from softswitch.diagnostics import P4Error
    from softswitch.frontend.compiler import compile_program
    from softswitch.p4info import generate

    expected = p4info_pb2.P4Info()
    text_format.Parse((SAMPLES / p4info_file).read_text(), expected)
    strip_doc(expected)
    try:
        got = generate(compile_program(SAMPLES / program))
    except P4Error as exc:
        if expected == p4info_pb2.P4Info():
            return program, "equal", ""
        return program, "rejected", str(exc).splitlines()[0]
    except Exception:  # noqa: BLE001 - an internal error is what this test reports
        return program, "internal-error", traceback.format_exc(limit=3)
    strip_doc(got)
    if got == expected:
        return program, "equal", ""
    return program, "differ", ""


@pytest.fixture(scope="module")
def results() -> list[tuple[str, str, str]]:
    manifest = json.loads((PNA / "manifest.json").read_text())
    out = [check_one(p["program"], p["p4info"]) for p in manifest["programs"]
           if p.get("p4info")]
    counts = Counter(outcome for _, outcome, _ in out)
    print(f"\nPNA P4Info equal to p4test --arch pna's: {counts['equal']}/{len(out)} "
          f"({counts['equal'] / len(out):.1%}); {dict(counts)}")
    for name, outcome, detail in out:
        if outcome != "equal":
            print(f"  {outcome}: {name} {detail[:200]}")
    return out


def test_pna_corpus_has_programs(results: list[tuple[str, str, str]]) -> None:
    assert len(results) >= 50, "the PNA corpus should hold p4c's 51 pna-* programs"


def test_no_internal_errors(results: list[tuple[str, str, str]]) -> None:
    crashes = [f"{n}:\n{d}" for n, o, d in results if o == "internal-error"]
    assert not crashes, "internal errors:\n" + "\n".join(crashes)


def test_equality_rate_reaches_floor(results: list[tuple[str, str, str]]) -> None:
    equal = sum(1 for _, o, _ in results if o == "equal")
    assert equal / len(results) >= RATE_FLOOR


def test_pkg_info_names_pna(results: list[tuple[str, str, str]]) -> None:
    """The architecture is detected from main's package: every PNA program says pna."""
    from softswitch.frontend.compiler import compile_program
    from softswitch.p4info import generate

    info = generate(compile_program(SAMPLES / "pna-example-template.p4"))
    assert info.pkg_info.arch == "pna"


def test_arch_flag_must_agree_with_package() -> None:
    from softswitch.diagnostics import P4Error
    from softswitch.frontend.compiler import compile_program
    from softswitch.p4info import generate

    checked = compile_program(SAMPLES / "pna-example-template.p4")
    assert generate(checked, arch="pna").pkg_info.arch == "pna"
    with pytest.raises(P4Error, match="main is a PNA_NIC"):
        generate(checked, arch="v1model")
