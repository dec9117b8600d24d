"""The gRPC ``p4.v1.P4Runtime`` service of softswitch (``simple_switch_grpc``'s face).

Each RPC checks, in the specification's order (P4Runtime 1.4, Write and
SetForwardingPipelineConfig RPCs): unknown device or role NOT_FOUND, not the role's
primary PERMISSION_DENIED, no pipeline FAILED_PRECONDITION. Reads need no
arbitration; their role filters what they see. A request the server rejects ends
with its P4RuntimeError's code and message; a failed Write also carries one
``p4.v1.Error`` per update (PERMISSION_DENIED for an update outside the writer's
role).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch.daemon.device import Device
from softswitch.daemon.rpc import unary
from softswitch.memory import reclaim
from softswitch.p4runtime import encoding, errors
from softswitch.p4runtime.arbitration import Connection, election_id_of, role_name
from softswitch.p4runtime.write import Writes

SetAction = p4runtime_pb2.SetForwardingPipelineConfigRequest.Action
GetType = p4runtime_pb2.GetForwardingPipelineConfigRequest.ResponseType

API_VERSION = "1.4.1"
# The largest request the server accepts (gRPC answers RESOURCE_EXHAUSTED above it,
# before the server sees it): a device config of the default compile limits, or a
# Write batch of ~250k table entries, fits. softswitch run --max-request-bytes.
MAX_MESSAGE_BYTES = 16 << 20
log = logging.getLogger("softswitch.p4runtime")
_CLOSE = object()   # stream queue sentinel: the RPC is over
_WRITE_RESPONSE = p4runtime_pb2.WriteResponse().SerializeToString()   # it has no fields
_CAPABILITIES_RESPONSE = p4runtime_pb2.CapabilitiesResponse(
    p4runtime_api_version=API_VERSION).SerializeToString()


class P4RuntimeServicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    """Answers P4Runtime RPCs for one :class:`Device`."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.writes = Writes(device)

    # ------------------------------------------------------------------ unary RPCs
    def Capabilities(self, request: p4runtime_pb2.CapabilitiesRequest,  # noqa: N802
                     context: grpc.ServicerContext) -> bytes:
        """The CapabilitiesResponse, encoded (it never changes)."""
        return _CAPABILITIES_RESPONSE

    def Write(self, data: bytes,  # type: ignore[override]  # noqa: N802
              context: grpc.ServicerContext) -> bytes:
        """A Write from its bytes (p4runtime.write answers what it means): the
        (empty) WriteResponse, encoded, or the RPC ends with the request's error or
        with one ``p4.v1.Error`` per update."""
        try:
            failed = self.writes.write(data)
        except errors.P4RuntimeError as exc:
            context.abort(exc.code, exc.message)
        except Exception as exc:  # noqa: BLE001 - a softswitch bug: one line, no traceback
            _internal(context, exc)
        if failed is not None:
            errors.abort_with_details(context, errors.write_failure_bytes(failed))
        return _WRITE_RESPONSE

    def Read(self, request: p4runtime_pb2.ReadRequest,  # noqa: N802
             context: grpc.ServicerContext) -> Iterator[p4runtime_pb2.ReadResponse]:
        try:
            self.device.check_device(request.device_id)
            role = self.device.arbiter.roles.get(role_name(name=request.role))
            with self.device.lock:
                loaded = self.device.require_pipeline()
                scope = self.device.arbiter.roles.scope(role, loaded.runtime.index)
                wanted = [narrowed for entity in request.entities
                          for narrowed in scope.filter_read(entity)]
                entities = loaded.runtime.read_wire(wanted)
        except errors.P4RuntimeError as exc:
            context.abort(exc.code, exc.message)
        except Exception as exc:  # noqa: BLE001 - a softswitch bug: one line, no traceback
            _internal(context, exc)
        # Responses are assembled from encoded entities (the serializer passes bytes
        # through) and split so that none nears gRPC's 4 MiB default message limit.
        self.device.note_request(sum(map(len, entities)))
        for start in range(0, max(len(entities), 1), 1000):
            yield encoding.read_response(entities[start:start + 1000])  # type: ignore[misc]

    def SetForwardingPipelineConfig(  # noqa: N802
            self, lazy: encoding.LazyRequest,
            context: grpc.ServicerContext) -> p4runtime_pb2.SetForwardingPipelineConfigResponse:
        """The config (P4Info, program) is parsed only once the request passed the
        device, role and primary checks."""
        request = lazy.header
        try:
            if lazy.error is not None:
                raise errors.invalid(lazy.error)
            self.device.check_device(request.device_id)
            role = self.device.arbiter.check_writer(
                role_name(name=request.role, role_id=request.role_id),
                election_id_of(request))
            if not role.pipeline:
                raise errors.permission_denied(
                    f"role '{role.name}' may not set the forwarding pipeline (its "
                    "--role-config entry needs 'write: \"*\"' and 'pipeline: true')")
            if request.action == SetAction.UNSPECIFIED:
                raise errors.invalid("Invalid SetForwardingPipeline action")
            request = lazy.parse_all()
            lazy.release()
            self.device.set_pipeline(request)
        except errors.P4RuntimeError as exc:
            context.abort(exc.code, exc.message)
        except Exception as exc:  # noqa: BLE001 - a softswitch bug: one line, no traceback
            _internal(context, exc)
        finally:
            # the old pipeline's memory (its cycles: a full collection, see reclaim)
            self.device.note_request(reclaim.BIG_REQUEST_BYTES, pipeline=True)
        log.info("pipeline config set (action %s)", request.action)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(  # noqa: N802
            self, request: p4runtime_pb2.GetForwardingPipelineConfigRequest,
            context: grpc.ServicerContext) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
        try:
            self.device.check_device(request.device_id)
            if request.response_type not in GetType.values():
                raise errors.invalid("Invalid response_type in "
                                     "GetForwardingPipelineConfigRequest")
            config = self.device.get_pipeline(request.response_type)
        except errors.P4RuntimeError as exc:
            context.abort(exc.code, exc.message)
        except Exception as exc:  # noqa: BLE001 - a softswitch bug: one line, no traceback
            _internal(context, exc)
        response = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        if config is not None:
            response.config.CopyFrom(config)
        return response

    # ------------------------------------------------------------------ StreamChannel
    def StreamChannel(self, request_iterator: Iterator[p4runtime_pb2.StreamMessageRequest],  # noqa: N802
                      context: grpc.ServicerContext
                      ) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        outbox: queue.Queue[object] = queue.Queue()
        conn = Connection(send=outbox.put, backlog=outbox.qsize)
        context.add_callback(lambda: outbox.put(_CLOSE))
        reader = threading.Thread(target=self._read_stream, name=f"p4rt-stream-{conn.id}",
                                  args=(conn, request_iterator, outbox), daemon=True)
        reader.start()
        try:
            while True:
                item = outbox.get()
                if item is _CLOSE:
                    return
                if isinstance(item, errors.P4RuntimeError):
                    context.abort(item.code, item.message)
                yield item  # type: ignore[misc]
        finally:
            self.device.arbiter.disconnect(conn)

    def _read_stream(self, conn: Connection,
                     requests: Iterator[p4runtime_pb2.StreamMessageRequest],
                     outbox: queue.Queue[object]) -> None:
        """Handle a client's stream messages; errors that end the stream go to outbox."""
        try:
            for request in requests:
                which = request.WhichOneof("update")
                if which == "arbitration":
                    self.device.arbiter.arbitrate(conn, request.arbitration)
                elif which == "packet":
                    self._packet_out(conn, request.packet)
                elif which == "digest_ack":
                    self._digest_ack(conn, request.digest_ack)
                else:
                    conn.send(_stream_error(errors.unimplemented(
                        f"stream message '{which}' is not supported")))
        except errors.P4RuntimeError as exc:
            outbox.put(exc)
            return
        except grpc.RpcError as exc:
            # The client went away. grpcio keeps the error in the call's state, which
            # the traceback's frames reference: a cycle the server's frozen heap would
            # keep for good (tests/test_p4runtime_cycles.py); without the traceback,
            # reference counting frees it all with the stream.
            exc.__traceback__ = None
        except Exception as exc:  # noqa: BLE001 - a softswitch bug ends this stream only
            log.error("internal error on a stream: %s: %s", type(exc).__name__, exc)
            outbox.put(errors.internal(f"internal error: {type(exc).__name__}: {exc}"))
            return
        outbox.put(_CLOSE)

    def _packet_out(self, conn: Connection, packet: p4runtime_pb2.PacketOut) -> None:
        try:
            self.device.packet_out(conn, packet)
        except Exception as exc:  # noqa: BLE001 - reported on the stream, which goes on
            if not isinstance(exc, errors.P4RuntimeError):
                log.error("internal error on PacketOut: %s: %s", type(exc).__name__, exc)
                exc = errors.internal(f"internal error: {type(exc).__name__}: {exc}")
            error = _stream_error(exc)
            error.error.packet_out.packet_out.CopyFrom(packet)
            conn.send(error)

    def _digest_ack(self, conn: Connection, ack: p4runtime_pb2.DigestListAck) -> None:
        try:
            self.device.digest_ack(conn, ack)
        except errors.P4RuntimeError as exc:
            error = _stream_error(exc)
            error.error.digest_list_ack.digest_list_ack.CopyFrom(ack)
            conn.send(error)


def _internal(context: grpc.ServicerContext, exc: Exception) -> None:
    """End an RPC that hit a softswitch bug with INTERNAL (logged in one line)."""
    log.error("internal error: %s: %s", type(exc).__name__, exc)
    context.abort(grpc.StatusCode.INTERNAL, f"internal error: {type(exc).__name__}: {exc}")


def _stream_error(exc: errors.P4RuntimeError) -> p4runtime_pb2.StreamMessageResponse:
    message = p4runtime_pb2.StreamMessageResponse()
    message.error.canonical_code = errors.rpc_code(exc.code)
    message.error.message = exc.message
    return message


def _write_handler(servicer: P4RuntimeServicer) -> unary.Handler:
    """Write as (deserializer, behavior, serializer): the request stays bytes until
    ``Write`` looks at it."""
    return (unary.as_bytes, servicer.Write, encoding.serialize)


def _lane_handlers(servicer: P4RuntimeServicer) -> dict[str, unary.Handler]:
    """The RPCs the unary lane answers (short, unary, and Write the hot one)."""
    pb = p4runtime_pb2
    return {"/p4.v1.P4Runtime/Write": _write_handler(servicer),
            "/p4.v1.P4Runtime/Capabilities": (pb.CapabilitiesRequest.FromString,
                                              servicer.Capabilities, encoding.serialize)}


def _handlers(servicer: P4RuntimeServicer) -> grpc.GenericRpcHandler:
    """The service's method table, as the generated code builds it, except that
    Read's responses may be pre-encoded bytes (see :mod:`wire`)."""
    pb = p4runtime_pb2
    deserialize, write, serialize = _write_handler(servicer)
    methods = {
        "Write": grpc.unary_unary_rpc_method_handler(write, deserialize, serialize),
        "Read": grpc.unary_stream_rpc_method_handler(
            servicer.Read, pb.ReadRequest.FromString, encoding.serialize),
        "SetForwardingPipelineConfig": grpc.unary_unary_rpc_method_handler(
            servicer.SetForwardingPipelineConfig,
            lambda data: encoding.LazyRequest(pb.SetForwardingPipelineConfigRequest,
                                          p4runtime_pb2.ForwardingPipelineConfig, 5, data),
            pb.SetForwardingPipelineConfigResponse.SerializeToString),
        "GetForwardingPipelineConfig": grpc.unary_unary_rpc_method_handler(
            servicer.GetForwardingPipelineConfig,
            pb.GetForwardingPipelineConfigRequest.FromString,
            pb.GetForwardingPipelineConfigResponse.SerializeToString),
        "StreamChannel": grpc.stream_stream_rpc_method_handler(
            servicer.StreamChannel, pb.StreamMessageRequest.FromString,
            pb.StreamMessageResponse.SerializeToString),
        "Capabilities": grpc.unary_unary_rpc_method_handler(
            servicer.Capabilities, pb.CapabilitiesRequest.FromString, encoding.serialize),
    }
    return grpc.method_handlers_generic_handler("p4.v1.P4Runtime", methods)


class ServerError(Exception):
    """The server could not start (e.g. the address is taken)."""


@dataclass(frozen=True)
class TlsConfig:
    """TLS of the P4Runtime server (``simple_switch_grpc --grpc-server-ssl …``): PEM
    bytes of the server's certificate chain and key, and of the CA that client
    certificates must chain to when ``client_auth`` is set."""

    cert: bytes
    key: bytes
    ca: bytes | None = None
    client_auth: bool = False

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials([(self.key, self.cert)], root_certificates=self.ca,
                                           require_client_auth=self.client_auth)


def serve(device: Device, address: str = "127.0.0.1:9559",
          workers: int = 32, tls: TlsConfig | None = None,
          max_message_bytes: int = MAX_MESSAGE_BYTES) -> tuple[grpc.Server, int]:
    """Start the gRPC server on ``address`` (port 0 picks one); returns it and its port.

    Each open StreamChannel holds one worker thread, hence the generous pool. A
    request larger than ``max_message_bytes`` is refused by gRPC with
    RESOURCE_EXHAUSTED before the server parses it."""
    pool = futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="p4rt")
    server = grpc.server(pool,
                         options=[("grpc.max_receive_message_length", max_message_bytes),
                                  ("grpc.max_send_message_length", 64 << 20),
                                  ("grpc.so_reuseport", 0)])
    servicer = P4RuntimeServicer(device)
    lane = unary.attach(server, _lane_handlers(servicer))
    server.add_generic_rpc_handlers((_handlers(servicer),))
    device.start_reclaimer()
    try:
        if tls is None:
            port = server.add_insecure_port(address)
        else:
            port = server.add_secure_port(address, tls.credentials())
    except RuntimeError as exc:
        raise ServerError(f"cannot listen on {address}: {exc}") from None
    if port == 0:
        raise ServerError(f"cannot listen on {address}")
    server.start()
    if lane is not None:
        lane.start()

    def stopped() -> None:
        # a stopped server leaves no reclaimer nor worker threads behind (an embedding
        # process, a test suite, would otherwise keep them per server)
        device.stop_reclaimer()
        pool.shutdown(wait=False)
    return unary.LanedServer(server, lane, on_stop=stopped), port  # type: ignore[return-value]
