"""Which memory allocator ``softswitch run`` runs on, and how it gives memory back.

``softswitch run`` is a long-running server that controllers fill and empty with
hundreds of thousands of table entries. Python's own allocator (pymalloc) keeps its
arenas mapped while a few objects remain in them, so the server re-executes itself on
the C allocator (``PYTHONMALLOC=malloc``, :func:`server_environment`), which can hand
freed heap back: :func:`release_heap` and :func:`settle_heap`, called by the memory
reclaimer (``softswitch.memory.reclaim``) once the server is quiet.

The C allocator is jemalloc where Debian's ``libjemalloc2`` is installed (``make
setup`` installs it), preloaded into the re-executed server, else glibc's:

* jemalloc: its own time-based purging is off (:data:`JEMALLOC_CONF`; the user's
  ``MALLOC_CONF`` still wins), so the reclaimer alone decides when freed pages go back:
  :func:`settle_heap` keeps up to :data:`KEEP_FREED_BYTES` of them for the next batch
  until the server has been quiet for :data:`KEEP_SECONDS`, and purges at once beyond;
* glibc: ``MALLOC_ARENA_MAX=2`` (few arenas, less kept), freed pages go back with
  ``malloc_trim(0)``.

A ``PYTHONMALLOC`` the user sets is honoured: the server then runs on it, unchanged.
Benchmarks compare allocators by naming one (``server_environment(env, allocator)``:
``jemalloc``, ``glibc`` or ``pymalloc``). The choice is logged at start-up
(:func:`describe`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

CHOICES = ("jemalloc", "glibc", "pymalloc")
# jemalloc's options for the server, before any of the user's MALLOC_CONF (which win):
# no time-based purging of unused dirty pages (settle_heap decides), and no "muzzy"
# stage (MADV_FREE pages still count as the process's memory until the kernel takes them).
JEMALLOC_CONF = "dirty_decay_ms:-1,muzzy_decay_ms:0"
# Freed memory up to this much stays mapped for reuse while the server is busy
# (settle_heap), and goes once it has been quiet for KEEP_SECONDS: a big batch after a
# pause then reuses those pages instead of faulting them in again. Beyond it everything
# goes back as soon as it is quiet: what stays is bounded by this, whatever the batches
# were.
KEEP_FREED_BYTES = 32 << 20
# ... and this long without a request hands back what KEEP_FREED_BYTES kept
KEEP_SECONDS = 30.0
# where Debian's libjemalloc2 puts the library, per architecture
_JEMALLOC = ("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
             "/usr/lib/aarch64-linux-gnu/libjemalloc.so.2")
_ALL_ARENAS = 4096              # jemalloc's MALLCTL_ARENAS_ALL


class AllocatorError(ValueError):
    """An allocator asked for by name that this machine does not have (message says why)."""


def jemalloc_path() -> str | None:
    """The jemalloc shared library on this machine, or None."""
    for path in _JEMALLOC:
        if Path(path).exists():
            return path
    found = ctypes.util.find_library("jemalloc")
    return found if found and Path(found).is_absolute() else None


def server_environment(env: Mapping[str, str],
                       allocator: str | None = None) -> dict[str, str] | None:
    """The environment to run the server with on ``allocator`` (None: jemalloc where it
    is installed, else glibc; ``pymalloc``: the interpreter's own), or None when ``env``
    has chosen already (``PYTHONMALLOC`` is set: by the user, or this is the server
    re-executed). AllocatorError for an unknown name, or jemalloc where it is missing."""
    if env.get("PYTHONMALLOC"):
        return None
    choice = (allocator or "").strip().lower()
    if choice not in ("", *CHOICES):
        raise AllocatorError(f"allocator must be one of {', '.join(CHOICES)}, not '{choice}'")
    if choice == "pymalloc":
        return dict(env, PYTHONMALLOC="pymalloc")
    out = dict(env, PYTHONMALLOC="malloc")
    library = jemalloc_path() if choice in ("", "jemalloc") else None
    if choice == "jemalloc" and library is None:
        raise AllocatorError("allocator jemalloc: libjemalloc.so.2 is not installed "
                             "(Debian: apt-get install libjemalloc2)")
    if library is not None:
        preload = env.get("LD_PRELOAD", "")
        out["LD_PRELOAD"] = f"{library} {preload}".strip()
        conf = env.get("MALLOC_CONF", "").strip()
        out["MALLOC_CONF"] = f"{JEMALLOC_CONF},{conf}" if conf else JEMALLOC_CONF
    else:
        out.setdefault("MALLOC_ARENA_MAX", "2")
    return out


def _mallctl() -> Any | None:
    """jemalloc's ``mallctl``, where jemalloc is loaded into this process."""
    try:
        mallctl = ctypes.CDLL(None).mallctl          # present only where it is loaded
    except (OSError, AttributeError):
        return None
    mallctl.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                        ctypes.c_void_p, ctypes.c_size_t]
    return mallctl


def _jemalloc_purge() -> Callable[[], None] | None:
    mallctl = _mallctl()
    if mallctl is None:
        return None
    command = f"arena.{_ALL_ARENAS}.purge".encode()
    return lambda: mallctl(command, None, None, None, 0)


def _jemalloc_dirty_bytes() -> Callable[[], int | None] | None:
    """Bytes of freed pages jemalloc keeps mapped (its "dirty" pages, all arenas), read
    afresh (``epoch``); None where its statistics cannot be read."""
    mallctl = _mallctl()
    if mallctl is None:
        return None
    pages = f"stats.arenas.{_ALL_ARENAS}.pdirty".encode()

    def read_size(name: bytes) -> int | None:
        value, size = ctypes.c_size_t(0), ctypes.c_size_t(ctypes.sizeof(ctypes.c_size_t))
        failed = mallctl(name, ctypes.byref(value), ctypes.byref(size), None, 0)
        return None if failed else value.value

    def dirty_bytes() -> int | None:
        epoch = ctypes.c_uint64(1)
        if mallctl(b"epoch", None, None, ctypes.byref(epoch), ctypes.sizeof(epoch)):
            return None
        count, page = read_size(pages), read_size(b"arenas.page")
        return None if count is None or page is None else count * page

    return dirty_bytes


def _jemalloc_settle() -> Callable[[float], None] | None:
    """:data:`settle_heap` on jemalloc: purge everything once more than
    :data:`KEEP_FREED_BYTES` is free, or once the server has been ``quiet`` (seconds
    since its last request) for :data:`KEEP_SECONDS`; else keep the freed pages."""
    purge, dirty_bytes = _jemalloc_purge(), _jemalloc_dirty_bytes()
    if purge is None or dirty_bytes is None:
        return None

    def settle(quiet: float) -> None:
        if quiet >= KEEP_SECONDS:
            purge()
            return
        dirty = dirty_bytes()
        if dirty is None or dirty > KEEP_FREED_BYTES:
            purge()

    return settle


def _glibc_trim() -> Callable[[], None]:
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return lambda: None
    trim.argtypes = [ctypes.c_size_t]
    return lambda: trim(0)


def describe() -> str:
    """The allocator this process runs on, for the start-up log."""
    if os.environ.get("PYTHONMALLOC", "").startswith("malloc"):
        return "jemalloc" if _jemalloc_purge() is not None else "glibc malloc"
    return "pymalloc"


# returns the heap's freed pages to the kernel, with whichever allocator is loaded
release_heap: Callable[[], None] = _jemalloc_purge() or _glibc_trim()
# settle_heap(quiet) returns them too, but on jemalloc keeps up to KEEP_FREED_BYTES of
# them for the next batch until the server has been quiet (no request for ``quiet``
# seconds) for KEEP_SECONDS; glibc's trim has no such middle way and returns them all
settle_heap: Callable[[float], None] = (_jemalloc_settle()
                                        or (lambda quiet: release_heap()))
