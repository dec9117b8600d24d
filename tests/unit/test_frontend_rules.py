"""The front end's language rules, one program per rule (tests/p4/frontend).

Each program compiles, or is rejected with an error on the line its ``// error: …`` mark
names and with that meaning. With the reference tools, real ``p4test`` must agree: the
same verdict, an error on each marked line, and for an accepted program the same P4Info;
a program with an STF file passes it on softswitch and on BMv2 under p4c's STF driver.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from stf_support import stf_module

from softswitch import p4info
from softswitch.devtools.difftest.run import p4info_difference, run_p4c
from softswitch.diagnostics import P4Error
from softswitch.frontend.compiler import compile_program
from softswitch.stf import run_stf
from softswitch.v1model.fast_switch import load_switch

p4c_stf = stf_module("p4c_stf")


def _compile(program):
    return compile_program(str(program.path), (str(program.path.parent),))


def test_rule(frontend_program):
    if not frontend_program.errors:
        p4info.generate(_compile(frontend_program))
        return
    with pytest.raises(P4Error) as info:
        p4info.generate(_compile(frontend_program))
    found = [(d.loc.line if d.loc else 0, d.message) for d in info.value.diagnostics
             if d.severity == "error"]
    for line, fragment in frontend_program.errors:
        assert any(n == line and fragment in msg for n, msg in found), (
            f"expected an error at line {line} saying '{fragment}', got: {found}")
    for d in info.value.diagnostics:
        if d.severity == "error":
            assert d.loc is not None and Path(d.loc.file).resolve() == \
                frontend_program.path.resolve(), f"error outside the program: {d}"


def test_rule_stf(frontend_program):
    if frontend_program.stf is None:
        pytest.skip("no packet test")
    res = run_stf(str(frontend_program.path), str(frontend_program.stf),
                  (str(frontend_program.path.parent),))
    assert res.ok, res.report
    assert not res.warnings, [str(w) for w in res.warnings]


def test_p4test_agrees(frontend_program, reference_tools, tmp_path):
    if not frontend_program.p4test_verdict:
        pytest.skip("p4test gives no verdict on this program (see its header)")
    out = tmp_path / "p4test.p4info.txtpb"
    verdict = run_p4c(reference_tools.p4test, frontend_program.path,
                      [str(frontend_program.path.parent)], out)
    if frontend_program.p4test_differs:   # documented in the program's header
        expected = "accept" if frontend_program.errors else "reject"
        assert verdict.outcome == expected, f"p4test: {verdict.outcome} {verdict.message}"
        return
    if not frontend_program.errors:
        assert verdict.outcome == "accept", verdict.message
        diff = p4info_difference(p4info.generate(_compile(frontend_program)), out.read_text())
        assert not diff, diff
        return
    assert verdict.outcome == "reject", f"p4test: {verdict.outcome} {verdict.message}"
    for line, _fragment in frontend_program.errors:
        # (a few p4c errors come without a location: then only the verdict is compared)
        assert line in verdict.lines or not verdict.lines, \
            f"p4test reports errors on lines {verdict.lines}, not {line}: {verdict.message}"


def test_bmv2_stf(frontend_program, reference_tools, tmp_path):
    if frontend_program.stf is None:
        pytest.skip("no packet test")
    result = p4c_stf.run(reference_tools, frontend_program.path, frontend_program.stf,
                         tmp_path / "bmv2")
    assert result.ok, result.excerpt()


def test_digests_carry_their_p4info_names():
    """The switch names each digest as P4Info does (struct/header type, typedef name,
    digest_N), so a P4Runtime client can tell which digest a message belongs to."""

    path = Path(__file__).resolve().parents[1] / "p4" / "frontend" / "digest_data_ok.p4"
    checked = compile_program(str(path), (str(path.parent),))
    names = [d.preamble.name for d in p4info.generate(checked).digests]
    sw = load_switch(checked)
    sw.inject(3, bytes([1, 2, 0, 3]))
    got = sw.drain_digests()
    assert [name for name, _ in got] == ["digest_0", "h_t", "pair_t", "digest_1", "learn_t"]
    assert set(names) == {name for name, _ in got}
    assert got[0][1] == [1, 3] and got[1][1] == [1, 2, 3] and got[3][1] == [1]
