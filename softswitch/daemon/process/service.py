"""The P4Runtime front end: the gRPC service in a process of its own.

``softswitch run -- --p4runtime-process`` (a softswitch extension) starts this process
beside the switch. It serves ``p4.v1.P4Runtime`` on the switch's address (TLS as the
switch was told), so grpcio's threads, HTTP/2 and every call's completion-queue events
run here, not in the switch, whose port loop would otherwise share the GIL with them
and delay urgent frames while a controller writes.

* **Write** and **Capabilities** go to the switch as one frame each over a unix socket
  that the port loop reads (:mod:`process.link`, :mod:`process.writes`); its reply
  (status, details, trailing metadata with the per-update errors, response) is this
  call's answer. They are served on the unary lane (:mod:`rpc.unary`, as in the
  switch's own server): grpcio's polling thread receives the call, waits for the
  switch's reply and sends it, with no hand-over to a pool thread and back, which
  saves CPU this process shares with the controller.
* **Read**, **SetForwardingPipelineConfig**, **GetForwardingPipelineConfig** and the
  **StreamChannel** are passed through, message by message, to the switch's own gRPC
  server on a second unix socket (metadata, deadline, status, trailing metadata and
  cancellation both ways). They are rare, or idle streams.

A Write is never sent twice: when the link fails after a request went out, the call
ends UNAVAILABLE (it may or may not have been applied, as with any lost connection).
The process ends with the switch (``PR_SET_PDEATHSIG``) and prints ``ready PORT`` on
stdout once it listens.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc

from softswitch.daemon.process import link
from softswitch.daemon.process.link import LinkError, Reply
from softswitch.daemon.rpc import unary

SERVICE = "p4.v1.P4Runtime"
_CODES = {code.value[0]: code for code in grpc.StatusCode}
# metadata a proxy must not copy (transport headers grpcio sets itself)
_RESERVED = ("user-agent", "te", "content-type", "grpc-")
_PR_SET_PDEATHSIG = 1


class Frontend:
    """The service's handlers: Writes over the link, the rest passed through."""

    def __init__(self, switch_grpc: str, link_path: str, max_bytes: int) -> None:
        self._link_path = link_path
        self._limit = 64 << 20                   # replies: per-update errors of a batch
        self._local = threading.local()
        self._channel = grpc.insecure_channel(
            switch_grpc, options=[("grpc.max_send_message_length", max_bytes),
                                  ("grpc.max_receive_message_length", 64 << 20)])

    def handler(self) -> grpc.GenericRpcHandler:
        unary_rpc = grpc.unary_unary_rpc_method_handler
        stream = grpc.unary_stream_rpc_method_handler
        return grpc.method_handlers_generic_handler(SERVICE, {
            "Write": unary_rpc(lambda r, c: self._linked(link.WRITE, r, c)),
            "Capabilities": unary_rpc(lambda r, c: self._linked(link.CAPABILITIES, r, c)),
            "SetForwardingPipelineConfig": unary_rpc(self._passed("SetForwardingPipelineConfig")),
            "GetForwardingPipelineConfig": unary_rpc(self._passed("GetForwardingPipelineConfig")),
            "Read": stream(self._streamed("Read", self._channel.unary_stream)),
            "StreamChannel": grpc.stream_stream_rpc_method_handler(
                self._streamed("StreamChannel", self._channel.stream_stream)),
        })

    def lane_handlers(self) -> dict[str, unary.Handler]:
        """Write and Capabilities for the unary lane (the same answers as
        :meth:`handler`'s, without grpcio's thread pool)."""
        def linked(method: int) -> unary.Handler:
            return (unary.as_bytes, lambda r, c: self._linked(method, r, c),
                    unary.as_bytes)
        return {f"/{SERVICE}/Write": linked(link.WRITE),
                f"/{SERVICE}/Capabilities": linked(link.CAPABILITIES)}

    def close(self) -> None:
        self._channel.close()

    # ------------------------------------------------------------------ the link
    def _linked(self, method: int, request: bytes, context: Any) -> bytes:
        """``context``: grpcio's, or the unary lane's (``LaneContext``)."""
        reply = self._over_link(method, request, context)
        if reply.trailing:
            context.set_trailing_metadata(reply.trailing)
        if reply.code != 0:
            context.abort(_CODES.get(reply.code, grpc.StatusCode.UNKNOWN), reply.details)
        return reply.response

    def _over_link(self, method: int, request: bytes, context: Any) -> Reply:
        data = link.frame(bytes([method]) + request)
        try:
            try:
                sock = self._send(data, context)
            except (BrokenPipeError, ConnectionResetError):
                # the switch had closed this connection: nothing was sent, try a new one
                self._drop()
                sock = self._send(data, context)
            return self._receive(sock)
        except TimeoutError:
            self._drop()
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline exceeded")
        except (OSError, LinkError) as exc:
            self._drop()
            context.abort(grpc.StatusCode.UNAVAILABLE, f"the switch did not answer: {exc}")
        raise AssertionError("unreachable")       # context.abort raises

    def _send(self, data: bytes, context: Any) -> socket.socket:
        sock = self._connection(context)
        sock.settimeout(_seconds_left(context))
        sock.sendall(data)
        return sock

    def _receive(self, sock: socket.socket) -> Reply:
        buffer = bytearray()
        while (body := link.take_frame(buffer, self._limit)) is None:
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise LinkError("the switch closed the link")
            buffer += chunk
        return Reply.decode(body)

    def _connection(self, context: Any) -> socket.socket:
        """This thread's connection to the switch's link, opened when needed."""
        sock = getattr(self._local, "sock", None)
        if sock is None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(self._link_path)
            except OSError as exc:
                sock.close()
                context.abort(grpc.StatusCode.UNAVAILABLE, f"the switch is not reachable: {exc}")
            self._local.sock = sock
        return sock

    def _drop(self) -> None:
        sock = getattr(self._local, "sock", None)
        self._local.sock = None
        if sock is not None:
            sock.close()

    # ------------------------------------------------------------------ passed through
    def _passed(self, name: str) -> Any:
        call = self._channel.unary_unary(f"/{SERVICE}/{name}")

        def handle(request: bytes, context: grpc.ServicerContext) -> bytes:
            try:
                response, rpc = call.with_call(request, metadata=_metadata(context),
                                               timeout=_seconds_left(context))
            except grpc.RpcError as err:
                _end(context, err)
                raise
            context.set_trailing_metadata(rpc.trailing_metadata() or ())
            return response
        return handle

    def _streamed(self, name: str, kind: Any) -> Any:
        call = kind(f"/{SERVICE}/{name}")

        def handle(request: Any, context: grpc.ServicerContext) -> Iterator[bytes]:
            upstream = call(request, metadata=_metadata(context),
                            timeout=_seconds_left(context))
            context.add_callback(upstream.cancel)
            try:
                yield from upstream
            except grpc.RpcError as err:
                if context.is_active():
                    _end(context, err)
                return
            context.set_trailing_metadata(upstream.trailing_metadata() or ())
        return handle


def _seconds_left(context: Any) -> float | None:
    """The call's deadline as a timeout; None without one."""
    left = context.time_remaining()
    return None if left is None or left > 1e6 else left


def _metadata(context: grpc.ServicerContext) -> tuple[tuple[str, Any], ...]:
    return tuple((key, value) for key, value in context.invocation_metadata()
                 if not key.startswith(":") and not key.startswith(_RESERVED))


def _end(context: grpc.ServicerContext, err: grpc.RpcError) -> None:
    """End this call as the switch ended the passed-through one."""
    call: Any = err
    context.set_trailing_metadata(call.trailing_metadata() or ())
    context.abort(call.code(), call.details() or "")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m softswitch.daemon.process.service",
                                description="softswitch's P4Runtime front end "
                                            "(started by softswitch run --p4runtime-process)")
    p.add_argument("--listen", required=True, metavar="ADDR")
    p.add_argument("--switch-grpc", required=True, metavar="unix:PATH")
    p.add_argument("--link", required=True, metavar="PATH")
    p.add_argument("--max-request-bytes", type=int, required=True, metavar="N")
    p.add_argument("--tls-cert", metavar="PEM")
    p.add_argument("--tls-key", metavar="PEM")
    p.add_argument("--tls-ca", metavar="PEM")
    p.add_argument("--client-auth", action="store_true")
    p.add_argument("--parent", type=int, metavar="PID",
                   help="the switch's pid: exit at once if it is already gone")
    return p


def _credentials(args: argparse.Namespace) -> grpc.ServerCredentials | None:
    if not args.tls_cert:
        return None

    def read(path: str | None) -> bytes | None:
        if path is None:
            return None
        with open(path, "rb") as f:
            return f.read(1 << 20)
    key, cert = read(args.tls_key), read(args.tls_cert)
    assert key is not None and cert is not None
    return grpc.ssl_server_credentials([(key, cert)], root_certificates=read(args.tls_ca),
                                       require_client_auth=args.client_auth)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # SIGTERM/SIGINT end the process: held pending for sigwait below, in every thread
    # (those started from now on inherit the mask). A handler setting an Event would
    # deadlock when the signal lands while the main thread waits on that Event.
    ending = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, ending)
    try:      # never outlive the switch, whatever ends it
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass
    if args.parent is not None and os.getppid() != args.parent:
        return 1           # the switch ended before the signal was asked for
    frontend = Frontend(args.switch_grpc, args.link, args.max_request_bytes)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="p4rt"),
                         options=[("grpc.max_receive_message_length", args.max_request_bytes),
                                  ("grpc.max_send_message_length", 64 << 20),
                                  ("grpc.so_reuseport", 0)])
    lane = unary.attach(server, frontend.lane_handlers())
    server.add_generic_rpc_handlers((frontend.handler(),))
    credentials = _credentials(args)
    try:
        port = (server.add_insecure_port(args.listen) if credentials is None
                else server.add_secure_port(args.listen, credentials))
    except RuntimeError:
        port = 0
    if port == 0:
        print(f"cannot listen on {args.listen}", file=sys.stderr, flush=True)
        return 1
    server.start()
    if lane is not None:
        lane.start()
    print(f"ready {port}", flush=True)
    signal.sigwait(ending)
    server.stop(0.5).wait()
    if lane is not None:
        lane.close()
    frontend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
