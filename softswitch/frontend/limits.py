"""Resource limits of a compile: input size, preprocessed size, time and memory.

A program is untrusted input when a controller sends it as a pipeline config, and a
careless one can hurt a workstation too (``#include "/dev/zero"`` grows cpp until the
kernel kills it). Every compile that ``softswitch compile`` or the P4Runtime server
runs is bounded:

* ``max_source_bytes`` — the program (and, for a pipeline config, the files it
  carries);
* ``max_preprocessed_bytes`` — cpp's output, read in bounded chunks (cpp is killed
  at the limit, so macro bombs and huge includes stop there);
* ``max_seconds`` — wall-clock time of the compile (cpp included);
* ``max_memory_bytes`` — address space of the compiling process (``RLIMIT_AS``; cpp
  inherits it), so a ``register<…>(1 << 30)`` or an include of a device file fails
  with a message instead of exhausting the host.

A limit that is hit raises :class:`LimitExceeded` naming it (and the flag that
changes it); ``None`` switches a limit off (``softswitch compile --no-limits``).
``include_roots`` (pipeline configs only) confines ``#include`` to the config's own
files and softswitch's ``p4include/`` (see :mod:`softswitch.frontend.preprocess`).

The limits of the running compile live in a context variable (:func:`applied`), so
the preprocessor and the front end find them without a parameter on every call;
code that sets none (the conformance suite, STF, tests) runs unlimited.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import os
import resource
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from types import FrameType

from softswitch.diagnostics import Diagnostic, P4Error, SourceLoc

MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    """Bounds of one compile (``None``: unbounded)."""

    max_source_bytes: int | None = 8 * MiB
    max_preprocessed_bytes: int | None = 32 * MiB
    max_seconds: float | None = 120.0
    max_memory_bytes: int | None = 1024 * MiB
    # Pipeline configs: the only directories #include may read (plus p4include/).
    include_roots: tuple[str, ...] | None = None

    def restricted_to(self, *roots: str) -> Limits:
        return replace(self, include_roots=tuple(roots))


DEFAULT = Limits()
UNLIMITED = Limits(None, None, None, None)

# The command-line flag that changes each limit (messages name it).
FLAGS = {"max_source_bytes": "--max-source-bytes",
         "max_preprocessed_bytes": "--max-preprocessed-bytes",
         "max_seconds": "--max-compile-seconds",
         "max_memory_bytes": "--max-compile-memory-mb"}


class LimitExceeded(P4Error):
    """A compile hit one of its :class:`Limits` (``limit`` is the field's name)."""

    def __init__(self, limit: str, detail: str, loc: SourceLoc | None = None) -> None:
        flag = FLAGS.get(limit)
        hint = f" (limit {flag}; --no-limits lifts all limits)" if flag else ""
        super().__init__(f"{detail}{hint}", loc)
        self.limit = limit
        self.detail = detail          # the message without the hint


def describe(limit: str, value: float | int) -> str:
    """A limit's value in words (for messages)."""
    if limit == "max_seconds":
        return f"{value:g} s"
    if limit == "max_memory_bytes":
        return f"{value / MiB:g} MiB"
    return f"{int(value)} bytes"


_current: contextvars.ContextVar[Limits] = contextvars.ContextVar("softswitch_limits",
                                                                  default=UNLIMITED)


def current() -> Limits:
    """The limits of the compile running in this context (UNLIMITED if none)."""
    return _current.get()


@contextlib.contextmanager
def applied(limits: Limits) -> Iterator[Limits]:
    """Run a compile under ``limits`` (in this thread/context)."""
    token = _current.set(limits)
    try:
        yield limits
    finally:
        _current.reset(token)


class _Timeout(BaseException):
    """Raised in the main thread when a compile's wall-clock time is up."""


@contextlib.contextmanager
def process_limits(limits: Limits) -> Iterator[None]:
    """Bound *this whole process* for a compile: ``RLIMIT_AS`` (inherited by cpp) and,
    in the main thread, a wall-clock timer. For one-shot processes only (the
    ``softswitch compile`` command, the server's compile worker); a long-running
    server must compile in a worker instead (:mod:`softswitch.p4runtime.isolate`).

    MemoryError and the timer become :class:`LimitExceeded`."""
    old_as = resource.getrlimit(resource.RLIMIT_AS)
    if limits.max_memory_bytes is not None:
        hard = old_as[1]
        soft = limits.max_memory_bytes if hard == resource.RLIM_INFINITY else min(
            limits.max_memory_bytes, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    timer = limits.max_seconds is not None and \
        threading.current_thread() is threading.main_thread()
    previous = None
    if timer:
        def on_alarm(signum: int, frame: FrameType | None) -> None:
            raise _Timeout()
        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, float(limits.max_seconds or 0))
    try:
        yield
    except _Timeout:
        raise LimitExceeded("max_seconds", "the compile took longer than "
                            f"{describe('max_seconds', limits.max_seconds or 0)}") from None
    except MemoryError:
        raise LimitExceeded("max_memory_bytes", "the compile needs more memory than "
                            f"{describe('max_memory_bytes', limits.max_memory_bytes or 0)}"
                            ) from None
    finally:
        if timer:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        resource.setrlimit(resource.RLIMIT_AS, old_as)


# ---------------------------------------------------------------------- command lines
def add_arguments(parser: argparse.ArgumentParser, no_limits: bool = True) -> None:
    """The limit flags shared by ``softswitch compile`` and ``softswitch run``."""
    group = parser.add_argument_group("compile limits")
    if no_limits:
        group.add_argument("--no-limits", action="store_true",
                           help="lift every compile limit below")
    group.add_argument("--max-source-bytes", type=_positive_int, metavar="N",
                       help=f"program size (default {DEFAULT.max_source_bytes})")
    group.add_argument("--max-preprocessed-bytes", type=_positive_int, metavar="N",
                       help=f"preprocessed size (default {DEFAULT.max_preprocessed_bytes})")
    group.add_argument("--max-compile-seconds", type=_positive_float, metavar="S",
                       help=f"compile time (default {DEFAULT.max_seconds:g})")
    group.add_argument("--max-compile-memory-mb", type=_positive_int, metavar="MB",
                       help="address space of the compile (default "
                            f"{(DEFAULT.max_memory_bytes or 0) // MiB})")


def from_arguments(ns: argparse.Namespace) -> Limits:
    """The limits a command line asks for: the defaults (none with --no-limits),
    overridden flag by flag."""
    base = UNLIMITED if getattr(ns, "no_limits", False) else DEFAULT
    if ns.max_source_bytes is not None:
        base = replace(base, max_source_bytes=ns.max_source_bytes)
    if ns.max_preprocessed_bytes is not None:
        base = replace(base, max_preprocessed_bytes=ns.max_preprocessed_bytes)
    if ns.max_compile_seconds is not None:
        base = replace(base, max_seconds=ns.max_compile_seconds)
    if ns.max_compile_memory_mb is not None:
        base = replace(base, max_memory_bytes=ns.max_compile_memory_mb * MiB)
    return base


def _positive_int(text: str) -> int:
    value = int(text, 0)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text}: must be positive")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text}: must be positive")
    return value


# ---------------------------------------------------------------------- redaction
def redact(diagnostics: list[Diagnostic], named: list[str]) -> list[Diagnostic]:
    """Diagnostics located in files the user did not name (outside the program's
    directory, the -I directories and softswitch's p4include/) keep their location
    but lose their message: an ``#include "/etc/shadow"`` must not print its lines."""
    roots = [os.path.realpath(r) for r in named]
    out = []
    for diag in diagnostics:
        loc = diag.loc
        file = loc.file if loc is not None else ""
        if file and not file.startswith("<") and not any(
                os.path.realpath(file) == r or os.path.realpath(file).startswith(r + os.sep)
                for r in roots):
            diag = Diagnostic(loc, diag.severity, "in a file outside the program's directory "
                              "and include paths (message not shown)")
        out.append(diag)
    return out
