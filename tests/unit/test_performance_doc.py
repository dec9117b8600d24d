"""bench/performance_doc.py, the generator ``make bench`` ends with: one table per
benchmark from bench/run_all.py's summary.json, the lab's per-class tables from a
summary.json written by taillab's own report writer, only the region between the markers
rewritten, and a clean one-line error (docs unchanged) for a missing input or marker."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from bench_support import BENCH, bench_module

PROSE_BEFORE = "# Performance\n\nHand-written prose | with a pipe.\n\n"
PROSE_AFTER = "\n\n## Design decisions\n\nMore prose.\n"


@pytest.fixture(scope="module")
def doc_mod() -> ModuleType:
    return bench_module("performance_doc")


@pytest.fixture(scope="module")
def lab_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real lab run, tiny: pd_cascade, 300 µs, one seed, baseline, tailcc and
    ideal-srpt, with the floors; its summary.json, scenario.json and slowdown_cdf.png
    written by taillab itself."""
    from taillab.bounds import class_floors
    from taillab.lab_report import aggregate, write_outputs
    from taillab.runner import run_cell
    from taillab.scenario import load_scenario

    lab = tmp_path_factory.mktemp("lab")
    scenario = load_scenario("pd_cascade").scaled(300.0, [1])
    cells = [run_cell(scenario, scheme, 1) for scheme in ("baseline", "tailcc", "ideal-srpt")]
    floors = class_floors(scenario)
    write_outputs(scenario, cells, aggregate(scenario, cells, floors), lab / "pd_cascade",
                  floors)
    (lab / "pd_cascade" / "scenario.json").write_text(json.dumps({"duration_us": 300.0}))
    return lab


def _row(bench: str, measure: str, unit: str, bmv2: float | None, soft: float | None,
         better: str = "higher") -> dict[str, object]:
    return {"measure": measure, "unit": unit, "bmv2": bmv2, "softswitch": soft,
            "better": better, "bench": bench}


@pytest.fixture
def summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """bench/run_all.py's own summary.json, its benchmarks replaced by small fakes (none
    of them a veth one: no root needed)."""
    run_all = bench_module("run_all")
    monkeypatch.setattr(run_all, "OUT", tmp_path / "bench")
    monkeypatch.setattr(run_all.veth_switch, "available", lambda target: None)

    def p4runtime(args, targets):
        return [run_all.row("P4Runtime insert, batch 1000", "entries/s", 125000.0, 340000.0),
                run_all.row("P4Runtime read", "entries/s", None, 570000.0)]

    def pps(args, targets):
        return [run_all.row("in process, tailcc, C", "packets/s", None, 615300.0)]

    def apply(args, targets):
        raise RuntimeError("tailcc_apply.py exited 3")

    def compile_time(args, targets):
        return [run_all.row("compile tailcc.p4", "s", 2.0, 0.5, "lower")]

    monkeypatch.setattr(run_all, "STEPS", {"p4runtime": p4runtime, "pps": pps,
                                           "apply": apply, "compile": compile_time})
    assert run_all.main(["--skip", "veth", "latency", "cli"]) == 1     # apply failed
    return tmp_path / "bench" / "summary.json"


def _docs(tmp_path: Path, doc_mod: ModuleType) -> tuple[Path, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    perf, lab = docs / "performance.md", docs / "lab.md"
    perf.write_text(f"{PROSE_BEFORE}{doc_mod.START}\nplaceholder\n{doc_mod.END}{PROSE_AFTER}")
    lab.write_text(f"# Lab\n\n{doc_mod.START}\n{doc_mod.END}\n")
    return perf, lab


def _cli(summary: Path, lab: Path, perf_doc: Path, lab_doc: Path, tmp_path: Path
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH / "performance_doc.py"), "--summary", str(summary),
         "--lab", str(lab), "--mix", str(tmp_path / "mix"), "--doc", str(perf_doc),
         "--lab-doc", str(lab_doc), "--img", str(perf_doc.parent / "img")],
        capture_output=True, text=True, timeout=120)


def _region(text: str, doc_mod: ModuleType) -> str:
    return text.split(doc_mod.START, 1)[1].split(doc_mod.END, 1)[0]


def _tables(region: str) -> dict[str, list[list[str]]]:
    """Each "### heading" of the region with the rows of the table under it."""
    out: dict[str, list[list[str]]] = {}
    heading = ""
    for line in region.splitlines():
        if line.startswith("### "):
            heading = line[4:]
            out[heading] = []
        elif line.startswith("|") and heading:
            out[heading].append([c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]])
    return out


def test_one_table_per_benchmark_between_the_markers(tmp_path, doc_mod, lab_dir, summary):
    data = json.loads(summary.read_text())
    assert [r["bench"] for r in data["rows"]] == ["pps", "p4runtime", "p4runtime", "apply",
                                                  "compile"]
    perf, lab = _docs(tmp_path, doc_mod)
    proc = _cli(summary, lab_dir, perf, lab, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "picture skipped" in proc.stdout and "mix-single-softswitch.png" in proc.stdout
    text = perf.read_text()
    assert text.startswith(PROSE_BEFORE + doc_mod.START) and text.endswith(
        doc_mod.END + PROSE_AFTER)
    region = _region(text, doc_mod)
    assert "placeholder" not in region and "BMv2 side by side" in region
    assert data["time"] in region and f"on {data['cpus']} CPUs" in region
    tables = _tables(region)
    titles = data["benches"]
    assert list(tables) == [titles["pps"], titles["p4runtime"], titles["compile"], "Failed"]
    writes, pps, compile_ = (tables[titles[b]] for b in ("p4runtime", "pps", "compile"))
    assert writes == [["measure", "BMv2", "softswitch", "ratio"], ["---", "---:", "---:", "---:"],
                      ["P4Runtime insert, batch 1000 (entries/s)", "125.0k", "340.0k", "2.72x"],
                      ["P4Runtime read (entries/s)", "-", "570.0k", "-"]]
    assert pps == [["measure", "softswitch"], ["---", "---:"],
                   ["in process, tailcc, C (packets/s)", "615.3k"]]
    assert compile_[2] == ["compile tailcc.p4", "2.000 s", "0.500 s", "4.00x"]    # time: BMv2/soft
    assert "`apply`: tailcc_apply.py exited 3" in region
    assert "FAILED" not in region
    assert not (perf.parent / "img" / "mix_cdf.png").exists()
    again = _cli(summary, lab_dir, perf, lab, tmp_path)
    assert again.returncode == 0 and perf.read_text() == text       # a rerun changes nothing


def test_lab_tables_from_taillab_summary(tmp_path, doc_mod, lab_dir, summary):
    perf, lab = _docs(tmp_path, doc_mod)
    proc = _cli(summary, lab_dir, perf, lab, tmp_path)
    assert proc.returncode == 0, proc.stderr
    got = json.loads((lab_dir / "pd_cascade" / "summary.json").read_text())["summary"]
    text = lab.read_text()
    assert text.startswith(f"# Lab\n\n{doc_mod.START}\n") and text.endswith(f"{doc_mod.END}\n")
    tables = _tables(_region(text, doc_mod))
    rows = tables["pd_cascade"]
    split = next(i for i, r in enumerate(rows) if r[0] == "scheme")
    per_class, per_scheme = rows[:split], rows[split:]
    floors = json.loads((lab_dir / "pd_cascade" / "summary.json").read_text())["floors"]
    assert per_class[0] == ["class", "scheme", "messages", "P99 slowdown", "P999 slowdown",
                            "P99 / floor", "P999 / floor", "P99 / ideal-srpt"]
    signal = got["tailcc"]["classes"]["sched_signal"]

    def stat(d: dict[str, float]) -> str:
        return f"{d['value']:.2f} [{d['ci_low']:.2f}, {d['ci_high']:.2f}]"
    assert ["", "tailcc", f"{signal['messages']:,}", stat(signal["p99"]), stat(signal["p999"]),
            f"{signal['vs_floor']['p99']:.2f}x", f"{signal['vs_floor']['p999']:.2f}x",
            stat(signal["vs_ideal"]["p99"]) + "x"] in per_class
    assert per_class[2][:2] == ["sched_signal\\*", "floor (any scheduler)"]   # a mouse class
    assert per_class[2][3:5] == [f"{floors['sched_signal']['p99']:.2f}",
                                 f"{floors['sched_signal']['p999']:.2f}"]
    assert ["hot_kv<=64KB\\*", "floor (any scheduler)"] in [r[:2] for r in per_class]
    ideal = next(r for r in per_class if r[1] == "ideal-srpt")
    assert ideal[7] == "-"                                           # not against itself
    assert len(per_class) == 2 + len(floors) + 3 * len(got["baseline"]["classes"])
    tailcc = next(r for r in per_scheme if r[0] == "tailcc")
    paused = got["tailcc"]["pfc_paused_us"] / got["baseline"]["pfc_paused_us"]
    assert tailcc[1] == f"{got['tailcc']['pfc_paused_us']:,.0f}"
    assert tailcc[2] == f"{paused:.3f}x"
    goodput = got["tailcc"]["elephant_goodput_gbps"] / got["baseline"]["elephant_goodput_gbps"]
    assert tailcc[4] == f"{goodput:.3f}x"
    picture = perf.parent / "img" / "lab_slowdown_cdf.png"
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "](img/lab_slowdown_cdf.png)" in text


def test_a_picture_is_shrunk_under_the_limit(tmp_path, doc_mod, lab_dir):
    src = lab_dir / "pd_cascade" / "slowdown_cdf.png"
    limit = src.stat().st_size // 3
    assert doc_mod.copy_picture(src, tmp_path / "small.png", limit=limit, log=lambda _: None)
    assert 0 < (tmp_path / "small.png").stat().st_size <= limit
    assert not doc_mod.copy_picture(tmp_path / "none.png", tmp_path / "x.png",
                                    log=lambda _: None)


def test_a_doc_without_its_markers_is_an_error_and_stays_unchanged(tmp_path, doc_mod,
                                                                   lab_dir, summary):
    perf, lab = _docs(tmp_path, doc_mod)
    lab.write_text("# Lab\n\nno markers here\n")
    before = perf.read_bytes(), lab.read_bytes()
    proc = _cli(summary, lab_dir, perf, lab, tmp_path)
    assert proc.returncode == 1
    assert f"{lab}: no marker line '{doc_mod.START}'" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert (perf.read_bytes(), lab.read_bytes()) == before       # neither doc written
    perf.write_text(f"{PROSE_BEFORE}{doc_mod.START}\n{PROSE_AFTER}")  # its end marker gone
    lab.write_text(f"{doc_mod.START}\n{doc_mod.END}\n")
    proc = _cli(summary, lab_dir, perf, lab, tmp_path)
    assert proc.returncode == 1 and f"no marker line '{doc_mod.END}'" in proc.stderr
    assert perf.read_text() == f"{PROSE_BEFORE}{doc_mod.START}\n{PROSE_AFTER}"


def test_a_missing_input_is_a_one_line_error(tmp_path, doc_mod, lab_dir, summary):
    perf, lab = _docs(tmp_path, doc_mod)
    before = perf.read_bytes()
    for missing, args in ((tmp_path / "none.json", (tmp_path / "none.json", lab_dir)),
                          (tmp_path / "no-lab", (summary, tmp_path / "no-lab"))):
        proc = _cli(*args, perf, lab, tmp_path)
        assert proc.returncode == 1
        assert proc.stderr.startswith(f"performance_doc: error: {missing}: no ")
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert perf.read_bytes() == before


def test_lab_rows_say_when_not_every_offered_message_completed(doc_mod):
    """An overloaded receiver's class (KV migration into the slow prefill node) does not
    complete every offered message by the end of the drain: its row says so, as its
    percentiles count only those that did."""
    assert doc_mod._done({"messages": 417, "offered": 2316}) == "417 of 2,316"
    assert doc_mod._done({"messages": 2316, "offered": 2316}) == "2,316"


def test_only_lab_rewrites_the_lab_doc_without_make_bench_summary(tmp_path, doc_mod, lab_dir):
    """``--only lab``: docs/lab.md from out/lab alone; performance.md stays as it is."""
    perf, lab = _docs(tmp_path, doc_mod)
    before = perf.read_text()
    proc = subprocess.run([sys.executable, str(BENCH / "performance_doc.py"), "--only", "lab",
                           "--summary",
                           str(tmp_path / "absent.json"), "--lab", str(lab_dir), "--mix",
                           str(tmp_path / "no-mix"), "--doc", str(perf), "--lab-doc", str(lab),
                           "--img", str(perf.parent / "img")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert perf.read_text() == before
    assert "pd_cascade" in _tables(_region(lab.read_text(), doc_mod))
