"""Compile an untrusted program in a worker process that cannot hurt the host.

The P4Runtime server gets P4 programs from the network (SetForwardingPipelineConfig).
Before it builds one, :func:`check` compiles it in a fresh ``python -m
softswitch.p4runtime.isolate`` process that

* runs the whole compile (preprocessor, front end, P4Info, v1model target) under the
  :class:`~softswitch.frontend.limits.Limits` — ``RLIMIT_AS`` and ``RLIMIT_CPU`` on
  the worker (cpp inherits them), bounded cpp output, and a wall-clock deadline
  enforced by the parent, which kills the worker when it passes;
* restricts itself with Landlock (:mod:`softswitch.p4runtime.landlock`) to the
  config's scratch directory, softswitch's package, Python's module directories and
  what cpp needs to run, where the kernel offers it;
* only ever answers with one small JSON object: ok, or the diagnostics / the limit.

The server process stays responsive (it only waits on a pipe while the worker
works) and never allocates what the program asks for before the program is known to
fit. The parent then builds the pipeline from the same files, with the same
include restrictions and output bounds.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import sysconfig
import threading
from dataclasses import asdict
from pathlib import Path

from softswitch.diagnostics import P4Error, SourceLoc
from softswitch.frontend.limits import LimitExceeded, Limits, applied, describe

PACKAGE_DIR = Path(__file__).resolve().parent.parent      # softswitch/
_MAX_ANSWER = 1 << 20
_GRACE_SECONDS = 10.0          # worker start-up (imports) on top of the compile's time


def check(main: str, defines: dict[str, str], limits: Limits) -> None:
    """Compile ``main`` in a worker under ``limits``; raise what the compile raised
    (P4Error with its diagnostics, LimitExceeded) or nothing when it compiles."""
    job = {"main": main, "defines": defines, "limits": asdict(limits)}
    deadline = None if limits.max_seconds is None else limits.max_seconds + _GRACE_SECONDS
    where = SourceLoc(main, 0, 0)
    env = {k: v for k, v in os.environ.items()
           if k in ("PATH", "LANG", "LC_ALL", "HOME", "PYTHONPATH")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # -P: the scratch directory (the worker's cwd, holding the config's files) is not
    # put on sys.path, so no file of the config can shadow a Python module.
    proc = subprocess.Popen([sys.executable, "-P", "-m", "softswitch.p4runtime.isolate"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=os.path.dirname(main) or ".", env=env)
    with _running_lock:
        _running.add(proc)
    try:
        stdout, stderr = proc.communicate(json.dumps(job).encode(), timeout=deadline)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise LimitExceeded("max_seconds", "the compile took longer than "
                            f"{describe('max_seconds', limits.max_seconds or 0)}",
                            where) from None
    finally:
        with _running_lock:
            _running.discard(proc)
    if _cancelled.is_set():
        raise Cancelled("the switch is shutting down: the compile was stopped")
    answer = _answer(stdout[:_MAX_ANSWER])
    if answer is None:
        raise _died(proc.returncode, stderr[-2000:].decode("utf-8", "replace"), limits, where)
    if answer.get("ok"):
        return
    message = str(answer.get("message", "compile failed"))
    if answer.get("kind") == "limit":
        raise LimitExceeded(str(answer.get("limit")), message, where)
    if answer.get("kind") == "program":
        raise P4Error(message, where) if not answer.get("diagnostics") else \
            _P4Text(str(answer["diagnostics"]), message)
    raise RuntimeError(f"compile worker: {message}")


class Cancelled(Exception):
    """The compile was stopped by :func:`cancel_all`."""


_running: set[subprocess.Popen[bytes]] = set()
_running_lock = threading.Lock()
_cancelled = threading.Event()


def cancel_all() -> None:
    """Kill every running compile worker (the server is stopping: a compile must not
    hold its shutdown up for minutes)."""
    _cancelled.set()
    with _running_lock:
        for proc in _running:
            proc.kill()


class _P4Text(P4Error):
    """A P4Error whose diagnostics come back from the worker as text."""

    def __init__(self, text: str, message: str) -> None:
        super().__init__(message)
        self._text = text

    def __str__(self) -> str:
        return self._text


def _answer(raw: bytes) -> dict | None:
    for line in reversed(raw.decode("utf-8", "replace").splitlines()):
        if line.startswith("{"):
            try:
                value = json.loads(line)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def _died(returncode: int, stderr: str, limits: Limits, where: SourceLoc) -> P4Error:
    """What a worker that ended without an answer ran into."""
    if returncode in (-9, -24) or "MemoryError" in stderr or "out of memory" in stderr:
        if returncode == -24:          # SIGXCPU
            return LimitExceeded("max_seconds", "the compile used more CPU time than "
                                 f"{describe('max_seconds', limits.max_seconds or 0)}", where)
        return LimitExceeded("max_memory_bytes", "the compile needs more memory than "
                             f"{describe('max_memory_bytes', limits.max_memory_bytes or 0)}",
                             where)
    detail = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {returncode}"
    return P4Error(f"internal error: the compile worker failed ({detail})", where)


# ---------------------------------------------------------------------- the worker
def _sandbox(scratch: str) -> bool:
    from softswitch.p4runtime import landlock

    python_dirs = {p for p in sys.path if p and os.path.isabs(p) and os.path.exists(p)
                   and os.path.realpath(p) != os.path.realpath(scratch)}
    python_dirs.update(p for p in sysconfig.get_paths().values() if os.path.isdir(p))
    read = [scratch, str(PACKAGE_DIR), *sorted(python_dirs), "/etc/ld.so.cache"]
    execute = ["/usr", "/lib", "/lib64", "/bin", sys.base_prefix, sys.prefix]
    return landlock.restrict(read=read, execute=execute, write_files=["/dev/null"])


def _compile(job: dict) -> dict:
    from softswitch import p4info
    from softswitch.architecture import load_target
    from softswitch.frontend.compiler import compile_program
    from softswitch.frontend.limits import process_limits

    limits = Limits(**{k: (tuple(v) if k == "include_roots" and v is not None else v)
                       for k, v in job["limits"].items()})
    if limits.max_seconds is not None:
        cpu = int(limits.max_seconds) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    sandboxed = _sandbox(os.path.dirname(job["main"]))
    try:
        with process_limits(limits), applied(limits):
            checked = compile_program(job["main"], (), job["defines"])
            p4info.generate(checked)
            load_target(checked)   # the target of main's architecture (v1model, PNA)
    except LimitExceeded as exc:
        return {"ok": False, "kind": "limit", "limit": exc.limit, "message": exc.detail}
    except P4Error as exc:
        return {"ok": False, "kind": "program", "message": exc.message,
                "diagnostics": str(exc)}
    except RecursionError:
        return {"ok": False, "kind": "program", "message": "the program nests too deeply"}
    return {"ok": True, "sandboxed": sandboxed}


def main() -> int:
    try:
        job = json.loads(sys.stdin.read(_MAX_ANSWER))
        answer = _compile(job)
    except MemoryError:
        answer = {"ok": False, "kind": "limit", "limit": "max_memory_bytes",
                  "message": "the compile needs more memory than allowed"}
    except Exception as exc:  # noqa: BLE001 - reported to the parent, never a traceback
        answer = {"ok": False, "kind": "internal", "message": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
