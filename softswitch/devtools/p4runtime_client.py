"""A small P4Runtime client: one StreamChannel driven from a thread, for tests, the
benchmark and scripts that need arbitration and packet I/O without p4runtime-shell."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc


class StreamClient:
    """One StreamChannel: send requests, wait for responses."""

    def __init__(self, channel: grpc.Channel) -> None:
        self._requests: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        self.responses: queue.Queue[object] = queue.Queue()
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        self._call = stub.StreamChannel(self._iter())
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _iter(self) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        while True:
            item = self._requests.get()
            if item is None:
                return
            yield item

    def _pump(self) -> None:
        try:
            for response in self._call:
                self.responses.put(response)
        except grpc.RpcError as exc:
            self.responses.put(exc)

    def send(self, request: p4runtime_pb2.StreamMessageRequest) -> None:
        self._requests.put(request)

    def arbitrate(self, election_id: int | None, device_id: int = 0, role: str = "") -> None:
        update = p4runtime_pb2.MasterArbitrationUpdate(device_id=device_id)
        if election_id is not None:
            update.election_id.high = election_id >> 64
            update.election_id.low = election_id & ((1 << 64) - 1)
        if role:
            update.role.name = role
        self.send(p4runtime_pb2.StreamMessageRequest(arbitration=update))

    def next(self, timeout: float = 5.0) -> object:
        return self.responses.get(timeout=timeout)

    def close(self) -> None:
        self._requests.put(None)
        self._call.cancel()
