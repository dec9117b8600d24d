"""Digests to the controller: DigestList messages and duplicate suppression.

Digests flow only for digest types a controller configured (DigestEntry). Each one
becomes a DigestList of one item, sent at once. A learning switch digests every
packet of an unknown flow and the controller must not be flooded with the same data,
so once a value is sent it is not sent again until the controller acks that list or
``ack_timeout_ns`` passes (an ``ack_timeout_ns`` of 0 turns suppression off).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from p4.config.v1 import p4info_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2

from softswitch.p4runtime import bytestrings

if TYPE_CHECKING:
    from softswitch.p4runtime.runtime import PipelineRuntime


@dataclass
class DigestSuppressor:
    """Values sent and not yet acked, per digest id."""

    _until: dict[tuple[int, bytes], int] = field(default_factory=dict)
    _lists: dict[tuple[int, int], list[bytes]] = field(default_factory=dict)

    def should_send(self, digest_id: int, value: bytes, ack_timeout_ns: int,
                    now_ns: int) -> bool:
        if ack_timeout_ns <= 0:
            return True
        until = self._until.get((digest_id, value))
        return until is None or until <= now_ns

    def sent(self, digest_id: int, list_id: int, values: list[bytes], ack_timeout_ns: int,
             now_ns: int) -> None:
        if ack_timeout_ns <= 0:
            return
        for value in values:
            self._until[(digest_id, value)] = now_ns + ack_timeout_ns
        self._lists[(digest_id, list_id)] = values
        if len(self._lists) > 100_000:       # lists never acked: forget the oldest
            self._lists.pop(next(iter(self._lists)))

    def ack(self, digest_id: int, list_id: int) -> None:
        for value in self._lists.pop((digest_id, list_id), []):
            self._until.pop((digest_id, value), None)

    def lists(self, runtime: PipelineRuntime, drained: list[tuple[str, list[int]]],
              list_ids: Iterator[int]) -> list[p4runtime_pb2.StreamMessageResponse]:
        """The DigestList messages for digests the switch produced (type name, values)."""
        by_name = {d.preamble.name: d for d in runtime.index.all("digests")}
        out = []
        for name, values in drained:
            info = by_name.get(name)
            if info is None or info.preamble.id not in runtime.digest_configs:
                continue
            did = info.preamble.id
            timeout = runtime.digest_configs[did].ack_timeout_ns
            data = _digest_data(info, values)
            key = data.SerializeToString()
            now = time.time_ns()
            if not self.should_send(did, key, timeout, now):
                continue
            message = p4runtime_pb2.StreamMessageResponse()
            digest = message.digest
            digest.digest_id, digest.list_id, digest.timestamp = did, next(list_ids), now
            digest.data.add().CopyFrom(data)
            self.sent(did, digest.list_id, [key], timeout, now)
            out.append(message)
        return out


def _digest_data(info: p4info_pb2.Digest, values: list[int]) -> p4data_pb2.P4Data:
    """A digest's values as P4Data: a bitstring, or a struct of bitstrings."""
    data = p4data_pb2.P4Data()
    if len(values) == 1 and info.type_spec.WhichOneof("type_spec") == "bitstring":
        data.bitstring = bytestrings.encode(values[0])
        return data
    for value in values:
        data.struct.members.add(bitstring=bytestrings.encode(value))
    return data
