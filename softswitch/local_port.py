"""Local TCP ports: free ones to give a server (:func:`free_ports`), whether a
server listens on one yet (:func:`listening`), and waiting until one does while its
process runs (:func:`await_listening`).

What starters of switch processes poll for: BMv2 and softswitch open their gRPC and
Thrift/CLI ports only once the program is loaded. Polling by connecting has a trap: the
polling socket's ephemeral source port can be the very port polled, and the kernel then
connects the socket to itself (TCP simultaneous open). The port looks open, and while
that socket lives the server's own bind fails with "Address already in use" (the
switch then runs without its gRPC server or its CLI channel). So :func:`listening`
reads the kernel's socket tables (``/proc/net/tcp``, ``tcp6``) instead: nothing is
created, nothing can collide. Where those tables cannot be read it connects, and does
not count a connection that met itself.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Literal, Protocol

TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
LISTEN = "0A"                     # the kernel's TCP_LISTEN, as /proc/net/tcp prints it


def listening(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    """True if a TCP server of this network namespace listens on ``port`` (on ``host``
    or on every address)."""
    found = _listening_in_tables(port)
    if found is not None:
        return found
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        return s.connect_ex((host, port)) == 0 and not met_itself(s)


class _Process(Protocol):
    def poll(self) -> int | None: ...


def await_listening(port: int, seconds: float, proc: _Process | None = None,
                    interval: float = 0.1) -> Literal["exited", "timeout"] | None:
    """Wait until something listens on ``port``: None then; "exited" if ``proc`` (a
    ``subprocess.Popen``, the server being waited for) ended first; "timeout" after
    ``seconds``. Every switch starter and test helper waits so; each words its own
    error (with the process's return code or log)."""
    deadline = time.monotonic() + seconds
    while True:
        if proc is not None and proc.poll() is not None:
            return "exited"
        if listening(port):
            return None
        if time.monotonic() >= deadline:
            return "timeout"
        time.sleep(interval)


def _listening_in_tables(port: int) -> bool | None:
    """Whether a LISTEN socket on ``port`` is in the kernel's tables; None when no table
    can be read."""
    read_any = False
    for table in TABLES:
        try:
            with open(table, encoding="ascii") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        read_any = True
        for line in lines:
            fields = line.split()       # sl, local_address (HEXIP:HEXPORT), rem, st, ...
            if len(fields) > 3 and fields[3] == LISTEN \
                    and int(fields[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False if read_any else None


def free_ports(count: int) -> list[int]:
    """``count`` TCP ports on 127.0.0.1 that nothing uses now, none handed out before
    by this process. Chosen one at a time and let go, ports can repeat: the kernel can
    give one switch's Thrift port to the next switch's gRPC server, which then runs
    without it. So every socket is held until all are chosen, and a port this process
    already handed out is never handed out again."""
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        with _LOCK:
            while len(ports) < count:
                if len(held) >= count + 1000:
                    raise OSError(f"no {count} fresh local TCP ports left")
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                held.append(s)
                s.bind(("127.0.0.1", 0))
                port = int(s.getsockname()[1])
                if port not in _HANDED_OUT:
                    ports.append(port)
            _HANDED_OUT.update(ports)
    finally:
        for s in held:
            s.close()
    return ports


def free_port() -> int:
    """One port as :func:`free_ports` chooses them."""
    return free_ports(1)[0]


_LOCK = threading.Lock()
_HANDED_OUT: set[int] = set()


def met_itself(sock: socket.socket) -> bool:
    """Whether a connected TCP socket is connected to itself (simultaneous open)."""
    return bool(sock.getsockname() == sock.getpeername())
