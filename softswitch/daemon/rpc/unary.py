"""A lean serving lane for P4Runtime's short unary RPCs (Write, Capabilities).

grpcio's synchronous server hands every call from its polling thread to a pool thread
and back, several times per call (request, message, status), each hop a GIL hand-over
that costs more than a small Write itself. This lane takes those methods off the pool:
they are registered with gRPC core as *registered methods* whose events arrive on
grpcio's own completion queue with tags that grpcio's serving loop calls (as it calls
its own per-call callbacks), so the one thread that polls the connection also
receives, runs the handler, and sends message and status in one batch: no hand-over
at all. (A completion queue of the lane's own, polled on a thread of its own, would
have two threads polling the connection and each waking per call.)

Requests bigger than ``INLINE_BYTES`` are answered on the lane's thread instead
(:mod:`~softswitch.daemon.rpc.serial`, which also bounds the bytes waiting there),
one at a time, so that streams (packet-in, arbitration) and new calls never wait on
the polling thread behind a long batch. Reads, pipeline changes and streams stay on
grpcio's pool.

It uses gRPC core through grpcio's Cython layer (``grpc._cython.cygrpc``) and grpcio's
server state, the same calls grpcio's own server makes. Where those are not what this
module expects, :func:`attach` returns None and the methods stay with grpcio's server,
which answers them exactly the same way, only slower.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import grpc

from softswitch.daemon.rpc.serial import INLINE_BYTES, BigRequests
from softswitch.memory import reclaim

log = logging.getLogger("softswitch.p4runtime")
# a call's trailing metadata: (key, value) pairs, as grpc gives them
Trailing = tuple[tuple[str, bytes], ...]

try:
    from grpc._cython import cygrpc
except ImportError:   # pragma: no cover - grpcio without its Cython layer
    cygrpc = None

# Calls of each method asked for ahead: a call that arrives finds one waiting while the
# one before it is answered, and the lane asks for its replacement after the reply.
REQUESTS_PER_METHOD = 2
Handler = tuple[Callable[[bytes], Any], Callable[[Any, Any], Any], Callable[[Any], bytes]]


class _Aborted(Exception):
    """``context.abort``: the RPC ends with this status."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self.code = code
        self.details = details


class LaneContext:
    """What the servicer's unary handlers (and the front end's) use of
    ``grpc.ServicerContext``."""

    __slots__ = ("trailing", "_deadline")

    def __init__(self, deadline: float | None = None) -> None:
        """``deadline``: the call's, in ``time.time()`` seconds, as grpcio gives it (far
        in the future without one); None: not known."""
        self.trailing: tuple[tuple[str, bytes], ...] | None = None
        self._deadline = deadline

    def time_remaining(self) -> float | None:
        """Seconds left before the call's deadline, as grpcio's context answers."""
        if self._deadline is None:
            return None
        return max(self._deadline - time.time(), 0.0)

    def set_trailing_metadata(self, metadata: Any) -> None:
        self.trailing = tuple(metadata)

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise _Aborted(code, details)


class UnaryLane:
    """Registered unary methods answered on grpcio's own polling thread (module doc)."""

    def __init__(self, state: Any, handlers: dict[str, Handler]) -> None:
        """``state``: the grpcio server's state (its core server, completion queue)."""
        self._server = state.server
        self._cq = state.completion_queue
        self._handlers = handlers
        for method in handlers:
            self._server.register_method(method)
        self._big = BigRequests("p4rt-unary")

    def start(self) -> None:
        """Serve (after the server started)."""
        self._big.start()
        for method in self._handlers:
            for _ in range(REQUESTS_PER_METHOD):
                self._request(method)

    def close(self) -> None:
        """End the lane once the server has shut down (its calls are over)."""
        self._big.close()

    def _request(self, method: str) -> None:
        self._server.request_registered_call(self._cq, self._cq,
                                             method, functools.partial(self._arrived, method))

    # Each tag is called by grpcio's serving loop with its event and answers as grpcio's
    # own callbacks do: (no rpc state, no callbacks). An exception escaping a tag would
    # end that loop (the whole server), so none does.
    def _arrived(self, method: str, event: Any) -> tuple[None, tuple[()]]:
        """A new call of ``method``: ask for its one message. (The request it used is
        renewed once the call is answered: :meth:`_received`.)"""
        if not event.success:                      # the server is shutting down
            return None, ()
        try:
            event.call.start_server_batch(
                (cygrpc.ReceiveMessageOperation(0),),
                functools.partial(self._received, method, event.call,
                                  _deadline_of(event)))
        except Exception as exc:  # noqa: BLE001 - see above
            log.error("unary lane: %s call not taken: %s: %s", method,
                      type(exc).__name__, exc)
            self._renew(method)                    # no _received comes for this call
        return None, ()

    def _renew(self, method: str) -> None:
        """Ask for the next call of ``method`` in place of the one that came."""
        try:
            self._request(method)
        except Exception as exc:  # noqa: BLE001 - the server is stopping: no more calls
            log.debug("unary lane: %s not renewed: %s: %s", method, type(exc).__name__,
                      exc)

    def _received(self, method: str, call: Any, deadline: float | None,
                  event: Any) -> tuple[None, tuple[()]]:
        """The call's message (or none): answer it here, or on the lane's thread; then
        ask for the next call (after the reply: off the caller's round trip)."""
        try:
            message = event.batch_operations[0].message() if event.success else None
            if message is None:   # no message: half-closed at once, or gone (as grpcio)
                self._send(call, _status(grpc.StatusCode.UNIMPLEMENTED,
                                         f'"{method}" requires exactly one request '
                                         'message.', None))
            elif len(message) > INLINE_BYTES:
                self._enqueue(self._handlers[method], message, call, deadline)
            else:
                with reclaim.holding() as later:
                    self._send(call, self._answer(self._handlers[method], message,
                                                  deadline))
                    later.clear()
        except Exception as exc:  # noqa: BLE001 - see above
            log.error("unary lane: %s not answered: %s: %s", method, type(exc).__name__,
                      exc)
        self._renew(method)
        return None, ()

    @staticmethod
    def _send(call: Any, ops: tuple[Any, ...]) -> None:
        try:
            call.start_server_batch(ops, _done)
        except Exception as exc:  # noqa: BLE001 - e.g. the server stopped meanwhile
            log.info("unary lane: reply not sent: %s: %s", type(exc).__name__, exc)

    def _enqueue(self, handler: Handler, message: bytes, call: Any,
                 deadline: float | None) -> None:
        """Hand a big request to the lane's thread (rpc.serial), or refuse it."""
        refused = self._big.submit(
            len(message), lambda: self._send(call, self._answer(handler, message, deadline)))
        if refused is not None:
            self._send(call, _status(grpc.StatusCode.RESOURCE_EXHAUSTED, refused, None))

    @staticmethod
    def _answer(handler: Handler, message: bytes, deadline: float | None) -> tuple[Any, ...]:
        response, code, details, trailing = run_handler(handler, message, deadline)
        if response is None:
            return _status(code, details, trailing)
        return (cygrpc.SendInitialMetadataOperation(None, 0),
                cygrpc.SendMessageOperation(response, 0),
                cygrpc.SendStatusFromServerOperation(trailing, cygrpc.StatusCode.ok,
                                                     b"", 0),
                cygrpc.ReceiveCloseOnServerOperation(0))


def as_bytes(data: bytes) -> bytes:
    """A handler's (de)serializer for requests or responses that stay bytes."""
    return data


def run_handler(handler: Handler, message: bytes, deadline: float | None = None
                ) -> tuple[bytes | None, grpc.StatusCode, str, Trailing | None]:
    """A unary request answered as grpcio's server would: (the encoded response or
    None, status code, details, trailing metadata). A softswitch bug is INTERNAL.
    ``deadline``: the call's (:class:`LaneContext`)."""
    deserialize, behavior, serialize = handler
    context = LaneContext(deadline)
    try:
        request = deserialize(message)
        later = reclaim.held()
        if later is not None:       # freed after the reply is sent (see reclaim.held)
            later.append(request)
        response = serialize(behavior(request, context))
    except _Aborted as exc:
        return None, exc.code, exc.details, context.trailing
    except Exception as exc:  # noqa: BLE001 - a softswitch bug: INTERNAL, as grpcio
        log.error("internal error: %s: %s", type(exc).__name__, exc)
        return None, grpc.StatusCode.INTERNAL, \
            f"internal error: {type(exc).__name__}: {exc}", None
    return response, grpc.StatusCode.OK, "", context.trailing


def _deadline_of(event: Any) -> float | None:
    """A new call's deadline (``time.time()`` seconds), where grpcio gives it."""
    deadline = getattr(getattr(event, "call_details", None), "deadline", None)
    return deadline if isinstance(deadline, float) else None


def _done(event: Any) -> tuple[None, tuple[()]]:
    """A call's last batch completed: nothing left to do."""
    return None, ()


def _status(code: grpc.StatusCode, details: str,
            trailing: Trailing | None) -> tuple[Any, ...]:
    return (cygrpc.SendInitialMetadataOperation(None, 0),
            cygrpc.SendStatusFromServerOperation(trailing, code.value[0],
                                                 details.encode("utf-8", "replace"), 0),
            cygrpc.ReceiveCloseOnServerOperation(0))


def attach(server: grpc.Server, handlers: dict[str, Handler]) -> UnaryLane | None:
    """A lane for ``handlers`` (full method name -> (deserializer, behavior,
    serializer)) on a grpcio server not yet started, or None where grpcio's internals
    are not the expected ones (the methods then stay with the server's own handlers)."""
    state = getattr(server, "_state", None)
    cy_server = getattr(state, "server", None)
    needed = ("register_method", "request_registered_call")
    if cygrpc is None or not hasattr(state, "completion_queue") or \
            not all(hasattr(cy_server, n) for n in needed):
        log.info("unary lane unavailable (grpcio internals differ): Writes use the "
                 "thread pool")
        return None
    return UnaryLane(state, handlers)


class LanedServer:
    """A started grpcio server and its lane (if any): ``stop`` also ends the lane, once
    the server's calls are over. Everything else is the server's."""

    def __init__(self, server: grpc.Server, lane: UnaryLane | None,
                 on_stop: Callable[[], None] | None = None) -> None:
        """``on_stop``: run once the server's calls are over (``serve`` stops the
        device's memory reclaimer, which it started, there)."""
        self._server = server
        self._lane = lane
        self._on_stop = on_stop

    def __getattr__(self, name: str) -> Any:
        return getattr(self._server, name)

    @property
    def laned(self) -> bool:
        """Whether unary Writes take the lane (else the server's thread pool)."""
        return self._lane is not None

    def stop(self, grace: float | None) -> threading.Event:
        stopped = self._server.stop(grace)
        done = threading.Event()

        def close() -> None:
            stopped.wait()
            if self._lane is not None:
                self._lane.close()
            if self._on_stop is not None:
                self._on_stop()
            done.set()
        threading.Thread(target=close, name="p4rt-unary-stop", daemon=True).start()
        return done
