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
from pathlib import Path

import pytest
from p4info_support import Outcome, compare, equal_rate, internal_errors, reference_p4info, report

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("P4_CONFORMANCE_DIR", REPO.parent / "shared" / "conformance"))
PNA = CORPUS / "pna"
SAMPLES = PNA / "p4_16_samples"
RATE_FLOOR = 0.95

pytestmark = pytest.mark.skipif(
    not (PNA / "manifest.json").exists(),
    reason=f"PNA corpus not found at {PNA} (set P4_CONFORMANCE_DIR)")


def check_one(program: str, p4info_file: str) -> Outcome:
    return compare(program, SAMPLES / program, reference_p4info(SAMPLES / p4info_file))


@pytest.fixture(scope="module")
def results() -> list[Outcome]:
    manifest = json.loads((PNA / "manifest.json").read_text())
    out = [check_one(p["program"], p["p4info"]) for p in manifest["programs"]
           if p.get("p4info")]
    report(out, "PNA P4Info equal to p4test --arch pna's")
    return out


def test_pna_corpus_has_programs(results: list[Outcome]) -> None:
    assert len(results) >= 50, "the PNA corpus should hold p4c's 51 pna-* programs"


def test_no_internal_errors(results: list[Outcome]) -> None:
    crashes = internal_errors(results)
    assert not crashes, "internal errors:\n" + "\n".join(crashes)


def test_equality_rate_reaches_floor(results: list[Outcome]) -> None:
    assert equal_rate(results) >= RATE_FLOOR


def test_pkg_info_names_pna(results: list[Outcome]) -> None:
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
