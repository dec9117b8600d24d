"""Linux Landlock: let a process (and its children) read only what it must.

The P4Runtime server compiles pipeline configs from the network in a worker process
(:mod:`softswitch.p4runtime.isolate`); before the worker touches the program it
restricts itself with Landlock (an unprivileged Linux security module, kernel 5.13+)
to: reading the config's scratch directory, softswitch's package (its ``p4include/``),
Python's module directories and the system directories cpp needs to run; writing
nothing but ``/dev/null``; no TCP. ``/dev/zero``, ``/proc``, ``/etc``, home
directories and every other file of the server are then out of reach of cpp's
``#include`` whatever the preprocessor makes of the program text.

:func:`restrict` returns False (and changes nothing) where the kernel lacks Landlock;
the compile is then still bounded by its limits and checked by the preprocessor.
"""

from __future__ import annotations

import ctypes
import os
import platform
from collections.abc import Iterable

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1 << 0
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
_FS_V1 = (1 << 13) - 1            # EXECUTE .. MAKE_SYM
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | _TRUNCATE | _IOCTL_DEV
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64),
                ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> ctypes.CDLL | None:
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def abi_version() -> int:
    """The kernel's Landlock ABI version (0: not available)."""
    libc = _libc()
    if libc is None:
        return 0
    return max(_syscall(libc, _SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION), 0)


def _syscall(libc: ctypes.CDLL, number: int, *args: object) -> int:
    """syscall(2) with every integer argument passed as a full machine word."""
    words = [a if a is None or not isinstance(a, int) else ctypes.c_long(a) for a in args]
    return int(libc.syscall(ctypes.c_long(number), *words))


def restrict(read: Iterable[str], execute: Iterable[str] = (),
             write_files: Iterable[str] = ()) -> bool:
    """Confine this process and its future children: read (and list) only below the
    ``read`` paths, execute only below ``execute``, write only the ``write_files``.
    Paths that do not exist are skipped. Returns whether Landlock is in force."""
    abi = abi_version()
    libc = _libc()
    if abi < 1 or libc is None:
        return False
    handled = _FS_V1 | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0) | (
        _IOCTL_DEV if abi >= 5 else 0)
    attr = _RulesetAttr(handled, (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0,
                        (_SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL) if abi >= 6 else 0)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    ruleset = _syscall(libc, _SYS_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        return False
    try:
        rules: dict[str, int] = {}
        for path in read:
            rules[path] = rules.get(path, 0) | READ_FILE | READ_DIR
        for path in execute:
            rules[path] = rules.get(path, 0) | READ_FILE | READ_DIR | EXECUTE
        for path in write_files:
            rules[path] = rules.get(path, 0) | READ_FILE | WRITE_FILE | (
                _TRUNCATE if abi >= 3 else 0)
        for path, rights in rules.items():
            _add_rule(libc, ruleset, path, rights & handled)
        if libc.prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), ctypes.c_ulong(0),
                      ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
            return False
        if _syscall(libc, _SYS_RESTRICT_SELF, ruleset, 0) != 0:
            return False
        return True
    finally:
        os.close(ruleset)


def _add_rule(libc: ctypes.CDLL, ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        attr = _PathBeneathAttr(rights, fd)
        _syscall(libc, _SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(attr), 0)
    finally:
        os.close(fd)
