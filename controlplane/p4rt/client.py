"""One P4Runtime session with one device: connect, arbitrate, pipeline, Read, Write.

The stream channel stays open for the session's lifetime (a P4Runtime server forgets
a client's primary role when its stream closes), so a background thread reads it:
arbitration answers, PacketIns and digests land in queues the caller can poll.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeAlias

import grpc
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from controlplane.p4rt.entities import to_entity
from controlplane.p4rt.errors import P4RuntimeClientError, from_rpc_error
from controlplane.p4rt.tls import TlsConfig

Update: TypeAlias = p4runtime_pb2.Update
_STOP = object()

# A failed Write names each update's error in its trailers (grpc-status-details-bin,
# one p4.v1.Error per update, ~100 bytes each). gRPC's default limit on received
# metadata, 16 KiB, cuts a batch's answer off past ~160 failed updates
# (RESOURCE_EXHAUSTED "received metadata size exceeds hard limit", from softswitch and
# BMv2 alike), losing which updates failed. 32 MiB holds the errors of ~300k updates,
# more than a 16 MiB request (softswitch's limit) can carry.
# BMv2 answers a Read in one ReadResponse, whatever the table's size (~60 B an LPM
# route), so past ~70k entries it exceeds gRPC's default 4 MiB for a received message
# (RESOURCE_EXHAUSTED "Received message larger than max") and `tailcc apply` cannot
# read the switch it reconciles. softswitch streams a Read in responses of 1,000
# entities. 256 MiB holds a few million routes.
CHANNEL_OPTIONS = [("grpc.max_metadata_size", 32 << 20),
                   ("grpc.max_receive_message_length", 256 << 20)]


@dataclass(frozen=True)
class Arbitration:
    """The answer to our MasterArbitrationUpdate."""

    primary: bool
    election_id: int     # the current primary's election id as the server reports it
    message: str


class Client:
    """A P4Runtime client for ``device_id`` at ``address``.

    ``with Client(addr, 1, election_id=10) as c: c.write(...)`` connects and arbitrates;
    use ``require_primary=False`` to run as a backup (reads only).
    """

    def __init__(self, address: str, device_id: int, election_id: int = 1,
                 role: str | None = None, timeout: float = 10.0,
                 atomic_writes: bool | None = None, tls: TlsConfig | None = None) -> None:
        self.address = address
        self.tls = tls            # None: plaintext, as simple_switch_grpc serves by default
        # Does the target grant ROLLBACK_ON_ERROR batches? None: learn it (once per
        # session, see grants_atomic_writes); False: never ask, the controller rolls
        # back itself (controlplane.p4rt.rollback).
        self._atomic_option = atomic_writes
        self.atomic_writes = atomic_writes
        self.device_id = device_id
        self.election_id = election_id
        self.role = role
        self.timeout = timeout
        self.arbitration: Arbitration | None = None
        self.packet_ins: queue.Queue[p4runtime_pb2.PacketIn] = queue.Queue()
        self.digests: queue.Queue[p4runtime_pb2.DigestList] = queue.Queue()
        self._channel: grpc.Channel | None = None
        self._stub: p4runtime_pb2_grpc.P4RuntimeStub | None = None
        self._requests: queue.Queue[Any] = queue.Queue()
        self._arb_answers: queue.Queue[p4runtime_pb2.StreamMessageResponse | Exception] = \
            queue.Queue()
        self._reader: threading.Thread | None = None
        self._stream: Any = None

    # --- session -----------------------------------------------------------------------
    def connect(self, require_primary: bool = True, retries: int = 0,
                backoff: float = 0.5) -> Arbitration:
        """Open the channel and the stream, send arbitration, wait for the answer.

        A refusal of the election id as already in use is retried for up to
        :data:`STALE_STREAM_WAIT` seconds whatever ``retries`` says: the holder is most
        often this controller's previous session, whose stream the server has not yet
        seen end (a command run twice in a row, on a busy machine)."""
        attempt = 0
        stale_until = time.monotonic() + STALE_STREAM_WAIT
        while True:
            try:
                return self._connect_once(require_primary)
            except P4RuntimeClientError as exc:
                self.close()
                if _election_id_in_use(exc) and time.monotonic() < stale_until:
                    time.sleep(0.1)
                    continue
                if attempt >= retries or exc.code not in (grpc.StatusCode.UNAVAILABLE,
                                                          grpc.StatusCode.DEADLINE_EXCEEDED):
                    raise
                attempt += 1
                time.sleep(backoff * attempt)

    def _connect_once(self, require_primary: bool) -> Arbitration:
        self.atomic_writes = self._atomic_option     # a new session may be a new server
        if self.tls is None:
            self._channel = grpc.insecure_channel(self.address, options=CHANNEL_OPTIONS)
        else:
            self._channel = grpc.secure_channel(self.address, self.tls.credentials(),
                                                options=CHANNEL_OPTIONS + self.tls.options())
        try:
            grpc.channel_ready_future(self._channel).result(timeout=self.timeout)
        except grpc.FutureTimeoutError:
            hint = (" over TLS (a plaintext server, a certificate the CA does not sign, or "
                    "a refused client certificate look the same)" if self.tls else "")
            raise P4RuntimeClientError(f"{self.address}: no P4Runtime server answers{hint} "
                                       f"(waited {self.timeout:g} s)",
                                       grpc.StatusCode.UNAVAILABLE) from None
        self._stub = p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        self._requests = queue.Queue()
        self._arb_answers = queue.Queue()
        self._stream = self._stub.StreamChannel(self._request_iter())
        self._reader = threading.Thread(target=self._read_stream, daemon=True,
                                        name=f"p4rt-stream-{self.address}")
        self._reader.start()
        arbitration = self.arbitrate(self.election_id)
        if require_primary and not arbitration.primary:
            raise P4RuntimeClientError(
                f"{self.address} device {self.device_id}: not primary (election id "
                f"{self.election_id}; {arbitration.message})",
                grpc.StatusCode.PERMISSION_DENIED)
        return arbitration

    def arbitrate(self, election_id: int) -> Arbitration:
        """Send (or re-send) a MasterArbitrationUpdate and return the verdict."""
        self.election_id = election_id
        req = p4runtime_pb2.StreamMessageRequest()
        arb = req.arbitration
        arb.device_id = self.device_id
        arb.election_id.high, arb.election_id.low = election_id >> 64, election_id & (2**64 - 1)
        if self.role:
            arb.role.name = self.role
        self._requests.put(req)
        try:
            answer = self._arb_answers.get(timeout=self.timeout)
        except queue.Empty:
            raise P4RuntimeClientError(f"{self.address}: no arbitration answer",
                                       grpc.StatusCode.DEADLINE_EXCEEDED) from None
        if isinstance(answer, Exception):
            raise answer
        got = answer.arbitration
        primary = got.status.code == code_pb2.OK
        current = (got.election_id.high << 64) | got.election_id.low
        self.arbitration = Arbitration(primary, current, got.status.message)
        return self.arbitration

    def _request_iter(self) -> Iterator[Any]:
        while True:
            item = self._requests.get()
            if item is _STOP:
                return
            yield item

    def _read_stream(self) -> None:
        """Route stream messages; a broken stream wakes anybody waiting for arbitration."""
        try:
            for msg in self._stream:
                kind = msg.WhichOneof("update")
                if kind == "arbitration":
                    self._arb_answers.put(msg)
                elif kind == "packet":
                    self.packet_ins.put(msg.packet)
                elif kind == "digest":
                    self.digests.put(msg.digest)
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.CANCELLED:
                self._arb_answers.put(from_rpc_error(err, f"{self.address}: stream"))

    def send_packet_out(self, payload: bytes, metadata: Iterable[tuple[int, bytes]] = ()
                        ) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.packet.payload = payload
        for mid, value in metadata:
            req.packet.metadata.add(metadata_id=mid, value=value)
        self._requests.put(req)

    def send_stream(self, request: p4runtime_pb2.StreamMessageRequest) -> None:
        """Queue any stream message (e.g. a DigestListAck) behind earlier ones."""
        self._requests.put(request)

    def close(self, wait: float = 0.0) -> None:
        """End the stream (the server drops our role) and the channel.

        With ``wait`` > 0 the stream is half-closed first and the server gets up to
        ``wait`` seconds to end it: once it has, it has forgotten this client's
        arbitration, so a client that connects right after with the same election id
        (the next test of a suite) is not refused with "election id already exists".
        """
        self._requests.put(_STOP)
        if wait > 0 and self._reader is not None:
            self._reader.join(timeout=wait)
        if self._stream is not None:
            self._stream.cancel()
        if self._reader is not None:
            self._reader.join(timeout=2)
        if self._channel is not None:
            # grpc's Channel.close() waits for its polling thread's next wake-up: the
            # session is over once the stream is cancelled, so nobody needs to wait for
            # that. Closing in the background spares every command and every reconcile
            # round that wait.
            threading.Thread(target=self._channel.close, daemon=True,
                             name=f"p4rt-close-{self.address}").start()
        self._stream = self._reader = self._channel = self._stub = None

    def reconnect(self, retries: int = 5, backoff: float = 0.5) -> Arbitration:
        """Close and connect again (after a server restart or a broken stream)."""
        self.close()
        return self.connect(retries=retries, backoff=backoff)

    def __enter__(self) -> Client:
        if self._stub is None:
            self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- RPCs --------------------------------------------------------------------------
    @property
    def stub(self) -> p4runtime_pb2_grpc.P4RuntimeStub:
        if self._stub is None:
            raise P4RuntimeClientError(f"{self.address}: not connected")
        return self._stub

    def _election(self, msg: Any) -> None:
        msg.election_id.high = self.election_id >> 64
        msg.election_id.low = self.election_id & (2**64 - 1)
        if self.role:
            msg.role = self.role

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes = b"",
                     cookie: int = 0, action: str = "VERIFY_AND_COMMIT") -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.Action.Value(action))
        self._election(req)
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = cookie
        try:
            self.stub.SetForwardingPipelineConfig(req, timeout=self.timeout * 6)
        except grpc.RpcError as err:
            raise from_rpc_error(err, f"{self.address}: SetForwardingPipelineConfig") from None

    def get_p4info(self) -> p4info_pb2.P4Info | None:
        """The device's P4Info, or None when no pipeline is loaded."""
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        try:
            resp = self.stub.GetForwardingPipelineConfig(req, timeout=self.timeout)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.FAILED_PRECONDITION:
                return None
            raise from_rpc_error(err, f"{self.address}: GetForwardingPipelineConfig") from None
        return resp.config.p4info if resp.config.HasField("p4info") else None

    def read(self, entities: Iterable[Any]) -> Iterator[p4runtime_pb2.Entity]:
        """Read with filters (zero ids/empty keys are wildcards), streaming results."""
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        if self.role:
            req.role = self.role
        for e in entities:
            req.entities.append(to_entity(e))
        try:
            for resp in self.stub.Read(req, timeout=self.timeout * 6):
                yield from resp.entities
        except grpc.RpcError as err:
            raise from_rpc_error(err, f"{self.address}: Read") from None

    def write(self, updates: list[Update], atomicity: str = "CONTINUE_ON_ERROR") -> None:
        """One Write RPC; on failure the error names each refused update."""
        if not updates:
            return
        req = p4runtime_pb2.WriteRequest(
            device_id=self.device_id, updates=updates,
            atomicity=p4runtime_pb2.WriteRequest.Atomicity.Value(atomicity))
        self._election(req)
        try:
            self.stub.Write(req, timeout=self.timeout * 6)
        except grpc.RpcError as err:
            raise from_rpc_error(err, f"{self.address}: Write") from None

    def write_batches(self, updates: list[Update], batch_size: int = 500) -> int:
        """Write in batches, all or nothing across them: a refused update rolls back
        every batch already written (see :mod:`controlplane.p4rt.rollback`)."""
        from controlplane.p4rt.rollback import Transaction

        return Transaction(self, batch_size=batch_size).write(updates)

    def grants_atomic_writes(self) -> bool:
        """Whether the target accepts ROLLBACK_ON_ERROR batches, learned once per
        session: an empty atomic WriteRequest is answered OK where the mode is granted
        and UNIMPLEMENTED by BMv2's simple_switch_grpc, which grants only
        CONTINUE_ON_ERROR. Any other answer leaves it open; the first real atomic batch
        then decides (an UNIMPLEMENTED answer to it is retried without atomicity)."""
        if self.atomic_writes is None:
            req = p4runtime_pb2.WriteRequest(
                device_id=self.device_id,
                atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
            self._election(req)
            try:
                self.stub.Write(req, timeout=self.timeout)
                self.atomic_writes = True
            except grpc.RpcError as err:
                if err.code() == grpc.StatusCode.UNIMPLEMENTED:
                    self.atomic_writes = False
                else:
                    return True
        return self.atomic_writes

def update(kind: str, message: Any) -> Update:
    """``update("INSERT", table_entry)`` — an Update of a built entity."""
    return Update(type=Update.Type.Value(kind), entity=to_entity(message))


STALE_STREAM_WAIT = 3.0     # seconds a refused election id is retried (see Client.connect)


def _election_id_in_use(exc: P4RuntimeClientError) -> bool:
    """The server refused the stream's election id as held by another stream (PI's
    words, and softswitch's)."""
    return exc.code == grpc.StatusCode.INVALID_ARGUMENT and \
        "election id already exists" in str(exc).lower()
