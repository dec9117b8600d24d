"""Digest duplicate suppression, as the P4Runtime DigestEntry config asks.

A learning switch digests every packet of an unknown flow; the controller must not
be flooded with the same data. Once a value is sent in a DigestList it is not sent
again until the controller acks that list or ``ack_timeout_ns`` passes (an
``ack_timeout_ns`` of 0 turns suppression off).
"""

from __future__ import annotations

from dataclasses import dataclass, field


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
