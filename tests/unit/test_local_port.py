"""softswitch.local_port: a port counts as open only when a server accepts on it."""

from __future__ import annotations

import socket

from softswitch import local_port


def test_a_listening_port_accepts_and_a_closed_one_does_not():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert local_port.accepting(port)
    assert not local_port.accepting(port)


def test_a_connection_that_met_itself_is_not_a_server():
    """Connecting a socket bound to port P to 127.0.0.1:P succeeds with nobody
    listening (TCP simultaneous open): what polling a port can run into when the
    kernel picks P as the source."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        assert s.connect_ex(s.getsockname()) == 0
        assert local_port.met_itself(s)
    with socket.socket() as server, socket.socket() as client:
        server.bind(("127.0.0.1", 0))
        server.listen()
        client.connect(server.getsockname())
        assert not local_port.met_itself(client)
