"""softswitch's front end and P4Info against ``p4test --arch pna`` on seeded PNA mutants.

The PNA counterpart of tests/test_differential.py: ``PNA_DIFF_COUNT`` mutants (default
60, about half a minute on two cores) of the PNA corpus' programs written against the
generic ``pna.p4`` and of tests/p4/pna's samples, from ``PNA_DIFF_SEED`` (default 1).
Both compilers must agree on accept/reject and, when both accept, on the P4Info.
Disagreements must be fixed or listed with their reason in tests/differential_known.txt;
internal errors never are. A larger run: ``python -m softswitch.devtools.difftest --arch pna``.
"""

from __future__ import annotations

import os

import pytest
from test_differential import assert_all_documented, assert_no_internal_errors, compare_and_report

from softswitch.devtools import conformance
from softswitch.devtools.difftest import run as R

SEED = int(os.environ.get("PNA_DIFF_SEED", "1"))
COUNT = int(os.environ.get("PNA_DIFF_COUNT", "60"))
BUDGET_S = float(os.environ.get("PNA_DIFF_BUDGET_S", "60"))


def test_pna_seed_set_is_generic_pna():
    sources = R.pna_sources(conformance.corpus_dir())
    if not sources:
        pytest.skip("PNA corpus missing")
    assert len(sources) >= 30
    assert all("dpdk/pna.p4" not in p.read_text() for n, p in sources if n.startswith("pna/"))


@pytest.fixture(scope="module")
def cases(reference_tools, request):
    return compare_and_report(request, "PNA ", R.pna_sources(conformance.corpus_dir()),
                              SEED, COUNT, reference_tools.p4test, None, budget_s=BUDGET_S,
                              arch="pna")


def test_mutants_were_compared(cases):
    """Most mutants must reach a verdict from both sides (a run that compares nothing
    proves nothing)."""
    compared = [c for c in cases if c.kind != "p4test-crash"]
    assert len(compared) >= min(COUNT, 20)
    assert any(c.p4test.outcome == "accept" and c.softswitch.outcome == "accept"
               for c in cases), "no mutant accepted by both: P4Info never compared"


def test_no_internal_errors(cases):
    assert_no_internal_errors(cases)


def test_no_undocumented_disagreement(cases):
    assert_all_documented(cases, "p4test --arch pna not in tests/differential_known.txt")
