"""softswitch's P4Info against p4c's for every corpus program that has one.

Each program is compiled and its P4Info generated; the result must equal p4c's
``.p4info.txtpb`` as a protobuf message (order of repeated fields included, ``doc``
fields ignored). The equality rate is printed; the test fails only on internal errors
(Python exceptions escaping the front end or the generator), and when the rate drops
below the floor this project has reached — a regression guard, not a hard-coded result.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from p4info_support import Outcome, compare, equal_rate, internal_errors, reference_p4info, report

from softswitch.forked_jobs import worker_context

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("P4_CONFORMANCE_DIR", REPO.parent / "shared" / "conformance"))
SAMPLES = CORPUS / "p4_16_samples"
RATE_FLOOR = 0.95

pytestmark = pytest.mark.skipif(
    not (CORPUS / "manifest.json").exists(),
    reason=f"conformance corpus not found at {CORPUS} (set P4_CONFORMANCE_DIR)")


def check_one(name: str) -> Outcome:
    return compare(name, SAMPLES / name,
                   reference_p4info(SAMPLES / f"{name}.p4info.txtpb"))


@pytest.fixture(scope="module")
def results() -> list[Outcome]:
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    names = [p["program"] for p in manifest["programs"] if p.get("p4info")]
    ctx = worker_context(["softswitch.p4info", "softswitch.frontend.compiler"])
    with ctx.Pool(2) as pool:
        out = pool.map(check_one, names, chunksize=4)
    report(out, "P4Info equal to p4c's")
    return out


def test_no_internal_errors(results: list[Outcome]) -> None:
    crashes = internal_errors(results)
    assert not crashes, "internal errors:\n" + "\n".join(crashes)


def test_equality_rate_does_not_regress(results: list[Outcome]) -> None:
    assert equal_rate(results) >= RATE_FLOOR
