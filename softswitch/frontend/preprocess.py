"""Run the C preprocessor over a P4 program the way p4c does, keeping a line map.

p4c pipes every P4_16 program through ``cpp -C -undef -nostdinc -x assembler-with-cpp``
(see p4c's ``ParserOptions::preprocess``): no predefined macros, no system headers,
comments kept, and assembler mode so that stray ``#``/``'`` in P4 text are not C errors.
We do the same with Debian's ``cpp`` so ``#include``/``#define``/``#ifdef`` behave exactly
as for p4c users. cpp's output carries ``# LINE "FILE" FLAGS`` markers; we turn those into
a per-line map so every token can be reported at the user's own file and line, and blank
the marker lines so the lexer never sees them.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from softswitch.diagnostics import P4Error, SourceLoc

#: Our own architecture includes (``core.p4``, ``v1model.p4``), searched after the user's
#: include directories, where p4c puts its own ``p4include`` directory.
P4INCLUDE_DIR = Path(__file__).resolve().parent.parent / "p4include"

#: A runaway ``#include`` recursion or a huge macro expansion must not hang a compile.
CPP_TIMEOUT_SECONDS = 60

_MARKER = re.compile(r'^#(?:line)?\s*(\d+)\s+"((?:[^"\\]|\\.)*)"')
_CPP_DIAG = re.compile(r"^(.*?):(\d+):(?:(\d+):)?\s*(?:fatal )?error:\s*(.*)$")


@dataclass(slots=True)
class Preprocessed:
    """Preprocessed text plus, for each of its lines, where that line came from.

    ``lines[i]`` is the (file, line) of output line ``i`` (0-based); marker lines are
    blanked in ``text`` and map to the following line's origin.
    """

    text: str
    lines: list[tuple[str, int]] = field(default_factory=list)

    def loc(self, line_index: int, col: int) -> SourceLoc:
        """The user-source location of 0-based output line ``line_index``, 1-based ``col``."""
        if 0 <= line_index < len(self.lines):
            file, line = self.lines[line_index]
            return SourceLoc(file, line, col)
        if self.lines:
            file, line = self.lines[-1]
            return SourceLoc(file, line + line_index - len(self.lines) + 1, col)
        return SourceLoc("<input>", line_index + 1, col)


def _cpp_command(include_dirs: Sequence[str | os.PathLike[str]],
                 defines: Mapping[str, str | None] | None) -> list[str]:
    """The cpp invocation p4c uses: user ``-D``/``-I`` options, then the architecture
    include directory (so, as with p4c, a user directory may override ``core.p4``)."""
    cmd = ["cpp", "-C", "-undef", "-nostdinc", "-x", "assembler-with-cpp"]
    for name, value in (defines or {}).items():
        cmd.append(f"-D{name}" if value is None else f"-D{name}={value}")
    cmd.extend(f"-I{d}" for d in include_dirs)
    cmd.append(f"-I{P4INCLUDE_DIR}")
    return cmd


def _cpp_error(stderr: str, fallback_file: str, stdin_name: str | None) -> P4Error:
    """Turn cpp's first ``file:line:col: error: msg`` into a located P4Error."""
    for raw in stderr.splitlines():
        m = _CPP_DIAG.match(raw.strip())
        if m:
            file = m.group(1)
            if stdin_name is not None and file == "<stdin>":
                file = stdin_name
            loc = SourceLoc(file, int(m.group(2)), int(m.group(3) or 1))
            return P4Error(f"preprocessor: {m.group(4)}", loc)
    detail = stderr.strip().splitlines()[0] if stderr.strip() else "unknown failure"
    return P4Error(f"preprocessor failed: {detail}", SourceLoc(fallback_file, 0, 0))


def _run_cpp(cmd: list[str], stdin_text: str | None, file_for_errors: str,
             stdin_name: str | None) -> str:
    """Run cpp with a timeout; every failure becomes a P4Error, never a traceback."""
    try:
        proc = subprocess.run(cmd, input=stdin_text, capture_output=True, text=True,
                              timeout=CPP_TIMEOUT_SECONDS, errors="replace")
    except FileNotFoundError as exc:
        raise P4Error("preprocessor 'cpp' not found; install the C preprocessor",
                      SourceLoc(file_for_errors, 0, 0)) from exc
    except subprocess.TimeoutExpired as exc:
        raise P4Error(f"preprocessor timed out after {CPP_TIMEOUT_SECONDS}s",
                      SourceLoc(file_for_errors, 0, 0)) from exc
    if proc.returncode != 0:
        raise _cpp_error(proc.stderr, file_for_errors, stdin_name)
    return proc.stdout


def build_line_map(output: str, stdin_name: str | None = None) -> Preprocessed:
    """Blank cpp's line markers (and other ``#`` lines, as p4c's lexer ignores them) and
    record each line's origin."""
    out_lines = output.split("\n")
    origins: list[tuple[str, int]] = []
    cur_file, cur_line = "<input>", 1
    for i, text in enumerate(out_lines):
        m = _MARKER.match(text) if text.startswith("#") else None
        if m:
            cur_line = int(m.group(1))
            cur_file = m.group(2).replace('\\"', '"').replace("\\\\", "\\")
            if stdin_name is not None and cur_file == "<stdin>":
                cur_file = stdin_name
            out_lines[i] = ""
            origins.append((cur_file, cur_line))
            continue
        if text.lstrip(" \t").startswith("#"):
            # Other `#` lines pass through cpp in assembler mode; p4c's lexer skips them.
            out_lines[i] = ""
        origins.append((cur_file, cur_line))
        cur_line += 1
    return Preprocessed("\n".join(out_lines), origins)


def preprocess(path: str | os.PathLike[str],
               include_dirs: Sequence[str | os.PathLike[str]] = (),
               defines: Mapping[str, str | None] | None = None) -> Preprocessed:
    """Preprocess the P4 file at ``path``; locations name the files as cpp saw them."""
    name = os.fspath(path)
    if not os.path.isfile(name):
        raise P4Error(f"input file {name} does not exist", SourceLoc(name, 0, 0))
    cmd = _cpp_command(include_dirs, defines) + [name]
    return build_line_map(_run_cpp(cmd, None, name, None))


def preprocess_text(text: str, filename: str = "<string>",
                    include_dirs: Sequence[str | os.PathLike[str]] = (),
                    defines: Mapping[str, str | None] | None = None) -> Preprocessed:
    """Preprocess program text given in memory (tests, tools); reported as ``filename``."""
    cmd = _cpp_command(include_dirs, defines) + ["-"]
    return build_line_map(_run_cpp(cmd, text, filename, filename), stdin_name=filename)
