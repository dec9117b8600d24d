"""Shared fixtures.

``reference_tools``: real p4c and BMv2 (see ``softswitch/devtools/reference_tools.py``), installed
from ``../shared/p4lang`` when the bundle is there. Without them a test skips and says
how to get them; under CI (``CI=true``) it fails instead, so CI always covers both
targets.

``frontend_program``: each program of ``tests/p4/frontend`` (one per front-end rule; see
its README), with the errors it must be rejected with.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from softswitch.devtools import reference_tools as rt


@pytest.fixture(scope="session")
def reference_tools() -> rt.ReferenceTools:
    tools = rt.ensure()
    if tools is None:
        if rt.required():
            pytest.fail(f"CI=true: {rt.missing_reason()}")
        pytest.skip(rt.missing_reason())
    return tools


@pytest.fixture()
def softswitch_server() -> Iterator[str]:
    """The address of a softswitch P4Runtime server (device 1, CPU port 255, no pipeline)."""
    from softswitch.daemon.device import Device
    from softswitch.daemon.rpc.server import serve

    srv, port = serve(Device(device_id=1, cpu_port=255), "127.0.0.1:0")
    yield f"127.0.0.1:{port}"
    srv.stop(0).wait()


# --- the end of the run ---------------------------------------------------------------------

_EXIT_STATUS: list[int] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _EXIT_STATUS.append(int(exitstatus))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """End the process once pytest is done, whatever threads a test left running.

    A test whose set-up failed half-way can leave an in-process gRPC server with an open
    stream: its worker is not a daemon thread, and the interpreter's exit waits for it
    for ever (seen once: `make test` had printed its summary and never returned). The
    threads still running are named here, so the leak shows, and the exit status is
    pytest's."""
    if not _EXIT_STATUS:
        return
    stuck = [t.name for t in threading.enumerate()
             if t is not threading.main_thread() and not t.daemon and t.is_alive()]
    if stuck:
        print(f"conftest: {len(stuck)} non-daemon thread(s) still running at the end: "
              f"{', '.join(sorted(set(stuck))[:20])}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(_EXIT_STATUS[0])


# --- the front-end rule programs (tests/p4/frontend) ---------------------------------------

FRONTEND_DIR = Path(__file__).resolve().parent / "p4" / "frontend"
_ERROR_MARK = re.compile(r"//\s*error:\s*(?P<msg>.+?)\s*$")


@dataclass(frozen=True)
class FrontendProgram:
    """One rule program: ``errors`` are the (line, message fragment) pairs its
    ``// error: …`` marks name; none means it must compile. ``stf``: its packet test."""

    path: Path
    errors: tuple[tuple[int, str], ...]
    stf: Path | None
    p4test_verdict: bool = True   # False: '// p4test: no verdict' (p4test crashes or loops)
    p4test_differs: bool = False  # '// p4test differs:' a documented disagreement

    @property
    def name(self) -> str:
        return self.path.stem


def frontend_programs() -> list[FrontendProgram]:
    out = []
    for path in sorted(FRONTEND_DIR.glob("*.p4")):
        marks = tuple((n, m.group("msg")) for n, line in enumerate(
            path.read_text().splitlines(), start=1) if (m := _ERROR_MARK.search(line)))
        stf = path.with_suffix(".stf")
        text = path.read_text()
        out.append(FrontendProgram(path, marks, stf if stf.exists() else None,
                                   "// p4test: no verdict" not in text,
                                   "// p4test differs:" in text))
    return out


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test taking ``frontend_program`` runs once per rule program."""
    if "frontend_program" in metafunc.fixturenames:
        programs = frontend_programs()
        metafunc.parametrize("frontend_program", programs, ids=[p.name for p in programs])
