"""Work handed to the port loop (softswitch.daemon.ports.loop_calls): runs on the loop's thread,
in order, one call per turn, and nobody is left waiting when the loop ends."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from softswitch.daemon.cli_channel.commands import RuntimeChannel
from softswitch.daemon.ports import batchio
from softswitch.daemon.ports.dataplane import DataPlane
from softswitch.daemon.ports.loop_calls import LoopCalls


class _Loop:
    """A DataPlane with no ports, its loop on a thread of its own."""

    def __init__(self) -> None:
        self.plane = DataPlane({})
        self.thread = threading.Thread(target=self.plane.run_batches,
                                       args=(lambda *_: None,), daemon=True)

    def __enter__(self) -> DataPlane:
        self.thread.start()
        deadline = time.monotonic() + 5
        while self.plane.calls._loop is None:              # noqa: SLF001 - loop is up
            assert time.monotonic() < deadline, "the port loop did not start"
            time.sleep(0.001)
        return self.plane

    def __exit__(self, *exc: object) -> None:
        self.plane.stop()
        self.thread.join(5)
        self.plane.close()


def test_without_a_loop_a_call_runs_on_the_callers_thread():
    calls = LoopCalls()
    assert calls.call(threading.get_ident) == threading.get_ident()
    assert calls.call_each([lambda: 1, lambda: 2]) == [1, 2]


def test_calls_run_on_the_loop_thread_in_order_and_their_errors_come_back():
    with _Loop() as plane:
        order: list[int] = []
        threads = plane.calls.call_each(
            [lambda n=n: (order.append(n), threading.get_ident())[1] for n in range(50)])
        assert order == list(range(50))
        assert set(threads) == {plane._runner}               # noqa: SLF001
        assert threading.get_ident() not in threads

        def fails() -> None:
            raise ValueError("from the loop")
        with pytest.raises(ValueError, match="from the loop"):
            plane.calls.call(fails)
        assert plane.calls.call(lambda: "still running") == "still running"


def test_one_call_per_turn_so_frames_are_read_between_commands(monkeypatch):
    """Calls queued together never run back to back: the loop waits on its sockets
    (a poll, not a sleep) before each, so frames that came meanwhile go first."""
    mod = batchio.native()
    if mod is None:
        pytest.skip("batchio is not built here")

    class Counting:
        waits = 0

        def wait_ready(self, fds: list[int], timeout: float, spin: float = 0.0) -> list[int]:
            Counting.waits += 1
            return mod.wait_ready(fds, timeout, spin)
    monkeypatch.setattr(batchio, "native", lambda: Counting())
    with _Loop() as plane:
        seen = plane.calls.call_each([lambda: Counting.waits] * 5)
        assert seen == sorted(set(seen)), seen      # one more wait before each call


def test_calls_still_queued_when_the_loop_stops_are_run_not_lost():
    calls = LoopCalls()
    calls.open(lambda: None)            # a loop that never turns
    results: list[object] = []
    caller = threading.Thread(target=lambda: results.append(calls.call(lambda: "done")))
    caller.start()
    deadline = time.monotonic() + 5
    while not calls.pending():
        assert time.monotonic() < deadline
        time.sleep(0.001)
    calls.close()                       # the loop ends with the call queued
    caller.join(5)
    assert results == ["done"]
    assert calls.call(threading.get_ident) == threading.get_ident()   # closed: direct


def test_runtime_channel_commands_run_on_the_port_loop():
    """softswitch run hands the channel's commands to the port loop (run_each)."""
    asked_from: list[int] = []

    def no_pipeline() -> None:          # what the channel asks for the switch of the moment
        asked_from.append(threading.get_ident())

    with _Loop() as plane:
        channel = RuntimeChannel(no_pipeline, None, run_each=plane.calls.call_each)
        outcomes = channel.execute_all(["# a comment", "table_dump t", "show_queues 1"])
        assert outcomes[0] == (True, "")
        assert outcomes[1] == (False, "Error: no pipeline is loaded")
        assert outcomes[2][0] is False and "traffic manager" in outcomes[2][1]
        assert channel.execute_all([]) == []
        assert asked_from == [plane._runner]                 # noqa: SLF001


def test_a_checkpoint_serves_urgent_frames_inside_a_call_and_nowhere_else():
    """LoopCalls.checkpoint runs the loop's urgent forwarding only while the loop runs a
    queued call (a runtime-channel command between its steps); elsewhere it is free."""
    calls = LoopCalls()
    served: list[str] = []
    calls.checkpoint()                                   # no loop: nothing
    calls.open(lambda: None, lambda: served.append("urgent"))
    calls.checkpoint()                                   # the loop, but no call: nothing
    assert served == []

    def command() -> str:
        served.append("step 1")
        calls.checkpoint()
        served.append("step 2")
        calls.checkpoint()
        return "done"
    results: list[object] = []
    caller = threading.Thread(target=lambda: results.append(calls.call(command)))
    caller.start()
    deadline = time.monotonic() + 5
    while not calls.pending():
        assert time.monotonic() < deadline
        time.sleep(0.001)
    calls.run_one()                                      # this thread is the loop
    caller.join(5)
    assert results == ["done"]
    assert served == ["step 1", "urgent", "step 2", "urgent"]
    calls.checkpoint()                                   # the call is over: nothing
    assert len(served) == 4
    calls.close()


class _BigReplies(RuntimeChannel):
    """A channel whose every command answers with ``size`` bytes, run where asked."""

    def __init__(self, size: int, ran_on: list[int]) -> None:
        super().__init__(lambda: None, None)
        self.size, self.ran_on = size, ran_on

    def execute_all(self, lines: list[str]) -> list[tuple[bool, str]]:
        self.ran_on.append(threading.get_ident())
        return [(True, line * max(1, self.size // max(1, len(line)))) for line in lines]


def _served(plane: DataPlane, channel: RuntimeChannel, idle: float = 30.0):
    """A socket pair whose server end a LoopConnection serves on ``plane``'s loop (its
    thread here, as the channel's handler runs it); the client end, and the thread."""
    from softswitch.daemon.cli_channel.connection import LoopConnection

    server, client = socket.socketpair()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    server.setblocking(False)
    conn = LoopConnection(server, channel, plane)
    assert conn.start(b"")
    thread = threading.Thread(target=conn.serve, args=(idle,), daemon=True)
    thread.start()
    return client, server, thread


def _read_lines(sock: socket.socket, count: int) -> list[dict]:
    buf = b""
    sock.settimeout(10)
    while buf.count(b"\n") < count:
        data = sock.recv(1 << 16)
        assert data, "the connection ended early"
        buf += data
    return [json.loads(line) for line in buf.splitlines()]


def _ended(plane: DataPlane, client: socket.socket, server: socket.socket,
           thread: threading.Thread) -> None:
    """The connection is over: its thread returned, the loop reads its socket no more."""
    thread.join(5)
    assert not thread.is_alive(), "the connection did not end"
    assert server.fileno() not in plane._watched             # noqa: SLF001
    client.close()
    server.close()


def test_the_port_loop_reads_a_connection_and_runs_its_commands():
    """A connection handed to the loop: its commands run on the loop's thread, one
    read's replies come in order, a bad line gets its error, and the end of the
    stream ends the connection (the socket is watched no more)."""
    if batchio.native() is None:
        pytest.skip("batchio is not built here")
    with _Loop() as plane:
        ran_on: list[int] = []
        client, server, thread = _served(plane, _BigReplies(8, ran_on))
        client.sendall(b'{"cmd": "a"}\nnot json\n{"cmd": "b"}\n')
        replies = _read_lines(client, 3)
        assert [r["ok"] for r in replies] == [True, False, True]
        assert replies[0]["output"].startswith("a") and replies[2]["output"].startswith("b")
        assert "expected" in replies[1]["output"]
        assert set(ran_on) == {plane._runner}                # noqa: SLF001
        # asked on the loop: the step that sent the replies has also watched the
        # socket again (the client may read them before that step ends)
        watched = plane.calls.call(lambda: server.fileno() in plane._watched)  # noqa: SLF001
        assert watched
        client.sendall(b'{"cmd": "last, unterminated"}')
        client.shutdown(socket.SHUT_WR)
        assert _read_lines(client, 1)[0]["output"].startswith("last")
        _ended(plane, client, server, thread)


def test_replies_a_client_does_not_read_go_through_its_thread_not_the_loop():
    """Replies bigger than the socket takes: the loop hands the rest to the
    connection's thread (which blocks on it) and goes on forwarding; once the client
    reads, everything arrives, in order."""
    if batchio.native() is None:
        pytest.skip("batchio is not built here")
    with _Loop() as plane:
        client, server, thread = _served(plane, _BigReplies(200_000, []))
        client.sendall(b"".join(b'{"cmd": "c%d"}\n' % n for n in range(8)))
        time.sleep(0.3)                      # nobody reads: the socket is full
        assert plane.calls.call(lambda: "the loop still turns") == "the loop still turns"
        replies = _read_lines(client, 8)
        assert [r["output"][:3] for r in replies] == [f"c{n}c" for n in range(8)]
        client.close()
        thread.join(5)
        assert not thread.is_alive()
        server.close()


def test_an_idle_connection_is_closed():
    if batchio.native() is None:
        pytest.skip("batchio is not built here")
    with _Loop() as plane:
        client, server, thread = _served(plane, _BigReplies(8, []), idle=0.2)
        _ended(plane, client, server, thread)


def test_without_a_running_loop_the_thread_keeps_the_connection():
    from softswitch.daemon.cli_channel.connection import LoopConnection

    plane = DataPlane({})
    server, client = socket.socketpair()
    try:
        assert not LoopConnection(server, _BigReplies(8, []), plane).start(b"")
        assert plane._watched == {}                          # noqa: SLF001
    finally:
        plane.close()
        server.close()
        client.close()
