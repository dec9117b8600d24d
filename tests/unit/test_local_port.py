"""softswitch.local_port: a port counts as open only when a server listens on it, and
finding out creates no socket that could take the port from the server."""

from __future__ import annotations

import socket

from softswitch import local_port


def test_a_listening_port_is_seen_and_a_closed_one_is_not():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert local_port.listening(port)
        assert local_port._listening_in_tables(port) is True
    assert not local_port.listening(port)


def test_a_socket_connected_to_itself_is_not_a_server():
    """Connecting a socket bound to port P to 127.0.0.1:P succeeds with nobody
    listening (TCP simultaneous open): what polling by connecting runs into when the
    kernel picks P as the source. The tables show no listener; the connect fallback
    does not count it either."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        assert s.connect_ex(s.getsockname()) == 0
        assert local_port.met_itself(s)
        assert not local_port.listening(s.getsockname()[1])
    with socket.socket() as server, socket.socket() as client:
        server.bind(("127.0.0.1", 0))
        server.listen()
        client.connect(server.getsockname())
        assert not local_port.met_itself(client)


def test_without_the_kernel_tables_it_connects(monkeypatch):
    monkeypatch.setattr(local_port, "TABLES", ("/nonexistent/tcp",))
    assert local_port._listening_in_tables(1) is None
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert local_port.listening(port)
    assert not local_port.listening(port)


def test_free_ports_are_distinct_within_a_call_and_across_calls():
    """Ports picked one at a time and let go can repeat (make test once gave one BMv2's
    Thrift port to the next one's gRPC server): never within one call, nor a port this
    process handed out before."""
    ports = local_port.free_ports(200)
    later = [local_port.free_port() for _ in range(200)]
    assert len(set(ports)) == 200 and len(set(later)) == 200
    assert not set(ports) & set(later)
    for port in ports[:5]:                 # free now: a server can take each
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_await_listening_says_up_exited_or_timeout():
    """The three answers every switch starter words its error from: a server that
    listens (at once, or once it binds), a process that ended first, and none."""
    import subprocess
    import sys
    import threading
    import time

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        port = server.getsockname()[1]
        threading.Timer(0.3, server.listen).start()
        started = time.monotonic()
        assert local_port.await_listening(port, 5.0, interval=0.05) is None
        assert 0.25 < time.monotonic() - started < 4
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert local_port.await_listening(port, 5.0, dead) == "exited"
    started = time.monotonic()
    assert local_port.await_listening(port, 0.3, interval=0.05) == "timeout"
    assert time.monotonic() - started < 3
