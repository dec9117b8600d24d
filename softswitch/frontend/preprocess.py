"""Run the C preprocessor over a P4 program the way p4c does, keeping a line map.

p4c pipes every P4_16 program through ``cpp -C -undef -nostdinc -x assembler-with-cpp``
(see p4c's ``ParserOptions::preprocess``): no predefined macros, no system headers,
comments kept, and assembler mode so that stray ``#``/``'`` in P4 text are not C errors.
We do the same with Debian's ``cpp`` so ``#include``/``#define``/``#ifdef`` behave exactly
as for p4c users. cpp's output carries ``# LINE "FILE" FLAGS`` markers; we turn those into
a per-line map so every token can be reported at the user's own file and line, and blank
the marker lines so the lexer never sees them.

cpp runs under the compile's :mod:`~softswitch.frontend.limits`: the program's size is
checked first, cpp's output is read in bounded chunks (cpp is killed past
``max_preprocessed_bytes`` or ``max_seconds``), and cpp inherits the process's memory
limit. Includes are checked before cpp runs: an ``#include`` of a device, FIFO or
other non-regular file is refused wherever it comes from. With ``include_roots`` set
(a pipeline config sent over P4Runtime) an include may only name a relative path
without ``..`` inside those roots or softswitch's ``p4include/``; absolute and
computed (macro) includes are refused, and after cpp every file its line markers name
must lie inside them, so nothing else of the server's disk ever reaches the parser or
an error message (the compile worker also runs under Landlock where the kernel has it:
:mod:`softswitch.p4runtime.isolate`). A NUL byte in any name the compile would hand the
operating system (the program's path, an include directory or directive, a ``-D``
definition) is a located error, since no file can carry such a name.
"""

from __future__ import annotations

import os
import re
import selectors
import stat
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from softswitch.diagnostics import P4Error, SourceLoc
from softswitch.frontend import limits as limits_mod
from softswitch.frontend.limits import LimitExceeded, Limits, describe

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


def _cpp_error(stderr: str, fallback_file: str, stdin_name: str | None,
               limits: Limits | None = None) -> P4Error:
    """Turn cpp's first ``file:line:col: error: msg`` into a located P4Error (without
    the message when the file is one a pipeline config may not read)."""
    limits = limits if limits is not None else limits_mod.current()
    if "out of memory" in stderr or "virtual memory exhausted" in stderr:
        cap = limits.max_memory_bytes
        return LimitExceeded("max_memory_bytes", "the preprocessor ran out of memory" + (
            f" (more than {describe('max_memory_bytes', cap)})" if cap else ""),
            SourceLoc(fallback_file, 0, 0))
    for raw in stderr.splitlines():
        m = _CPP_DIAG.match(raw.strip())
        if m:
            file = m.group(1)
            if stdin_name is not None and file == "<stdin>":
                file = stdin_name
            loc = SourceLoc(file, int(m.group(2)), int(m.group(3) or 1))
            if limits.include_roots is not None and not _inside(file, limits.include_roots):
                return P4Error("preprocessor: error in a file a pipeline config may not "
                               "include (not shown)", SourceLoc(fallback_file, 0, 0))
            return P4Error(f"preprocessor: {m.group(4)}", loc)
    detail = stderr.strip().splitlines()[0] if stderr.strip() else "unknown failure"
    if limits.include_roots is not None:
        detail = "cpp failed"
    return P4Error(f"preprocessor failed: {detail}", SourceLoc(fallback_file, 0, 0))


_STDERR_KEPT = 64 * 1024


def _run_cpp(cmd: list[str], stdin_text: str | None, file_for_errors: str,
             stdin_name: str | None, limits: Limits | None = None) -> str:
    """Run cpp within the compile's limits (output size, time; memory is inherited);
    every failure becomes a P4Error, never a traceback."""
    limits = limits if limits is not None else limits_mod.current()
    where = SourceLoc(file_for_errors, 0, 0)
    seconds = limits.max_seconds if limits.max_seconds is not None else CPP_TIMEOUT_SECONDS
    cap = limits.max_preprocessed_bytes
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin_text is not None
                                else subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
    except FileNotFoundError as exc:
        raise P4Error("preprocessor 'cpp' not found: install the C preprocessor "
                      "(Debian, Ubuntu: apt-get install cpp; Fedora: dnf install cpp)",
                      where) from exc
    except OSError as exc:
        raise P4Error(f"cannot run the preprocessor: {exc.strerror}", where) from None
    errors: list[bytes] = []
    helpers = [threading.Thread(target=_drain, args=(proc.stderr, errors), daemon=True)]
    if stdin_text is not None:
        helpers.append(threading.Thread(target=_feed, args=(proc.stdin, stdin_text),
                                        daemon=True))
    for helper in helpers:
        helper.start()
    try:
        out = _read_bounded(proc, cap, time.monotonic() + seconds)
    except LimitExceeded as exc:
        proc.kill()
        proc.wait()
        raise LimitExceeded(exc.limit, exc.detail, where) from None
    finally:
        for helper in helpers:
            helper.join(5)
    returncode = proc.wait()
    stderr = b"".join(errors).decode("utf-8", "replace")
    if returncode != 0:
        raise _cpp_error(stderr, file_for_errors, stdin_name, limits)
    return out.decode("utf-8", "replace")


def _read_bounded(proc: subprocess.Popen[bytes], cap: int | None, deadline: float) -> bytes:
    """cpp's whole standard output, or LimitExceeded past ``cap`` bytes / the deadline."""
    assert proc.stdout is not None
    chunks: list[bytes] = []
    total = 0
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                limit = limits_mod.current().max_seconds
                raise LimitExceeded("max_seconds", "the preprocessor took longer than "
                                    f"{describe('max_seconds', limit or CPP_TIMEOUT_SECONDS)}")
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                return b"".join(chunks)
            total += len(chunk)
            if cap is not None and total > cap:
                raise LimitExceeded("max_preprocessed_bytes", "the preprocessed program is "
                                    f"larger than {describe('max_preprocessed_bytes', cap)}")
            chunks.append(chunk)


def _drain(stream: object, into: list[bytes]) -> None:
    kept = 0
    while True:
        chunk = stream.read(1 << 14)  # type: ignore[attr-defined]
        if not chunk:
            return
        if kept < _STDERR_KEPT:
            into.append(chunk[:_STDERR_KEPT - kept])
            kept += len(chunk)


def _feed(stream: object, text: str) -> None:
    try:
        stream.write(text.encode())  # type: ignore[attr-defined]
        stream.close()  # type: ignore[attr-defined]
    except OSError:
        pass          # cpp stopped reading (it failed or was killed)


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
    _refuse_nul(name, "input file", SourceLoc(name, 0, 0))
    if not os.path.isfile(name):
        raise P4Error(f"input file {name} does not exist", SourceLoc(name, 0, 0))
    limits = limits_mod.current()
    if limits.max_source_bytes is not None and os.path.getsize(name) > limits.max_source_bytes:
        raise LimitExceeded("max_source_bytes", f"the program is {os.path.getsize(name)} "
                            "bytes, more than "
                            f"{describe('max_source_bytes', limits.max_source_bytes)}",
                            SourceLoc(name, 0, 0))
    dirs = [os.fspath(d) for d in include_dirs]
    _refuse_nul_options(dirs, defines, SourceLoc(name, 0, 0))
    check_includes(name, dirs, limits)
    cmd = _cpp_command(include_dirs, defines) + [name]
    pre = build_line_map(_run_cpp(cmd, None, name, None, limits))
    _check_origins(pre, name, limits)
    return pre


def preprocess_text(text: str, filename: str = "<string>",
                    include_dirs: Sequence[str | os.PathLike[str]] = (),
                    defines: Mapping[str, str | None] | None = None) -> Preprocessed:
    """Preprocess program text given in memory (tests, tools); reported as ``filename``."""
    _refuse_nul_options([os.fspath(d) for d in include_dirs], defines,
                        SourceLoc(filename, 0, 0))
    cmd = _cpp_command(include_dirs, defines) + ["-"]
    return build_line_map(_run_cpp(cmd, text, filename, filename), stdin_name=filename)


# ---------------------------------------------------------------------- include checks
def _refuse_nul(name: str, what: str, loc: SourceLoc) -> None:
    """A located error for a name with a NUL byte (the OS cannot open such a file)."""
    if "\0" in name:
        raise P4Error(f"{what} {_visible(name)}: a file name cannot contain a NUL byte", loc)


def _visible(name: str) -> str:
    """``name`` printable: a NUL byte shown as ``\\0``."""
    return name.replace("\0", "\\0")


def _refuse_nul_options(include_dirs: Sequence[str], defines: Mapping[str, str | None] | None,
                        loc: SourceLoc) -> None:
    for d in include_dirs:
        _refuse_nul(d, "include directory", loc)
    for key, value in (defines or {}).items():
        if "\0" in key or "\0" in (value or ""):
            text = key if value is None else f"{key}={value}"
            raise P4Error(f"-D{_visible(text)}: a macro definition cannot contain a NUL "
                          "byte", loc)


_DIRECTIVE = re.compile(
    r"^[ \t\f\v]*(?:#|%:)[ \t\f\v]*(?:/\*.*?\*/[ \t\f\v]*)*"
    r"(include_next|include|import)\b[ \t\f\v]*(.*)$", re.MULTILINE)
_OPERAND = re.compile(r'^(?:"([^"\n]*)"|<([^>\n]*)>)')
_MAX_INCLUDE_CHECKS = 10000


def check_includes(main: str, include_dirs: Sequence[str], limits: Limits) -> None:
    """Refuse, before cpp opens anything, includes of non-regular files (devices,
    FIFOs …) and, for a pipeline config (``limits.include_roots``), every include that
    is absolute, goes up with ``..``, is computed by a macro or leaves the roots.
    Best effort (cpp decides what a directive is); the hard guarantees are the limits,
    :func:`_check_origins` and the worker's sandbox."""
    roots = limits.include_roots
    seen: set[str] = set()
    pending = [os.path.realpath(main)]
    while pending and len(seen) < _MAX_INCLUDE_CHECKS:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            with open(current, "rb") as f:
                text = f.read(limits.max_source_bytes or -1).decode("utf-8", "replace")
        except OSError:
            continue
        joined = text.replace("\\\r\n", "").replace("\\\n", "")
        for m in _DIRECTIVE.finditer(joined):
            line = joined.count("\n", 0, m.start()) + 1
            loc = SourceLoc(current if current != os.path.realpath(main) else main, line, 1)
            found = _check_one(m.group(1), m.group(2).strip(), current, include_dirs, roots,
                               loc)
            if found is not None:
                pending.append(found)


def _check_one(keyword: str, operand: str, including: str, include_dirs: Sequence[str],
               roots: tuple[str, ...] | None, loc: SourceLoc) -> str | None:
    """The resolved file of one include directive (None if unresolvable); P4Error for
    a forbidden one."""
    m = _OPERAND.match(operand)
    if m is None:
        if roots is not None:
            raise P4Error(f"#{keyword} with a computed (macro) file name is not allowed in "
                          'a pipeline config; write #include "file" or <file>', loc)
        return None
    quoted = m.group(1) is not None
    target = m.group(1) if quoted else m.group(2)
    shown = f'"{target}"' if quoted else f"<{target}>"
    if "\0" in target:
        raise P4Error(f"#{keyword} {_visible(shown)}: a file name cannot contain a NUL byte",
                      loc)
    if roots is not None:
        parts = target.replace("\\", "/").split("/")
        if os.path.isabs(target) or target.startswith("~"):
            raise P4Error(f"#{keyword} {shown}: absolute paths are not allowed in a pipeline "
                          "config (only the config's own files and softswitch's "
                          "p4include/)", loc)
        if ".." in parts:
            raise P4Error(f"#{keyword} {shown}: '..' is not allowed in a pipeline config "
                          "(only the config's own files and softswitch's p4include/)", loc)
    candidates = []
    if os.path.isabs(target):
        candidates.append(target)
    else:
        if quoted:
            candidates.append(os.path.join(os.path.dirname(including), target))
        candidates.extend(os.path.join(d, target) for d in include_dirs)
        candidates.append(os.path.join(P4INCLUDE_DIR, target))
    for candidate in candidates:
        try:
            st = os.stat(candidate)
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            if stat.S_ISDIR(st.st_mode):
                continue
            raise P4Error(f"#{keyword} {shown}: not a regular file (a device, FIFO or "
                          "socket cannot be included)", loc)
        real = os.path.realpath(candidate)
        if roots is not None and not _inside(real, roots):
            raise P4Error(f"#{keyword} {shown}: resolves outside the pipeline config's "
                          "files and softswitch's p4include/", loc)
        return real
    return None


def _inside(path: str, roots: Sequence[str]) -> bool:
    """Whether ``path`` lies in one of ``roots`` or in softswitch's p4include/."""
    real = os.path.realpath(path)
    for root in (*roots, str(P4INCLUDE_DIR)):
        base = os.path.realpath(root)
        if real == base or real.startswith(base + os.sep):
            return True
    return False


def _check_origins(pre: Preprocessed, main: str, limits: Limits) -> None:
    """Pipeline configs: every file cpp read must lie inside the roots (whatever the
    directives looked like), or nothing of it reaches the parser or a message."""
    roots = limits.include_roots
    if roots is None:
        return
    for file in {origin for origin, _ in pre.lines}:
        if file.startswith("<") and file.endswith(">"):
            continue            # <built-in>, <command-line>
        if not _inside(file if os.path.isabs(file) else os.path.join(
                os.path.dirname(main), file), roots):
            raise P4Error("the program includes a file outside the pipeline config's "
                          "files and softswitch's p4include/ (not shown)",
                          SourceLoc(main, 0, 0))
