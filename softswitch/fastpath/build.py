"""Compiling generated C into a CPython extension module, with a cache.

The shared object is named after a hash of everything that decides its contents (the
generated source, the compiler command and version, the Python ABI), so an unchanged
program loads without compiling, and a changed one can never pick up a stale build. The
cache lives in ``$SOFTSWITCH_CACHE`` or ``~/.cache/softswitch/fastpath``; builds are
written to a temporary name and renamed into place, so concurrent builds (parallel
tests, several switches) never see half a file. With ``SOFTSWITCH_DEBUG=1`` the
generated C source is kept beside the module it built (``ssfp_<key>.c``).

The hand-written C helpers (batched port I/O, the P4Runtime entry decoder) are built
through the same cache (:func:`load_helper`) and follow ``SOFTSWITCH_FASTPATH`` as the
pipeline does: not built with ``off``, a warning and the Python way where they cannot be
built with ``auto``, an error with ``require``.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from functools import cache
from pathlib import Path
from types import ModuleType

CFLAGS = ["-O2", "-shared", "-fPIC", "-fwrapv", "-fno-strict-aliasing", "-w",
          "-fvisibility=hidden"]
_loaded: dict[str, ModuleType] = {}
_lock = threading.Lock()


class BuildError(Exception):
    """The C compiler is missing or rejected the generated source."""


class ToolMissing(BuildError):
    """This host cannot build C at all (no compiler, no Python headers): true of every
    program, so said once."""


def cache_dir() -> Path:
    env = os.environ.get("SOFTSWITCH_CACHE")
    if env:
        return Path(env) / "fastpath"
    try:
        return Path.home() / ".cache" / "softswitch" / "fastpath"
    except RuntimeError:   # no home directory
        return Path(tempfile.gettempdir()) / f"softswitch-{os.getuid()}" / "fastpath"


@cache
def compiler() -> tuple[str, str]:
    """(path, version line) of the C compiler; BuildError when there is none."""
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if not cc:
        raise ToolMissing("no C compiler found (install Debian's gcc)")
    try:
        out = subprocess.run([cc, "--version"], capture_output=True, text=True, timeout=30)
    except OSError as e:
        raise ToolMissing(f"cannot run the C compiler {cc}: {e}") from None
    return cc, (out.stdout.splitlines() or ["?"])[0]


@cache
def python_include() -> str:
    inc = sysconfig.get_paths()["include"]
    if not (Path(inc) / "Python.h").exists():
        raise ToolMissing(f"Python.h not found in {inc} (install Debian's python3-dev)")
    return inc


def module_key(source: str) -> str:
    cc, version = compiler()
    h = hashlib.sha256()
    for part in (source, version, " ".join(CFLAGS), sys.version, sysconfig.get_config_var(
            "EXT_SUFFIX") or ""):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def load(source: str) -> tuple[ModuleType, str, bool]:
    """The extension module for generated source: (module, key, built now?)."""
    key = module_key(source)
    with _lock:
        mod = _loaded.get(key)
        if mod is not None:
            return mod, key, False
        name = f"ssfp_{key}"
        path = cache_dir() / f"{name}{sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
        built = False
        try:
            if not path.exists():
                _compile(source, name, path)
                built = True
            mod = _import(name, path)
        except OSError as e:
            raise BuildError(f"cannot build or load {path}: {e}") from None
        except ImportError as e:
            raise BuildError(f"cannot load {path}: {e}") from None
        _loaded[key] = mod
        return mod, key, built


def load_helper(source: Path, log: logging.Logger, name: str,
                fallback: str) -> ModuleType | None:
    """A hand-written C helper module (``name``, e.g. "batched port I/O") built through
    the same cache, by the fast-path mode (``SOFTSWITCH_FASTPATH``): None with ``off``;
    with ``auto``, None where it cannot be built here, logged as a warning with what
    runs instead (``fallback``); with ``require``, a ``P4Error`` saying why not."""
    from softswitch.fastpath import mode

    wanted = mode()
    if wanted == "off":
        return None
    try:
        mod, _key, _built = load(source.read_text())
    except (BuildError, OSError) as exc:
        if wanted == "require":
            from softswitch.diagnostics import P4Error
            raise P4Error(f"{name} cannot be built (SOFTSWITCH_FASTPATH=require): "
                          f"{exc}") from None
        log.warning("%s unavailable, %s: %s", name, fallback, exc)
        return None
    return mod


def _compile(source: str, name: str, path: Path) -> None:
    cc, _ = compiler()
    path.parent.mkdir(parents=True, exist_ok=True)
    full = (f"#define P4_MODNAME_STR \"{name}\"\n#define P4_PYINIT PyInit_{name}\n"
            + source)
    with tempfile.TemporaryDirectory(prefix="ssfp-", dir=path.parent) as tmp:
        src = Path(tmp) / f"{name}.c"
        src.write_text(full)
        out = Path(tmp) / path.name
        cmd = [cc, *CFLAGS, "-I", python_include(), "-o", str(out), str(src)]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise BuildError(f"C compiler failed to run: {e}") from None
        if res.returncode != 0:
            keep = path.parent / f"{name}.failed.c"
            keep.write_text(full)
            err = "\n".join(res.stderr.splitlines()[:20])
            raise BuildError(f"C compiler rejected the generated source ({keep}):\n{err}")
        os.replace(out, path)
        if os.environ.get("SOFTSWITCH_DEBUG"):
            (path.parent / f"{name}.c").write_text(full)


def _import(name: str, path: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    if spec is None:
        raise BuildError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod
