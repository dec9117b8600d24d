"""The softswitch command line never shows a Python traceback, for any input.

Every bad input — missing file, binary garbage, a corpus program cut at a random point,
bad flags — must end with exit code 1 and a ``file:line:col: error:`` (or usage)
message, and every run is bounded in time.
"""

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("P4_CONFORMANCE_DIR", ROOT.parent / "shared" / "conformance"))
SAMPLE = ROOT / "p4src" / "samples" / "l3_basic.p4"


def softswitch(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "softswitch", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def assert_clean_user_error(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert "internal compiler error" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, (proc.returncode, proc.stderr)


def test_compile_sample_and_write_p4info(tmp_path):
    out = tmp_path / "x" / "l3.p4info.txtpb"
    proc = softswitch("compile", str(SAMPLE), "--p4runtime-files", str(out))
    assert proc.returncode == 0, proc.stderr
    assert 'name: "L3Ingress.ipv4_lpm"' in out.read_text()


def test_compile_writes_a_device_config_that_run_accepts(tmp_path):
    proc = softswitch("compile", str(SAMPLE), "-o", str(tmp_path / "build"))
    assert proc.returncode == 0, proc.stderr
    artifact = tmp_path / "build" / "l3_basic.json"
    from softswitch.p4runtime.pipeline import build, parse_device_config

    compiled = build(parse_device_config(artifact.read_bytes()))
    assert any(t.preamble.name == "L3Ingress.ipv4_lpm" for t in compiled.p4info.tables)


def test_compile_output_to_an_existing_file_writes_that_file(tmp_path):
    """As p4c-bm2-ss: ``-o /dev/null`` (or any existing file) is the file written, an
    existing directory gets ``<program>.json`` inside."""
    assert softswitch("compile", str(SAMPLE), "-o", "/dev/null").returncode == 0
    existing = tmp_path / "out.txt"
    existing.write_text("")
    assert softswitch("compile", str(SAMPLE), "-o", str(existing)).returncode == 0
    assert existing.read_bytes().startswith(b"{")
    assert softswitch("compile", str(SAMPLE), "-o", str(tmp_path)).returncode == 0
    assert (tmp_path / "l3_basic.json").exists()


def test_stf_sample_passes():
    proc = softswitch("stf", str(SAMPLE), str(SAMPLE.with_suffix(".stf")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout


def test_stf_reports_a_wrong_expectation(tmp_path):
    stf = tmp_path / "wrong.stf"
    text = SAMPLE.with_suffix(".stf").read_text().replace("expect 1 00bb", "expect 1 00cc")
    stf.write_text(text)
    proc = softswitch("stf", str(SAMPLE), str(stf))
    assert proc.returncode == 1
    assert "FAIL" in proc.stderr


@pytest.mark.parametrize("args", [
    ["compile", "/nonexistent/prog.p4"],
    ["compile"],
    ["compile", str(SAMPLE), "--arch", "psa"],
    ["compile", str(SAMPLE), "-D", "=1"],
    ["stf", str(SAMPLE), "/nonexistent.stf"],
    ["frobnicate"],
])
def test_bad_command_lines(args):
    assert_clean_user_error(softswitch(*args))


def test_garbage_inputs(tmp_path):
    rng = random.Random(7)
    cases = {
        "binary.p4": bytes(rng.randrange(256) for _ in range(2000)),
        "empty.p4": b"",
        "braces.p4": b"{" * 5000,
        "parens.p4": b"const bit<8> x = " + b"(" * 3000 + b"1" + b")" * 3000 + b";",
        "unterminated.p4": b'const string s = "abc',
        "bad_include.p4": b'#include "does_not_exist.p4"\n',
        "bad_directive.p4": b"#frobnicate\n",
    }
    for name, data in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        proc = softswitch("compile", str(path))
        assert_clean_user_error(proc)
        assert name in proc.stderr, (name, proc.stderr)


def test_garbage_stf(tmp_path):
    stf = tmp_path / "bad.stf"
    stf.write_text("packet zero 00\nfrobnicate 1 2\n")
    proc = softswitch("stf", str(SAMPLE), str(stf))
    assert_clean_user_error(proc)
    assert "bad.stf:1" in proc.stderr


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"p4c corpus not found at {CORPUS}")
def test_truncated_corpus_programs(tmp_path):
    rng = random.Random(11)
    programs = sorted((CORPUS / "p4_16_samples").glob("*.p4"))
    for src in rng.sample(programs, 12):
        text = src.read_text()
        cut = tmp_path / src.name
        cut.write_text(text[:rng.randrange(1, max(2, len(text)))])
        proc = softswitch("compile", str(cut), "-I", str(src.parent))
        assert "Traceback" not in proc.stderr and "internal compiler error" not in proc.stderr, (
            src.name, proc.stderr)
        assert proc.returncode in (0, 1)
