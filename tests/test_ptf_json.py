"""tailcc.p4's PTF suite on softswitch from p4c's BMv2 JSON (``ptf_tests/run.py
--config json|json-wrapped``): tailcc.p4 compiled by real ``p4c-bm2-ss``, the tests
push p4c's JSON with p4c's P4Info, bare or in PI's ``p4.tmp.P4DeviceConfig`` as
p4lang/tutorials send it. The wrapped run is the whole suite and must pass as
softswitch's own run does (``ptf_tests/expectations.py``: every test passes except
those listed for softswitch); the bare run takes the tests that depend on the
client's P4Info most (packet I/O by its controller headers, table writes by its ids).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "ptf_tests" / "run.py"

from ptf_tests import expectations  # noqa: E402

NEEDS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (netns, veth pairs)")
BARE_TESTS = ("robustness_test.PacketOutInTest", "forwarding_test")


def _run(tmp_path: Path, *args: str, timeout: float) -> dict[str, expectations.Result]:
    res = subprocess.run([sys.executable, str(RUNNER), "--keep", str(tmp_path), *args],
                         cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    results_file = tmp_path / "results.txt"
    assert results_file.exists(), res.stdout[-3000:] + res.stderr[-3000:]
    results = expectations.read_results(results_file)
    verdict = expectations.check("softswitch", results)
    assert verdict.ok, f"{verdict.describe()}\n{res.stdout[-4000:]}"
    return results


def test_runner_refuses_json_configs_it_cannot_serve():
    for args, message in ((["--target", "bmv2", "--config", "artifact"], "BMv2 takes"),
                          (["--suite", "nic", "--config", "json"], "PNA")):
        res = subprocess.run([sys.executable, str(RUNNER), *args], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
        assert res.returncode == 2 and message in res.stderr, res.stderr


@NEEDS_ROOT
@pytest.mark.timeout(600)
def test_ptf_suite_from_wrapped_p4c_json(tmp_path: Path, reference_tools):
    results = _run(tmp_path, "--config", "json-wrapped", timeout=500)
    assert len(results) >= 20, f"too few PTF tests ran: {sorted(results)}"
    assert (tmp_path / "tailcc.json").exists() and (tmp_path / "tailcc.p4info.txtpb").exists()


@NEEDS_ROOT
@pytest.mark.timeout(300)
def test_ptf_tests_from_bare_p4c_json(tmp_path: Path, reference_tools):
    results = _run(tmp_path, "--config", "json", "--", *BARE_TESTS, timeout=250)
    assert "robustness_test.PacketOutInTest" in results and len(results) >= 3
    assert all(r.verdict == "PASS" for r in results.values()), results
