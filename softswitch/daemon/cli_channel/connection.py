"""A runtime-channel connection read and answered on ``softswitch run``'s port loop.

The runtime channel's commands run on the port loop anyway, one per turn
(:mod:`softswitch.daemon.ports.loop_calls`). A connection thread that read the socket, parsed
the JSON lines, handed them over and wrote the replies would take the GIL a few times
per burst of commands, and every time the loop wanted it back it would wait for that
thread and for a wake-up across CPUs, raising the urgent class's tail latency even for
commands that do nothing.

So once a connection is accepted (and authenticated) its thread hands the socket to
the loop (:meth:`DataPlane.watch`) and waits. The loop reads what arrives
(non-blocking), answers the complete lines one command per turn, and sends the
replies of a read together; it does not read the connection again until they are
sent, so a client cannot queue more than one read's worth of commands. A reply the
socket cannot take at once (a client that does not read) goes to the connection's
thread, which sends it blocking and gives the socket back: the loop never waits on a
client. The thread also closes a connection idle for ``idle`` seconds. Where the loop
does not take connections (not running, or on ``select``), the thread serves it
itself (:class:`softswitch.daemon.cli_channel.commands._Handler`).
"""

from __future__ import annotations

import queue
import socket
import time
from collections import deque
from typing import Any

from softswitch.daemon.cli_channel.framing import (
    NOT_A_COMMAND,
    TOO_LONG,
    Commands,
    command_of,
    encode_replies,
    take_lines,
)
from softswitch.daemon.ports.dataplane import PortLoop

SEND_TIMEOUT_S = 30.0            # a client that reads nothing for this long is dropped
_END = None                      # the thread's job: the connection is over


class LoopConnection:
    """One connection, read on the port loop; its thread sends what the loop could
    not and closes it when it is over."""

    def __init__(self, sock: socket.socket, channel: Commands,
                 loop: PortLoop) -> None:
        self._sock = sock
        self._fd = sock.fileno()
        self._channel = channel
        self._loop = loop
        self._pending = bytearray()          # an incomplete line
        self._lines: deque[bytes] = deque()  # complete lines not yet answered
        self._replies: list[dict[str, Any]] = []
        self._too_long = False
        self._closing = False                # answer what was read, then end
        self._over = False
        self._last = time.monotonic()        # the last read (idle timeout)
        # for the thread: bytes to send (blocking), or _END
        self._jobs: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()

    # ------------------------------------------------------------------ thread side
    def start(self, early: bytes) -> bool:
        """Give the socket to the loop (``early``: bytes already read from it, answered
        first); False where the loop does not take it (nothing done then)."""
        return bool(self._loop.calls.call(lambda: self._attach(early)))

    def serve(self, idle: float) -> None:
        """Wait until the connection is over, sending what the loop hands back; end it
        after ``idle`` seconds without a command."""
        while True:
            wait = self._last + idle - time.monotonic()
            try:
                job = self._jobs.get(timeout=max(wait, 0.0))
            except queue.Empty:
                if time.monotonic() - self._last >= idle:
                    self._loop.calls.call(self._end)
                continue
            if job is _END:
                return
            if not self._send_blocking(job):
                self._loop.calls.call(self._end)
                continue
            self._loop.calls.call(self._sent)

    def _send_blocking(self, data: bytes) -> bool:
        try:
            self._sock.settimeout(SEND_TIMEOUT_S)
            self._sock.sendall(data)
            self._sock.setblocking(False)
        except OSError:
            return False
        return True

    # ------------------------------------------------------------------ loop side
    def _attach(self, early: bytes) -> bool:
        if not self._loop.watch(self._fd, self._ready, self._lost):
            return False
        if early:
            self._loop.unwatch(self._fd)
            self._take(early)
        return True

    def _ready(self) -> None:
        """The socket is readable: take what came."""
        try:
            data = self._sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:                   # the client went away
            self._end()
            return
        self._loop.unwatch(self._fd)      # until what this read brings is answered
        self._take(data)

    def _take(self, data: bytes) -> None:
        self._last = time.monotonic()
        lines, self._too_long = take_lines(self._pending, data)
        self._lines.extend(lines)
        self._closing = self._too_long or not data
        self._loop.calls.post(self._step)

    def _step(self) -> None:
        """One command per turn of the loop; the replies of a read go together."""
        if self._over:
            return
        try:
            self._answer()
        except Exception:
            self._end()           # (logged by the loop) the client is not left waiting
            raise

    def _answer(self) -> None:
        if self._lines:
            self._replies.append(self._reply(self._lines.popleft()))
            if self._lines:
                self._loop.calls.post(self._step)
                return
        if self._too_long:
            self._replies.append(TOO_LONG)
        data, self._replies = encode_replies(self._replies), []
        try:
            sent = self._sock.send(data) if data else 0
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self._end()
            return
        if sent < len(data):
            self._jobs.put(data[sent:])   # the thread sends the rest, then _sent
            return
        self._sent()

    def _reply(self, raw: bytes) -> dict[str, Any]:
        cmd = command_of(raw)
        if cmd is None:
            return NOT_A_COMMAND
        ok, output = self._channel.execute_all([cmd])[0]
        return {"ok": ok, "output": output}

    def _sent(self) -> None:
        """The replies are out: read on, or end."""
        if self._closing:
            self._end()
        elif not self._over and not self._loop.watch(self._fd, self._ready, self._lost):
            self._end()

    def _end(self) -> None:
        if not self._over:
            self._over = True
            self._loop.unwatch(self._fd)
            self._jobs.put(_END)

    def _lost(self) -> None:
        """The loop ended first."""
        if not self._over:
            self._over = True
            self._jobs.put(_END)
