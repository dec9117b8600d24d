"""``softswitch run``'s side of ``--p4runtime-process``: the front end's process, its link.

The switch keeps its gRPC server (:func:`~softswitch.daemon.rpc.server.serve`), bound to
a unix socket in a private directory, for what the front end passes through (Reads,
pipeline configs, streams), and serves the Writes' link on its port loop
(:class:`~softswitch.daemon.process.writes.LoopWrites`). The front end
(:mod:`~softswitch.daemon.process.service`) listens on the switch's P4Runtime address. If it
exits while the switch runs, the switch stops (``on_exit``): a switch whose P4Runtime
service is gone must not go on silently.
"""

from __future__ import annotations

import logging
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from softswitch.daemon.ports.dataplane import PortLoop
from softswitch.daemon.process import link
from softswitch.daemon.process.writes import LoopWrites
from softswitch.daemon.rpc import server

log = logging.getLogger("softswitch.p4runtime")
START_TIMEOUT_S = 60.0
# the sockets' private directory, under the temporary directory: PREFIX<pid>-<random>
RUNDIR_PREFIX = "softswitch-p4rt-"


class FrontendProcess:
    """The running front end, the switch's own server and the link."""

    def __init__(self, rundir: str, grpc_server: Any, link: LoopWrites,
                 proc: subprocess.Popen[bytes]) -> None:
        self._rundir = rundir
        self._server = grpc_server
        self.link = link
        self._proc = proc
        self._stopping = False

    @classmethod
    def start(cls, device: Any, address: str, max_bytes: int,
              tls_files: tuple[str, str, str | None, bool] | None) -> FrontendProcess:
        """Start serving P4Runtime on ``address`` through a front end process;
        ``tls_files``: (cert, key, CA or None, client auth) paths, already checked.
        ServerError when something cannot start (nothing is left behind)."""
        _sweep_stale()
        rundir = tempfile.mkdtemp(prefix=f"{RUNDIR_PREFIX}{os.getpid()}-")
        grpc_server: Any = None
        link: LoopWrites | None = None
        try:
            grpc_server, _ = server.serve(device, f"unix:{rundir}/grpc.sock",
                                          max_message_bytes=max_bytes)
            link = LoopWrites(f"{rundir}/link.sock", _link_handlers(device), max_bytes)
            command = [sys.executable, "-m", "softswitch.daemon.process.service",
                       "--listen", address, "--switch-grpc", f"unix:{rundir}/grpc.sock",
                       "--link", link.path, "--max-request-bytes", str(max_bytes),
                       "--parent", str(os.getpid())]
            if tls_files is not None:
                cert, key, ca, client_auth = tls_files
                command += ["--tls-cert", cert, "--tls-key", key]
                command += ["--tls-ca", ca] if ca else []
                command += ["--client-auth"] if client_auth else []
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
            try:
                _wait_ready(proc, address)
            except BaseException:
                _end(proc)
                raise
        except BaseException as exc:
            if link is not None:
                link.close()
            if grpc_server is not None:
                grpc_server.stop(None).wait()
            shutil.rmtree(rundir, ignore_errors=True)
            if isinstance(exc, OSError):
                raise server.ServerError(f"P4Runtime front end: {exc}") from None
            raise
        return cls(rundir, grpc_server, link, proc)

    def attach(self, loop: PortLoop, post: Callable[[Callable[[], None]], None]) -> None:
        """Have the port loop serve the link from its first turn (``post``: the loop's
        ``calls.post``)."""
        post(lambda: self.link.attach(loop))

    def watch(self, on_exit: Callable[[], None]) -> None:
        """Call ``on_exit`` (from a thread of its own) if the front end ends first."""
        def wait() -> None:
            code = self._proc.wait()
            if not self._stopping:
                log.error("the P4Runtime front end exited (status %s): stopping the "
                          "switch", code)
                on_exit()
        threading.Thread(target=wait, name="p4rt-frontend-watch", daemon=True).start()

    def stop(self, grace: float | None) -> threading.Event:
        """End the front end, then the switch's server and the link."""
        self._stopping = True
        _end(self._proc)
        stopped = self._server.stop(grace)
        done = threading.Event()

        def close() -> None:
            stopped.wait()
            self.link.close()
            shutil.rmtree(self._rundir, ignore_errors=True)
            done.set()
        threading.Thread(target=close, name="p4rt-frontend-stop", daemon=True).start()
        return done


def _link_handlers(device: Any) -> dict[int, Any]:
    """The in-process server's handlers of the methods the link carries (a servicer of
    its own: the device holds all the state)."""
    by_name = server._lane_handlers(server.P4RuntimeServicer(device))
    return {method: by_name[name] for method, name in link.METHODS.items()}


def _sweep_stale() -> None:
    """Remove the socket directories of switches that ended without removing them (a
    switch killed while it started), this user's only."""
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        pid, dash, _ = name.removeprefix(RUNDIR_PREFIX).partition("-")
        if not name.startswith(RUNDIR_PREFIX) or not dash or not pid.isdigit():
            continue
        path = os.path.join(root, name)
        try:
            if os.stat(path).st_uid == os.getuid() and not os.path.exists(f"/proc/{pid}"):
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


def _wait_ready(proc: subprocess.Popen[bytes], address: str) -> None:
    """Until the front end says ``ready``; ServerError if it ends or takes too long."""
    assert proc.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
            raise server.ServerError(f"P4Runtime front end: not listening on {address} "
                                     f"after {START_TIMEOUT_S:.0f} s")
        chunk = os.read(proc.stdout.fileno(), 256)
        if not chunk:
            proc.wait(5)
            raise server.ServerError(f"cannot listen on {address} (the P4Runtime front "
                                     f"end exited with status {proc.returncode})")
        line += chunk
    proc.stdout.close()
    if not line.startswith(b"ready "):
        raise server.ServerError(f"P4Runtime front end: unexpected {line!r}")


def _end(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
