"""p4c's corpus against softswitch: no regressions, no stale known-failure entries.

The corpus runs once per session (in forked workers, see softswitch.devtools.conformance). A
failure not listed in tests/conformance_known_failures.txt is a regression; a listed
entry that passes must be deleted from the list. Pass rates are printed, not asserted.
"""

import json
from pathlib import Path

import pytest
from programs import STF_NAMES, v1model_program

from softswitch.devtools import conformance as conf

CORPUS = conf.corpus_dir()
HAVE_CORPUS = (CORPUS / "manifest.json").exists()
needs_corpus = pytest.mark.skipif(
    not HAVE_CORPUS, reason=f"conformance corpus not found at {CORPUS} (set P4_CONFORMANCE_DIR)")


@pytest.fixture(scope="session")
def corpus_results(request):
    programs = conf.load_programs(CORPUS)
    results = conf.run_corpus(programs, jobs=2)
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:  # shown even without -s: the rates are the point of the run
        reporter.write_line("")
        for line in conf.summary(results).splitlines():
            reporter.write_line(f"conformance: {line}")
    return results


@needs_corpus
def test_every_program_was_checked(corpus_results):
    programs = conf.load_programs(CORPUS)
    expected = sum(len(p.categories()) for p in programs)
    assert len(corpus_results) == expected


@needs_corpus
def test_no_regressions(corpus_results):
    known = conf.read_known_failures(conf.DEFAULT_KNOWN_FAILURES)
    cmp = conf.compare_with_known(corpus_results, known)
    lines = [f"{r.category} {r.program}: {r.message}" for r in cmp.regressions]
    assert not lines, ("failures not in conformance_known_failures.txt:\n" + "\n".join(lines))


@needs_corpus
def test_no_stale_known_failures(corpus_results):
    known = conf.read_known_failures(conf.DEFAULT_KNOWN_FAILURES)
    stale = conf.compare_with_known(corpus_results, known).stale
    assert not stale, ("these pass now; remove them from conformance_known_failures.txt:\n"
                       + "\n".join(f"{c} {p}" for c, p in stale))


# --- the harness' own logic (no corpus needed) -------------------------------------------

def test_known_failures_round_trip(tmp_path: Path):
    path = tmp_path / "kf.txt"
    results = [conf.CheckResult("accept", "p4_16_samples/a.p4", False, "x.p4:1:2: error: bad"),
               conf.CheckResult("stf", "p4_16_samples/a.p4", True),
               conf.CheckResult("reject", "p4_16_errors/b.p4", False, "accepted")]
    conf.write_known_failures(path, results, keep={("p4info", "p4_16_samples/c.p4"): "old"})
    known = conf.read_known_failures(path)
    assert known == {("accept", "p4_16_samples/a.p4"): "x.p4:1:2: error: bad",
                     ("reject", "p4_16_errors/b.p4"): "accepted",
                     ("p4info", "p4_16_samples/c.p4"): "old"}


def test_compare_finds_regressions_and_stale_entries():
    results = [conf.CheckResult("accept", "a.p4", False, "boom"),
               conf.CheckResult("accept", "b.p4", True),
               conf.CheckResult("reject", "c.p4", False, "listed")]
    known = {("accept", "b.p4"): "", ("reject", "c.p4"): ""}
    cmp = conf.compare_with_known(results, known)
    assert [r.program for r in cmp.regressions] == ["a.p4"]
    assert cmp.stale == [("accept", "b.p4")]


def test_malformed_known_failures_line_is_reported(tmp_path: Path):
    path = tmp_path / "kf.txt"
    path.write_text("# fine\nsomething p.p4\n")
    with pytest.raises(ValueError, match="kf.txt:2"):
        conf.read_known_failures(path)


def test_worker_timeout_and_crash_are_failures(tmp_path: Path, monkeypatch):
    """A hanging or dying program costs one failure each, never the run. (Forked
    workers, so that they run the stand-in below even when earlier tests left threads
    alive, which would make the harness take a forkserver.)"""
    import multiprocessing
    import os
    import time

    def fake_run(prog):
        if prog.name.endswith("hang.p4"):
            time.sleep(30)
        os._exit(3)

    monkeypatch.setattr(conf, "run_program", fake_run)
    monkeypatch.setattr(conf, "worker_context", lambda: multiprocessing.get_context("fork"))
    progs = [conf.Program(f"p4_16_errors/{n}", tmp_path / n, "reject", None, None, None)
             for n in ("hang.p4", "die.p4")]
    start = time.monotonic()
    results = conf.run_corpus(progs, jobs=2, timeout=1.0)
    assert time.monotonic() - start < 10
    assert [(r.program, r.ok) for r in results] == [("p4_16_errors/hang.p4", False),
                                                    ("p4_16_errors/die.p4", False)]
    assert "timeout" in results[0].message and "worker died" in results[1].message


@needs_corpus
def test_workers_agree_when_other_threads_are_alive():
    """With threads alive the harness switches to a forkserver; results must not change."""
    import threading

    programs = [p for p in conf.load_programs(CORPUS) if p.kind == "accept"][:2]
    forked = conf.run_corpus(programs, jobs=2)
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    try:
        served = conf.run_corpus(programs, jobs=2)
    finally:
        stop.set()
    assert [(r.category, r.program, r.ok) for r in served] == \
        [(r.category, r.program, r.ok) for r in forked]


GOOD = v1model_program(
    types="header h_t { bit<8> a; }", headers="h_t h;", extract=["hdr.h"],
    ingress="""
    apply { sm.egress_spec = 2; hdr.h.a = hdr.h.a + 1; }
""",
    emit=["hdr.h"], names=STF_NAMES)


def _mini_corpus(root: Path) -> Path:
    """A corpus of four programs: a passing and a failing STF, a good and a bad rejection."""
    samples, errors = root / "p4_16_samples", root / "p4_16_errors"
    samples.mkdir(parents=True)
    errors.mkdir()
    (samples / "good.p4").write_text(GOOD)
    (samples / "good.stf").write_text("packet 0 05\nexpect 2 06\n")
    (samples / "wrong.p4").write_text(GOOD)
    (samples / "wrong.stf").write_text("packet 0 05\nexpect 2 07\n")
    (errors / "typo.p4").write_text(GOOD.replace("hdr.h.a + 1", "hdr.h.nosuch"))
    line = GOOD.replace("hdr.h.a + 1", "hdr.h.nosuch").splitlines().index(
        "    apply { sm.egress_spec = 2; hdr.h.a = hdr.h.nosuch; }") + 1
    (errors / "typo.p4-stderr").write_text(f"typo.p4({line}): [--Werror=type-error] error: x\n")
    (errors / "fine.p4").write_text(GOOD)
    rows = [
        {"program": "good.p4", "kind": "accept", "stf": "good.stf", "p4info": None,
         "stderr": None, "bmv2_xfail": False},
        {"program": "wrong.p4", "kind": "accept", "stf": "wrong.stf", "p4info": None,
         "stderr": None, "bmv2_xfail": False},
        {"program": "typo.p4", "kind": "reject", "stf": None, "p4info": None,
         "stderr": "typo.p4-stderr", "bmv2_xfail": False},
        {"program": "fine.p4", "kind": "reject", "stf": None, "p4info": None,
         "stderr": None, "bmv2_xfail": False},
    ]
    (root / "manifest.json").write_text(json.dumps({"programs": rows}))
    return root


def test_harness_end_to_end_on_a_mini_corpus(tmp_path: Path, capsys):
    corpus = _mini_corpus(tmp_path / "corpus")
    known, results = tmp_path / "kf.txt", tmp_path / "out" / "r.json"
    args = [str(corpus), "--jobs", "2", "--known-failures", str(known), "--results", str(results)]
    assert conf.main(args) == 1                      # two unlisted failures
    got = {(r["category"], r["program"]): r for r in json.loads(results.read_text())["results"]}
    assert got[("accept", "p4_16_samples/good.p4")]["ok"]
    assert got[("stf", "p4_16_samples/good.p4")]["ok"]
    assert not got[("stf", "p4_16_samples/wrong.p4")]["ok"]
    assert "port 2" in got[("stf", "p4_16_samples/wrong.p4")]["message"]
    typo = got[("reject", "p4_16_errors/typo.p4")]
    assert typo["ok"] and typo["detail"]["line_agrees"]
    assert "accepted a program p4c rejects" in got[("reject", "p4_16_errors/fine.p4")]["message"]
    assert "REGRESSION stf p4_16_samples/wrong.p4" in capsys.readouterr().out
    assert conf.main(args + ["--update-known-failures"]) == 0
    assert conf.main(args) == 0                      # now both are known
    known.write_text(known.read_text() + "accept p4_16_samples/good.p4  # stale\n")
    assert conf.main(args) == 1
    assert "STALE accept p4_16_samples/good.p4" in capsys.readouterr().out
