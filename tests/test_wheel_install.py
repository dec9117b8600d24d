"""tailcc as a user installs it: the wheel built from this tree, installed into a fresh
virtual environment with nothing of the checkout on the path, its commands run from
another directory.

The wheel must carry everything the commands need: P4Runtime's bindings for protobuf's
upb runtime (``p4``), the P4 programs and their includes (``p4src``), the shipped intent
examples and lab scenarios. pip fetches the dependencies, so the test needs PyPI (or the
machine's configured index) and is skipped with that reason when pypi.org is unreachable.
The committed bindings are also checked against what the generator makes.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from softswitch.devtools import p4runtime_stubs
from softswitch.local_port import free_port

ROOT = Path(__file__).resolve().parents[1]
# What setup.py packages, copied so the build never sees the checkout's build/ or out/.
SOURCES = ("setup.py", "pyproject.toml", "p4runtime_bindings", "p4src", "softswitch",
           "controlplane", "taillab", "topologies", "bench", "ptf_tests")
BUDGET_S = 240


def _pypi_reachable() -> bool:
    try:
        with socket.create_connection(("pypi.org", 443), timeout=5):
            return True
    except OSError:
        return False


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 120,
         ) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)}: {proc.returncode}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A venv holding the wheel built from this tree; its environment (PATH: the venv's
    bin and the system's; no PYTHONPATH). Prints the build and install times."""
    if not _pypi_reachable():
        pytest.skip("pypi.org unreachable: pip cannot fetch the wheel's dependencies")
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy2(path, src / name)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    start = time.monotonic()
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(base / "dist"),
          str(src)], base, env, timeout=BUDGET_S)
    built = time.monotonic()
    wheel = next((base / "dist").glob("tailcc-*.whl"))
    venv = base / "venv"
    _run(["/usr/bin/python3", "-m", "venv", str(venv)], base, env)
    _run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], base, env,
         timeout=BUDGET_S)
    done = time.monotonic()
    print(f"\nwheel built in {built - start:.1f} s, installed in {done - built:.1f} s")
    env["PATH"] = f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    return venv, env


def _site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


@pytest.mark.timeout(BUDGET_S + 120)
def test_installed_commands_run_outside_the_checkout(installed, tmp_path):
    venv, env = installed
    site = _site_packages(venv)
    work = tmp_path / "elsewhere"
    work.mkdir()

    out = _run(["softswitch", "--version"], work, env).stdout
    assert f"P4 programs: {site / 'p4src'}" in out, out
    assert str(site / "p4src" / "tailcc.p4") in _run(["tailcc", "--version"], work, env).stdout
    probe = ("import p4.v1.p4runtime_pb2 as m, softswitch; "
             "from google.protobuf.internal import api_implementation as a; "
             "print(m.__file__, softswitch.__file__, a.Type())")
    where = _run([str(venv / "bin" / "python"), "-c", probe], work, env).stdout.split()
    assert where[0].startswith(str(site)) and where[1].startswith(str(site)), where
    assert where[2] == "upb", where

    program = site / "p4src" / "tailcc.p4"
    _run(["softswitch", "compile", str(program), "-o", "tailcc.json",
          "--p4runtime-files", "tailcc.p4info.txtpb"], work, env)
    assert (work / "tailcc.json").stat().st_size > 0
    assert "tables {" in (work / "tailcc.p4info.txtpb").read_text()

    _apply_the_shipped_intent(site, program, work, env)

    _run(["tailcc", "lab", "pd_cascade", "--duration-us", "100", "--seeds", "1",
          "--schemes", "baseline,tailcc", "--jobs", "1", "--out", "lab"], work, env,
         timeout=120)
    assert (work / "lab" / "summary.json").is_file()


def _apply_the_shipped_intent(site: Path, program: Path, work: Path,
                              env: dict[str, str]) -> None:
    """``softswitch run`` of the shipped tailcc.p4 (no ports), then ``tailcc apply`` of
    the shipped two_leaf.yaml's leaf1 over P4Runtime; a second apply writes nothing."""
    addr = f"127.0.0.1:{free_port()}"
    shipped = (site / "controlplane" / "examples" / "two_leaf.yaml").read_text()
    assert "127.0.0.1:9559" in shipped
    (work / "intent.yaml").write_text(shipped.replace("127.0.0.1:9559", addr))
    switch = subprocess.Popen(["softswitch", "run", str(program), "--device-id", "1", "--",
                               "--grpc-server-addr", addr], cwd=work, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        ready = ("import grpc, sys; grpc.channel_ready_future("
                 f"grpc.insecure_channel('{addr}')).result(timeout=60)")
        _run(["python", "-c", ready], work, env, timeout=90)
        first = _run(["tailcc", "apply", "intent.yaml", "--switch", "leaf1", "-q"], work,
                     env).stdout
        assert "leaf1: wrote" in first and "insert" in first, first
        again = _run(["tailcc", "apply", "intent.yaml", "--switch", "leaf1", "-q"], work,
                     env).stdout
        assert "wrote" not in again, again
    finally:
        switch.terminate()
        switch.wait(timeout=30)


@pytest.mark.timeout(300)
def test_ptf_suite_passes_against_the_installed_softswitch(installed, tmp_path):
    """The installed PTF suites (``python -m ptf_tests.run``: a network namespace with
    veth pairs, ``softswitch run``, PTF) pass against the installed softswitch."""
    if os.geteuid() != 0:
        pytest.skip("the PTF suite needs root (network namespace, veth pairs)")
    venv, env = installed
    env = {**env, "PATH": env["PATH"] + ":/usr/sbin:/sbin"}
    missing = [t for t in ("ip", "ethtool") if shutil.which(t, path=env["PATH"]) is None]
    if missing:
        pytest.skip(f"the PTF suite needs {', '.join(missing)} (apt-get install iproute2 "
                    f"ethtool)")
    proc = _run([str(venv / "bin" / "python"), "-m", "ptf_tests.run", "--keep",
                 str(tmp_path / "ptf")], tmp_path, env, timeout=280)
    found = re.search(r"ptf: (\d+) passed, 0 failed", proc.stdout + proc.stderr)
    assert found and int(found.group(1)) > 0, proc.stdout[-2000:]


@pytest.mark.timeout(120)
def test_p4runtime_shell_installs_without_its_pins(installed, tmp_path):
    """The documented route: ``pip install --no-deps p4runtime-shell==0.0.4``; its client
    module imports on the wheel's bindings and protobuf."""
    venv, env = installed
    _run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "p4runtime-shell==0.0.4"],
         tmp_path, env, timeout=100)
    probe = "import p4runtime_sh.p4runtime as s, p4.v1.p4runtime_pb2 as m; print(m.__file__)"
    out = _run([str(venv / "bin" / "python"), "-c", probe], tmp_path, env).stdout
    assert out.startswith(str(_site_packages(venv) / "p4")), out


def test_committed_bindings_are_what_the_generator_makes(tmp_path):
    """p4runtime_bindings/p4 (what the wheel ships) is byte for byte the generator's
    output from the pinned p4runtime 1.4.1 wheel."""
    try:
        wheel = p4runtime_stubs.input_wheel()
    except (p4runtime_stubs.StubError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"p4runtime 1.4.1 wheel not available: {exc}")
    made = p4runtime_stubs.write_tree(wheel, tmp_path)
    committed = ROOT / "p4runtime_bindings"
    names = {p.relative_to(tmp_path).as_posix() for p in made}
    assert names == {p.relative_to(committed).as_posix()
                     for p in (committed / "p4").rglob("*.py")}
    for path in made:
        rel = path.relative_to(tmp_path)
        assert (committed / rel).read_bytes() == path.read_bytes(), rel
