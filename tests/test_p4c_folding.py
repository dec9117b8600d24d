"""What p4c folds before it asks for compile-time values, against real p4c-bm2-ss.

Each program of tests/p4/folding is one folding rule (strength reduction of ``/`` and
``%``, copy propagation and constant folding of ``&&``/``||``/``?:``/``if``, serializable
enum operands) or a case p4c still refuses after folding. A program marks the line of
its error with ``// error: REASON``; ``NAME_ok.p4`` has none and must compile.

* softswitch's verdict: accepted, or refused on the marked line with that reason;
* p4c-bm2-ss's verdict (``reference_tools``): the same, its error on the same line with
  the same reason;
* a program with an STF file passes it on softswitch's interpreter, on its C fast path
  and on BMv2 under p4c's STF driver.

``test_runtime_int_cast_differs_on_bmv2`` pins the one known difference: p4c-bm2-ss
masks a cast of a run-time value to ``int`` with zero bits, so BMv2 computes
``((int)ingress_port + 1) % 2`` as 1 on every port; softswitch computes the value.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from stf_support import stf_module

from softswitch.diagnostics import P4Error
from softswitch.frontend import ast
from softswitch.frontend.compiler import compile_program
from softswitch.stf.stf import parse_stf_file, run_commands
from softswitch.v1model.fast_switch import load_switch
from softswitch.v1model.switch import Switch

FOLDING_DIR = Path(__file__).resolve().parent / "p4" / "folding"
_MARK = re.compile(r"//\s*error:\s*(?P<reason>.+?)\s*$")
P4C_TIMEOUT_S = 60

p4c_stf = stf_module("p4c_stf")


@dataclass(frozen=True)
class FoldingProgram:
    path: Path
    error_line: int | None       # None: the program compiles
    reason: str

    @property
    def stf(self) -> Path | None:
        stf = self.path.with_suffix(".stf")
        return stf if stf.exists() else None


def _programs() -> list[FoldingProgram]:
    out = []
    for path in sorted(FOLDING_DIR.glob("*.p4")):
        marks = [(n, m.group("reason")) for n, line in
                 enumerate(path.read_text().splitlines(), start=1) if (m := _MARK.search(line))]
        assert len(marks) <= 1, f"{path.name}: one error per program"
        line, reason = marks[0] if marks else (None, "")
        assert (line is None) == path.stem.endswith("_ok"), f"{path.name}: name and marks"
        out.append(FoldingProgram(path, line, reason))
    return out


PROGRAMS = _programs()
WITH_STF = [p for p in PROGRAMS if p.stf is not None]


def _ids(programs: list[FoldingProgram]) -> list[str]:
    return [p.path.stem for p in programs]


def _compile(path: Path):
    return compile_program(str(path), (str(path.parent),))


def _p4c(tools, path: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([tools.p4c, "-o", str(out), str(path)], capture_output=True,
                          text=True, timeout=P4C_TIMEOUT_S)


def test_every_rule_has_programs():
    names = {p.path.stem for p in PROGRAMS}
    for rule in ("strength_reduce", "copyprop", "enum_operand"):
        assert any(n.startswith(rule) and n.endswith("_ok") for n in names), rule
        assert any(n.startswith(rule) and n.endswith("_err") for n in names), rule
    assert {p.path.stem for p in WITH_STF} == {n for n in names if n.endswith("_ok")}


@pytest.mark.parametrize("program", PROGRAMS, ids=_ids(PROGRAMS))
def test_softswitch_verdict(program: FoldingProgram):
    if program.error_line is None:
        _compile(program.path)
        return
    with pytest.raises(P4Error) as info:
        _compile(program.path)
    found = [(d.loc.line if d.loc else 0, d.message) for d in info.value.diagnostics
             if d.severity == "error"]
    assert len(found) == 1 and found[0][0] == program.error_line \
        and found[0][1].endswith(": " + program.reason), found


@pytest.mark.parametrize("program", PROGRAMS, ids=_ids(PROGRAMS))
def test_p4c_verdict(program: FoldingProgram, reference_tools, tmp_path):
    proc = _p4c(reference_tools, program.path, tmp_path / "out.json")
    text = proc.stdout + proc.stderr
    if program.error_line is None:
        assert proc.returncode == 0, text
        return
    assert proc.returncode != 0, f"p4c-bm2-ss accepts {program.path.name}"
    errors = re.findall(rf"{re.escape(program.path.name)}\((\d+)\): \[--Werror=[\w-]+\] "
                        r"error: (.*)", text)
    assert errors == [(str(program.error_line), errors[0][1])], text
    assert errors[0][1].endswith(": " + program.reason), text


def test_strength_reduction_leaves_no_division(reference_tools, tmp_path):
    """Like p4c-bm2-ss's JSON, softswitch's program keeps no '/' or '%' after strength
    reduction: each became a shift or a mask."""
    path = FOLDING_DIR / "strength_reduce_ok.p4"
    ingress = next(d for d in _compile(path).program.decls
                   if isinstance(d, ast.ControlDecl) and d.name == "I")
    binaries = [n for n in ast.walk(ingress) if isinstance(n, ast.Binary)]
    assert not [n for n in binaries if n.op in ("/", "%") and n.const is ast.NOT_CONST]
    assert {"&", ">>"} <= {n.op for n in binaries}
    out = tmp_path / "out.json"
    assert _p4c(reference_tools, path, out).returncode == 0
    text = out.read_text()
    assert '"op" : "/"' not in text and '"op" : "%"' not in text and '"op" : "&"' in text


@pytest.mark.parametrize("program", WITH_STF, ids=_ids(WITH_STF))
@pytest.mark.parametrize("path", ["interpreter", "c"])
def test_stf_on_softswitch(program: FoldingProgram, path: str):
    checked = _compile(program.path)
    switch = Switch.from_program(checked) if path == "interpreter" \
        else load_switch(checked, fastpath="require")
    result = run_commands(switch, parse_stf_file(str(program.stf)))
    assert result.ok, result.report


@pytest.mark.parametrize("program", WITH_STF, ids=_ids(WITH_STF))
def test_stf_on_bmv2(program: FoldingProgram, reference_tools, tmp_path):
    result = p4c_stf.run(reference_tools, program.path, program.stf, tmp_path / "bmv2")
    assert result.ok, result.excerpt()


def test_runtime_int_cast_differs_on_bmv2(reference_tools, tmp_path):
    """From port 1, ((int)ingress_port + 1) % 2 is 0 on softswitch; p4c-bm2-ss lowers
    (int)ingress_port to ingress_port & 0 (an int has no width for its mask), so BMv2
    forwards to port 1. The STF files above only use ports where both agree."""
    program = FOLDING_DIR / "strength_reduce_ok.p4"
    out = tmp_path / "out.json"
    assert _p4c(reference_tools, program, out).returncode == 0
    zero_masked = {"op": "&", "left": {"type": "field",
                                       "value": ["standard_metadata", "ingress_port"]},
                   "right": {"type": "hexstr", "value": "0x0000"}}
    assert json.dumps(zero_masked, sort_keys=True) in _subexpressions(json.loads(
        out.read_text()))
    packet = "packet 1 17 00 0040\n"
    results = {}
    for port in (0, 1):
        stf = tmp_path / f"to_{port}.stf"
        stf.write_text(packet + f"expect {port} 00 07 001f\n")
        soft = run_commands(Switch.from_program(_compile(program)), parse_stf_file(str(stf)))
        bmv2 = p4c_stf.run(reference_tools, program, stf, tmp_path / f"bmv2_{port}")
        results[port] = (soft.ok, bmv2.ok)
    assert results == {0: (True, False), 1: (False, True)}


def _subexpressions(node) -> set[str]:
    """Every JSON object under ``node``, canonically encoded."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            out.add(json.dumps(n, sort_keys=True))
            stack.extend(n.values())
        elif isinstance(n, list):
            stack.extend(n)
    return out
