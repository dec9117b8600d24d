"""Where the reference p4lang tools are: real p4c and BMv2, the targets softswitch stands in for.

Users run tailcc with p4c's ``p4c-bm2-ss`` and BMv2's ``simple_switch_grpc``; softswitch
is the drop-in that needs no install. Every suite that can run on both (PTF, STF,
Mininet, benchmarks) asks this module whether the real tools are here.

"Installed" means: ``simple_switch_grpc`` and ``p4c-bm2-ss`` are on ``PATH``, or in
``$P4LANG_PREFIX/bin`` (default ``/opt/p4lang``). :func:`ensure` also installs them when
the prebuilt bundle's installer (``../shared/p4lang/install.sh`` beside the checkout,
or ``$P4LANG_INSTALLER``) is present, so a machine that has the bundle always runs the
cross-target legs. :func:`missing_reason` tells a user how to get them.

BMv2's ``simple_switch_CLI`` and p4c's STF driver are Python scripts that import
Debian's ``python3-thrift``; :attr:`ReferenceTools.python` is an interpreter that can
import it (this environment's, which is made with ``--system-site-packages``, or
Debian's ``/usr/bin/python3``), so they run whatever ``python3`` is first on ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]           # the checkout
DEFAULT_PREFIX = Path("/opt/p4lang")
REQUIRED = ("p4c-bm2-ss", "simple_switch_grpc", "simple_switch_CLI")
HOW_TO_GET = ("the reference p4c/BMv2 tools are not installed: run "
              "'bash ../shared/p4lang/install.sh' (or put p4c-bm2-ss and "
              "simple_switch_grpc on PATH)")


@dataclass(frozen=True)
class ReferenceTools:
    """Paths of the real p4c/BMv2 executables and an interpreter for their scripts."""

    bin_dir: Path
    python: str

    def exe(self, name: str) -> str:
        return str(self.bin_dir / name)

    @property
    def p4c(self) -> str:
        return self.exe("p4c-bm2-ss")

    @property
    def p4test(self) -> str:
        return self.exe("p4test")

    @property
    def simple_switch_grpc(self) -> str:
        return self.exe("simple_switch_grpc")

    def cli_command(self, thrift_port: int) -> list[str]:
        """``simple_switch_CLI --thrift-port P`` run by an interpreter with thrift."""
        return [self.python, self.exe("simple_switch_CLI"), "--thrift-port", str(thrift_port)]

    def env(self) -> dict[str, str]:
        """The environment for p4lang's own scripts (``bmv2-stf`` finds its python in
        ``$PYTHON``, the driver finds the switch on ``PATH``)."""
        env = dict(os.environ)
        env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}"
        env["PYTHON"] = self.python
        return env


def _prefix_bin() -> Path:
    return Path(os.environ.get("P4LANG_PREFIX", str(DEFAULT_PREFIX))) / "bin"


def _bin_dir() -> Path | None:
    found = shutil.which("simple_switch_grpc")
    candidates = [Path(found).parent] if found else []
    candidates.append(_prefix_bin())
    for directory in candidates:
        if all((directory / tool).exists() for tool in REQUIRED):
            return directory
    return None


def installer() -> Path | None:
    """The prebuilt bundle's installer, when it sits beside this checkout."""
    explicit = os.environ.get("P4LANG_INSTALLER")
    path = Path(explicit) if explicit else ROOT.parent / "shared" / "p4lang" / "install.sh"
    return path if path.is_file() else None


def _thrift_python() -> str:
    """An interpreter that imports ``thrift`` (BMv2's CLI needs it)."""
    for candidate in (sys.executable, "/usr/bin/python3"):
        try:
            ok = subprocess.run([candidate, "-c", "import thrift"], capture_output=True,
                                timeout=30).returncode == 0
        except OSError:
            continue
        if ok:
            return candidate
    return sys.executable


@cache
def find() -> ReferenceTools | None:
    """The installed tools, or ``None``; never installs anything."""
    directory = _bin_dir()
    if directory is None:
        return None
    return ReferenceTools(directory, _thrift_python())


def ensure() -> ReferenceTools | None:
    """The tools, installing them first from the bundle when it is here (root only)."""
    tools = find()
    if tools is not None:
        return tools
    script = installer()
    if script is None or os.geteuid() != 0:
        return None
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{script} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    find.cache_clear()
    return find()


def missing_reason() -> str:
    """Why the tools are not available, and how to get them."""
    script = installer()
    if script is not None and os.geteuid() != 0:
        return f"{HOW_TO_GET}; installing needs root ({script})"
    return HOW_TO_GET


def required() -> bool:
    """Under CI (``CI=true``) a missing reference tool is a failure, not a skip."""
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")
