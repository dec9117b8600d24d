"""softswitch's front end against real p4test on seeded mutants (softswitch.devtools.difftest).

The bounded run in ``make test``: ``DIFF_COUNT`` programs (default 240, about two
minutes on two cores) from ``DIFF_SEED`` (default 1): mutants of the corpus' small
v1model programs and tests/p4/frontend's, and generated programs
(softswitch.devtools.difftest.generate). Every disagreement must be a fixed bug or listed, with
its reason, in tests/differential_known.txt; softswitch's internal errors never are.
A larger run: ``make difftest`` (``python -m softswitch.devtools.difftest --count N``).
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from softswitch.devtools import conformance
from softswitch.devtools.difftest import generate, mutate
from softswitch.devtools.difftest import run as R

SEED = int(os.environ.get("DIFF_SEED", "1"))
COUNT = int(os.environ.get("DIFF_COUNT", "240"))
BUDGET_S = float(os.environ.get("DIFF_BUDGET_S", "150"))


def test_known_disagreements_file_is_well_formed():
    known = R.read_known()
    assert all(k.reason for k in known)


def test_mutants_are_deterministic_in_the_seed():
    sources = [("a.p4", "control c(inout bit<8> x) { apply { if (x == 8w1) { x = x + 1; } } }")]
    first = [(i, n, m.text, m.what) for i, n, m in mutate.mutants(sources, 7, 20)]
    again = [(i, n, m.text, m.what) for i, n, m in mutate.mutants(sources, 7, 20)]
    assert first == again and len(first) == 20
    assert all(m != sources[0][1] for _, _, m, _ in first)


def test_each_mutation_changes_one_thing():
    text = ("table t { key = { h.a : exact; } actions = { a; } const entries = { 1 : a(2); } }\n"
            "bit<8> f(in bit<8> x, bool y) { return x + 8w255; }")
    rng = random.Random(3)
    for name in mutate.MUTATIONS:
        m = getattr(mutate._Mutator(text, rng), name)()
        if m is not None:
            assert m.text != text and m.what, name


def test_generated_programs_are_deterministic_and_varied():
    first = [(m.text, m.what) for m in generate.programs(5, 30)]
    assert first == [(m.text, m.what) for m in generate.programs(5, 30)]
    assert len({text for text, _ in first}) == 30


def test_every_piece_reaches_its_language_area():
    """Each piece puts its construct into a whole program (skeleton around it)."""
    marks = {"cast": "= (", "slice_": ":", "consteval": "const ", "switch": "switch (",
             "generics": "<", "stack_union": "hdr.", "abstract": "abstract ",
             "value_set": "value_set<", "compare": "if (", "keysets": "select(",
             "entries": "entries = {", "tuples": "tuple<", "shifts": "<<",
             "functions": "bit<8> fn"}
    rng = random.Random(11)
    for piece in generate.PIECES:
        part = piece(generate._Gen(rng))
        body = part.top + part.parser_locals + part.start + part.transition + part.locals + \
            part.apply
        assert part.what and (marks[piece.__name__] in body or (
            piece.__name__ == "shifts" and ">>" in body)), (piece.__name__, body)


def test_runs_mix_generated_programs_and_mutants():
    sources = [("a.p4", "control c(inout bit<8> x) { apply { if (x == 8w1) { x = x + 1; } } }")]
    names = [name for _, name, _ in R.programs(sources, 3, 60, generated_share=0.5)]
    assert len(names) == 60 and R.GENERATED in names and "a.p4" in names
    again = [(n, m.text) for _, n, m in R.programs(sources, 3, 60, generated_share=0.5)]
    assert again == [(n, m.text) for _, n, m in R.programs(sources, 3, 60, generated_share=0.5)]


@pytest.fixture(scope="module")
def cases(reference_tools, request):
    return compare_and_report(request, "", R.default_sources(conformance.corpus_dir()),
                              SEED, COUNT, reference_tools.p4test,
                              reference_tools.exe("p4c-bm2-ss"), budget_s=BUDGET_S)


def compare_and_report(request: pytest.FixtureRequest, label: str,
                       sources: list[tuple[str, Path]], seed: int, count: int, p4test: str,
                       bm2: str | None, **run_options: Any) -> list[R.Case]:
    """Run ``count`` seeded cases on two cores and write their summary to the terminal."""
    if not sources:
        pytest.skip(f"no {label}seed programs (conformance corpus missing)")
    results = R.run(sources, seed, count, p4test, bm2, jobs=2, **run_options)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        reporter.write_line(f"{label}differential (seed {seed}): "
                            + R.summarize(results, R.read_known()))
    return results


def test_no_internal_errors(cases):
    assert_no_internal_errors(cases)


def test_no_undocumented_disagreement(cases):
    assert_all_documented(cases, "p4test not in tests/differential_known.txt "
                                 "(fix them or document them)")


def assert_no_internal_errors(cases: list[R.Case]) -> None:
    bad = [c.summary() for c in cases if c.kind == "internal"]
    assert not bad, "softswitch failed internally:\n" + "\n".join(bad)


def assert_all_documented(cases: list[R.Case], where: str) -> None:
    """Every disagreement other than an internal error is listed as known."""
    bad = [c.summary() for c in R.undocumented(cases, R.read_known()) if c.kind != "internal"]
    assert not bad, f"disagreements with {where}:\n" + "\n".join(bad)
