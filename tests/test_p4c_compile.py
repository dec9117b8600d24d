"""The project's P4 programs under real p4c: they compile without a warning from a file
under p4src/, and the P4Info p4c writes is the P4Info softswitch writes.

Programs: p4src/tailcc.p4 and every p4src/samples/*.p4, with ``p4c-bm2-ss`` (the
``reference_tools`` fixture: skips without the real tools, fails under CI=true).

The P4Infos are compared as protobuf messages after clearing ``doc`` fields, the one
difference the project documents (tests/test_p4info_corpus.py: p4c's documentation
strings are not compared); as measured, tailcc's and l3_basic's P4Infos are equal even
with their ``doc`` fields.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4info_support import strip_doc

ROOT = Path(__file__).resolve().parent.parent
P4SRC = ROOT / "p4src"
PROGRAMS = [P4SRC / "tailcc.p4", *sorted((P4SRC / "samples").glob("*.p4"))]

# p4c: "FILE(LINE): [--Wwarn=KIND] warning: TEXT" (then the source line and a caret line)
_WARNING = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\):\s*"
                      r"(?:\[--Wwarn=(?P<kind>[\w-]+)\]\s*)?warning:\s*(?P<text>.*)$")


@dataclass(frozen=True)
class P4cBuild:
    returncode: int
    stderr: str
    p4info: Path


def _id(program: Path) -> str:
    return program.relative_to(P4SRC).with_suffix("").as_posix()


@pytest.fixture(scope="module")
def p4c_builds(reference_tools, tmp_path_factory) -> dict[Path, P4cBuild]:
    """Each program compiled once by p4c-bm2-ss (JSON and P4Info)."""
    out = tmp_path_factory.mktemp("p4c")
    builds = {}
    for program in PROGRAMS:
        p4info = out / f"{program.stem}.p4info.txtpb"
        proc = subprocess.run(
            [reference_tools.p4c, "-o", str(out / f"{program.stem}.json"),
             "--p4runtime-files", str(p4info), str(program)],
            capture_output=True, text=True, timeout=300, env=reference_tools.env())
        builds[program] = P4cBuild(proc.returncode, proc.stderr, p4info)
    return builds


def p4src_warnings(stderr: str) -> list[str]:
    """p4c's warnings located in a file under p4src/, as ``path:line: [kind] text``."""
    found = []
    for line in stderr.splitlines():
        m = _WARNING.match(line.strip())
        if not m:
            continue
        path = Path(m["file"])
        try:
            rel = path.resolve().relative_to(P4SRC)
        except ValueError:
            continue
        found.append(f"p4src/{rel.as_posix()}:{m['line']}: [{m['kind'] or 'warning'}] "
                     f"{m['text']}")
    return found


def test_warning_pattern():
    stderr = (f"{P4SRC}/include/defines.p4(121): [--Wwarn=unused] warning: 'TC_X' is unused\n"
              "const TrafficClass_t TC_X = 1;\n"
              f"{P4SRC}/include/forwarding.p4(116): [--Wwarn=unsupported] warning: Target "
              "does not support default_action for T (due to action profiles)\n"
              "/opt/p4lang/p4include/v1model.p4(10): [--Wwarn=unused] warning: not ours\n")
    assert p4src_warnings(stderr) == [
        "p4src/include/defines.p4:121: [unused] 'TC_X' is unused",
        "p4src/include/forwarding.p4:116: [unsupported] Target does not support "
        "default_action for T (due to action profiles)"]


@pytest.mark.parametrize("program", PROGRAMS, ids=[_id(p) for p in PROGRAMS])
def test_p4c_compiles_without_p4src_warnings(program: Path, p4c_builds):
    build = p4c_builds[program]
    assert build.returncode == 0, build.stderr
    warnings = p4src_warnings(build.stderr)
    assert not warnings, (f"p4c-bm2-ss warns {len(warnings)} time(s) about p4src/:\n"
                          + "\n".join(warnings))


def _load(path: Path) -> p4info_pb2.P4Info:
    msg = p4info_pb2.P4Info()
    text_format.Parse(path.read_text(), msg)
    strip_doc(msg)
    return msg


@pytest.mark.parametrize("program", PROGRAMS, ids=[_id(p) for p in PROGRAMS])
def test_p4info_equals_p4cs(program: Path, p4c_builds, tmp_path: Path):
    build = p4c_builds[program]
    assert build.returncode == 0, build.stderr
    ours = tmp_path / "softswitch.p4info.txtpb"
    proc = subprocess.run([sys.executable, "-m", "softswitch", "compile", str(program),
                           "--p4runtime-files", str(ours)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    expected, got = _load(build.p4info), _load(ours)
    if expected != got:
        import difflib
        diff = difflib.unified_diff(text_format.MessageToString(expected).splitlines(),
                                    text_format.MessageToString(got).splitlines(),
                                    "p4c-bm2-ss", "softswitch", lineterm="", n=3)
        pytest.fail("P4Info differs:\n" + "\n".join(list(diff)[:200]))
