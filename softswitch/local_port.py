"""Whether a local TCP server accepts connections yet.

What starters of switch processes poll for: BMv2 and softswitch open their gRPC and
Thrift/CLI ports only once the program is loaded. Polling a port nobody listens on has
a trap: the kernel may pick that very port as the connection's source, and TCP's
simultaneous open then connects the socket to itself, so the port looks open before the
server exists (seen in ``make bench``: the switch was "up", and its CLI channel then
refused the first command). :func:`accepting` does not count such a connection.
"""

from __future__ import annotations

import socket


def accepting(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    """True if a server accepts connections on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        return s.connect_ex((host, port)) == 0 and not met_itself(s)


def met_itself(sock: socket.socket) -> bool:
    """Whether a connected TCP socket is connected to itself (simultaneous open)."""
    return bool(sock.getsockname() == sock.getpeername())
