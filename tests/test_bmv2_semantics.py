"""Behaviours of BMv2 simple_switch that softswitch must share, each pinned by a small
program under tests/p4/bmv2_semantics/ (the program's comment says what it shows).
Every program runs under ``softswitch stf`` and, with the reference tools, under p4c's
own STF driver on real BMv2: both must pass, so the expectation is BMv2's, not ours."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from softswitch.devtools.reference_tools import ReferenceTools

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted((ROOT / "tests" / "p4" / "bmv2_semantics").glob("*.stf"))


@pytest.mark.parametrize("stf", CASES, ids=[p.stem for p in CASES])
def test_softswitch(stf: Path):
    res = subprocess.run([sys.executable, "-m", "softswitch", "stf",
                          str(stf.with_suffix(".p4")), str(stf)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("stf", CASES, ids=[p.stem for p in CASES])
def test_bmv2(stf: Path, reference_tools: ReferenceTools, tmp_path: Path):
    driver = reference_tools.bin_dir / "bmv2-stf"
    res = subprocess.run([str(driver), str(stf.with_suffix(".p4")), str(stf),
                          str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env=reference_tools.env())
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
