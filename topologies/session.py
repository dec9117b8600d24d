"""A topology held up between commands: ``up``, ``exec``, ``down``.

``python -m topologies up FILE.yaml`` starts a detached *holder* process (``python -m
topologies _hold …``, its own session, output in ``RUN_DIR/holder.log``) that brings
the topology up with :class:`~topologies.runner.Runner` and keeps it: Mininet's host
shells live as long as the Python process that made them, so someone must hold them.
Once the topology answers, the holder writes ``out/topologies/NAME/up.json`` (its pid,
the run directory and each host's network namespace) and waits; ``up`` prints that
and returns. ``exec NAME HOST -- CMD`` runs CMD in the host's namespace (``ip netns
exec`` on the netns backend, ``nsenter --net`` into the Mininet host shell's
namespace). ``down NAME`` sends the holder SIGTERM, which tears everything down
through the runner's ``finally``, and waits for it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from topologies.runner import NETNS_PREFIX, MininetNetwork, Runner
from topologies.schema import PROJECT_ROOT

STATE_NAME = "up.json"


class SessionError(Exception):
    """up/exec/down could not do what was asked (message says why)."""


def state_path(name: str) -> Path:
    """Where a held topology's state lives: by name, whatever its run directory."""
    return PROJECT_ROOT / "out" / "topologies" / name / STATE_NAME


def host_namespaces(runner: Runner) -> dict[str, dict[str, Any]]:
    """Each host's network namespace as a command can enter it."""
    out: dict[str, dict[str, Any]] = {}
    for host in runner.topo.hosts:
        if isinstance(runner.net, MininetNetwork):
            pid = runner.net.net.get(host.name).pid
            out[host.name] = {"pid": pid, "netns": f"/proc/{pid}/ns/net",
                              "enter": ["nsenter", f"--net=/proc/{pid}/ns/net", "--"]}
        else:
            ns = f"{NETNS_PREFIX}{host.name}"
            out[host.name] = {"netns": ns, "enter": ["ip", "netns", "exec", ns]}
    return out


def hold(runner: Runner, topo_file: Path) -> int:
    """The holder's life: up, write the state, wait for SIGTERM, down (finally)."""
    path = state_path(runner.topo.name)
    stop = {"now": False}

    def on_signal(signum: int, frame: object) -> None:
        stop["now"] = True

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, on_signal)
    written = False
    try:
        runner.up()
        state = {"name": runner.topo.name, "file": str(topo_file), "pid": os.getpid(),
                 "switch": runner.kind, "backend": runner.backend,
                 "run_dir": str(runner.run_dir), "hosts": host_namespaces(runner)}
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
        tmp.replace(path)
        written = True
        print("ready", flush=True)
        while not stop["now"]:
            time.sleep(0.2)
        return 0
    finally:
        if written:                      # never another holder's file
            path.unlink(missing_ok=True)
        runner.down()
        print("down", flush=True)


def read_state(name: str) -> dict[str, Any]:
    path = state_path(name)
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SessionError(f"{name}: not up (no {path}); start it with python -m "
                           "topologies up FILE.yaml") from None
    except (OSError, ValueError) as exc:
        raise SessionError(f"{path}: unreadable: {exc}") from None
    if not _alive(int(state.get("pid", 0))):
        path.unlink(missing_ok=True)
        raise SessionError(f"{name}: its holder (pid {state.get('pid')}) is gone; run "
                           f"python -m topologies {state.get('file')} --clean")
    return state


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"_hold" in cmdline


def up(holder_argv: list[str], name: str, run_dir: Path, timeout: float) -> dict[str, Any]:
    """Start the holder and wait until its state file appears (or it fails)."""
    if state_path(name).exists():
        try:
            read_state(name)
        except SessionError:
            pass                         # a stale file (read_state removed it)
        else:
            raise SessionError(f"{name}: already up (python -m topologies down {name})")
    run_dir.mkdir(parents=True, exist_ok=True)
    log = run_dir / "holder.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "topologies", "_hold", *holder_argv],
                                stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True,
                                cwd=PROJECT_ROOT)
    deadline = time.monotonic() + timeout
    while not state_path(name).exists():
        if proc.poll() is not None:
            text = log.read_text(errors="replace").strip()
            raise SessionError(f"{name}: did not come up:\n{text}")
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGTERM)
            raise SessionError(f"{name}: not up after {timeout:g} s (log: {log})")
        time.sleep(0.2)
    return read_state(name)


def exec_in(name: str, host: str, command: list[str]) -> int:
    """Run ``command`` in ``host``'s namespace, attached to this terminal."""
    state = read_state(name)
    hosts = state["hosts"]
    if host not in hosts:
        raise SessionError(f"{name}: no host {host!r} (hosts: {', '.join(hosts)})")
    if not command:
        raise SessionError("exec: no command after --")
    return subprocess.run([*hosts[host]["enter"], *command], check=False).returncode


def down(name: str, timeout: float = 60.0) -> None:
    """SIGTERM to the holder; wait until it has torn the topology down."""
    state = read_state(name)
    pid = int(state["pid"])
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > deadline:
            raise SessionError(f"{name}: holder {pid} still running after {timeout:g} s")
        time.sleep(0.2)
