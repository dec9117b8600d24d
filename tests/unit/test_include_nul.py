"""A NUL byte in a name the compiler would open is a located error, never a traceback.

No file can be named with a NUL byte: an ``#include "a\\0b"`` (in the program or in a
file it includes), an include directory or a ``-D`` definition carrying one is refused
before cpp runs, at the directive's file and line, by ``softswitch compile`` (exit 1)
and over P4Runtime (SetForwardingPipelineConfig: INVALID_ARGUMENT), as every other
rejected include is.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from p4.config.v1 import p4info_pb2

from controlplane.p4rt import Client
from controlplane.p4rt.errors import P4RuntimeClientError
from softswitch.diagnostics import P4Error
from softswitch.frontend.compiler import compile_program
from softswitch.local_port import await_listening, free_port

SOFTSWITCH = Path(sys.executable).parent / "softswitch"
NUL_INCLUDE = '#include <core.p4>\n#include "a\0b"\ncontrol C() { apply { } }\n'


def test_compile_names_the_directive(tmp_path: Path):
    (tmp_path / "nul.p4").write_text(NUL_INCLUDE)
    done = subprocess.run([str(SOFTSWITCH), "compile", "nul.p4"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip() == \
        'nul.p4:2:1: error: #include "a\\0b": a file name cannot contain a NUL byte'


def test_an_included_file_names_its_own_line(tmp_path: Path):
    (tmp_path / "inc.p4").write_text("// one\n// two\n#include <x\0y.p4>\n")
    (tmp_path / "main.p4").write_text('#include "inc.p4"\n')
    with pytest.raises(P4Error) as err:
        compile_program(tmp_path / "main.p4")
    assert str(err.value) == (f"{tmp_path / 'inc.p4'}:3:1: error: #include <x\\0y.p4>: "
                              "a file name cannot contain a NUL byte")


@pytest.mark.parametrize("kwargs,message", [
    ({"include_dirs": ["inc\0lude"]},
     "include directory inc\\0lude: a file name cannot contain a NUL byte"),
    ({"defines": {"X": "a\0b"}}, "-DX=a\\0b: a macro definition cannot contain a NUL byte"),
], ids=["include-dir", "define"])
def test_options_with_nul_are_refused(tmp_path: Path, kwargs: dict, message: str):
    (tmp_path / "p.p4").write_text("#include <core.p4>\n")
    with pytest.raises(P4Error) as err:
        compile_program(tmp_path / "p.p4", **kwargs)
    assert str(err.value) == f"{tmp_path / 'p.p4'}:0:0: error: {message}"


@pytest.mark.timeout(120)
def test_over_p4runtime_it_is_invalid_argument():
    port = free_port()
    proc = subprocess.Popen([str(SOFTSWITCH), "run", "--no-p4", "--", "--grpc-server-addr",
                             f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        assert await_listening(port, 60, proc=proc) is None
        with Client(f"127.0.0.1:{port}", 0) as client, \
                pytest.raises(P4RuntimeClientError) as err:
            client.set_pipeline(p4info_pb2.P4Info(), NUL_INCLUDE.encode())
    finally:
        proc.terminate()
        proc.wait(30)
    assert err.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert str(err.value).endswith(
        "INVALID_ARGUMENT: the P4 program does not compile:\n"
        'program.p4:2:1: error: #include "a\\0b": a file name cannot contain a NUL byte')
