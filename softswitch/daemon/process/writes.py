"""Writes from the P4Runtime front end process, answered on the port loop.

With ``softswitch run -- --p4runtime-process`` the gRPC service runs in a process of its
own (:mod:`~softswitch.daemon.process.service`) and hands each Write (and Capabilities)
here as one frame (:mod:`~softswitch.daemon.process.link`) on a unix socket. The
port loop watches the socket (:meth:`DataPlane.watch`), as it does the runtime
channel's connections, and answers each small request between two bursts with the
same handlers as the in-process server (``rpc.unary.run_handler``): no other thread
of the switch takes the GIL for a Write, so the port loop never waits for one that the
host preempted holding it. A Write runs as a call of the loop
(:meth:`LoopCalls.as_call <softswitch.daemon.ports.loop_calls.LoopCalls.as_call>`): at its
checkpoints (once its frame is read; ``Device.checkpoint``: before it takes the device
lock, and after each hold of it, a CONTINUE_ON_ERROR batch being applied a few updates
per hold: ``p4runtime.write.LOOP_WRITE_SLICE``; once its reply is ready, before the
send) the loop forwards the urgent frames that came meanwhile, so they wait for a part
of the Write, not all of it. Requests bigger than
``INLINE_BYTES`` go to a thread of their own (:mod:`~softswitch.daemon.rpc.serial`),
as the unary lane's do, so a batch of thousands of entries does not stop forwarding
while it is applied.

A reply the socket cannot take at once on the loop (a front end that stopped reading:
it waits for each reply, so this does not happen while it works) ends that
connection, logged, rather than let the loop wait; the front end then answers that
call UNAVAILABLE and opens a new connection for the next.
"""

from __future__ import annotations

import logging
import os
import socket
import threading

import grpc

from softswitch.daemon.ports.dataplane import PortLoop
from softswitch.daemon.process import link
from softswitch.daemon.process.link import LinkError, Reply
from softswitch.daemon.rpc.serial import INLINE_BYTES, BigRequests
from softswitch.daemon.rpc.unary import Handler, run_handler

log = logging.getLogger("softswitch.p4runtime")
SEND_TIMEOUT_S = 30.0        # the big-request thread's blocking sends
# What one read takes, into a buffer kept for it (the loop's thread only), so a Write
# does not allocate and shrink a new bytes object of the read's size.
_CHUNK = bytearray(64 << 10)
_CHUNK_VIEW = memoryview(_CHUNK)


class LoopWrites:
    """The listening socket and its connections, served on the port loop."""

    def __init__(self, path: str, handlers: dict[int, Handler], max_bytes: int) -> None:
        """``handlers``: per method (link.WRITE, ...); ``max_bytes``: the
        largest request (the front end refuses bigger ones before they come here)."""
        self.path = path
        self._handlers = handlers
        self._limit = max_bytes + 1
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._listener.bind(path)
            os.chmod(path, 0o600)
            self._listener.listen(16)
            self._listener.setblocking(False)
        except OSError:
            self._listener.close()
            raise
        self._big = BigRequests("p4rt-frontend-big")
        self._conns: dict[int, _Connection] = {}
        self._loop: PortLoop | None = None

    def attach(self, loop: PortLoop) -> None:
        """On the port loop's thread: start serving (False from watch: the loop takes no
        sockets; then nothing is served, loudly)."""
        self._big.start()
        self._loop = loop
        if not loop.watch(self._listener.fileno(), self._accept, self._lost):
            log.error("the port loop cannot watch the P4Runtime front end's link: "
                      "Writes will fail")

    def close(self) -> None:
        for conn in list(self._conns.values()):
            conn.close()
        self._conns.clear()
        self._listener.close()
        self._big.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def _lost(self) -> None:
        """The loop ended: nothing more is served."""

    def _accept(self) -> None:
        try:
            sock, _ = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        sock.settimeout(SEND_TIMEOUT_S)       # the big-request thread's sends block
        conn = _Connection(self, sock)
        assert self._loop is not None
        if self._loop.watch(conn.fd, conn.ready, conn.close):
            self._conns[conn.fd] = conn
        else:
            sock.close()

    def _forget(self, conn: _Connection) -> None:
        if self._conns.pop(conn.fd, None) is not None and self._loop is not None:
            self._loop.unwatch(conn.fd)


class _Connection:
    """One front-end connection: frames in, one reply per frame out."""

    def __init__(self, owner: LoopWrites, sock: socket.socket) -> None:
        self._owner = owner
        self._sock = sock
        self.fd = sock.fileno()
        self._buffer = bytearray()
        self._send_lock = threading.Lock()

    def ready(self) -> None:
        """On the loop: read what arrived, answer the complete frames."""
        try:
            got = self._sock.recv_into(_CHUNK, len(_CHUNK), socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            log.info("P4Runtime front end link: %s", exc)
            got = 0
        if not got:
            self.close()
            return
        self._buffer += _CHUNK_VIEW[:got]
        try:
            while (body := link.take_frame(self._buffer,
                                                    self._owner._limit)) is not None:
                if not body:
                    raise LinkError("an empty frame")
                self._request(body)
        except LinkError as exc:
            log.error("P4Runtime front end link: %s; closing it", exc)
            self.close()

    def _request(self, body: bytes) -> None:
        handler = self._owner._handlers.get(body[0])
        message = body[1:]
        if handler is None:
            self._send_now(Reply(grpc.StatusCode.UNIMPLEMENTED.value[0],
                                 f"method {body[0]} is not served over the link"))
        elif len(message) > INLINE_BYTES:
            refused = self._owner._big.submit(
                len(message), lambda: self._send_blocking(_reply(handler, message)))
            if refused is not None:
                self._send_now(Reply(grpc.StatusCode.RESOURCE_EXHAUSTED.value[0], refused))
        else:
            loop = self._owner._loop
            assert loop is not None
            with loop.calls.as_call():  # its checkpoints let urgent frames through
                loop.calls.checkpoint()  # (the frame was read: the request comes next)
                reply = _reply(handler, message)
                loop.calls.checkpoint()  # (answered: the send comes next)
                self._send_now(reply)

    def _send_now(self, reply: Reply) -> None:
        """On the loop: the whole reply at once, or the connection ends (module doc)."""
        data = reply.encode()
        with self._send_lock:
            try:
                sent = self._sock.send(data, socket.MSG_DONTWAIT)
            except OSError:
                sent = -1
        if sent != len(data):
            log.error("P4Runtime front end link: a reply could not be sent at once; "
                      "closing the connection")
            self.close()

    def _send_blocking(self, reply: Reply) -> None:
        data = reply.encode()
        with self._send_lock:
            try:
                self._sock.sendall(data)
            except OSError as exc:
                log.error("P4Runtime front end link: reply not sent: %s", exc)

    def close(self) -> None:
        self._owner._forget(self)
        try:
            self._sock.close()
        except OSError:
            pass


def _reply(handler: Handler, message: bytes) -> Reply:
    response, code, details, trailing = run_handler(handler, message)
    return Reply(code.value[0], details, trailing or (),
                 response if response is not None else b"")
