"""The link between the P4Runtime front end process and the switch: framed Writes.

With ``softswitch run -- --p4runtime-process`` (:mod:`softswitch.daemon.process.service`)
the gRPC service is served by a process of its own, and each Write reaches the switch
as one frame on a unix socket that the port loop reads (:mod:`process.writes`). A frame
is a 4-byte big-endian length and that many bytes:

* request: one byte, the method (:data:`WRITE`, :data:`CAPABILITIES`), then the
  request message as the client encoded it;
* reply: one byte, the gRPC status code; the details (4-byte length, UTF-8); the
  trailing metadata (2-byte count, then per pair a 2-byte key length, the key, a
  4-byte value length, the value); then the response message (OK only).

One request is outstanding per connection: the front end waits for each reply.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from softswitch.daemon.rpc.unary import Trailing

WRITE = 1
CAPABILITIES = 2
METHODS = {WRITE: "/p4.v1.P4Runtime/Write",
           CAPABILITIES: "/p4.v1.P4Runtime/Capabilities"}
_LEN = struct.Struct("!I")


class LinkError(Exception):
    """The other side closed the link, or sent what is not a frame."""


@dataclass(frozen=True)
class Reply:
    """An RPC's outcome as gRPC would send it: status code (0 OK), details, trailing
    metadata, and the response message (OK only)."""

    code: int
    details: str = ""
    trailing: Trailing = ()
    response: bytes = b""

    def encode(self) -> bytes:
        details = self.details.encode("utf-8", "replace")
        parts = [struct.pack("!BI", self.code, len(details)), details,
                 struct.pack("!H", len(self.trailing))]
        for key, value in self.trailing:
            raw = key.encode("ascii", "replace")
            parts += [struct.pack("!H", len(raw)), raw, _LEN.pack(len(value)), value]
        parts.append(self.response)
        return frame(b"".join(parts))

    @classmethod
    def decode(cls, body: bytes) -> Reply:
        try:
            code, size = struct.unpack_from("!BI", body)
            at = 5 + size
            details = body[5:at].decode("utf-8", "replace")
            (count,) = struct.unpack_from("!H", body, at)
            at += 2
            trailing = []
            for _ in range(count):
                (klen,) = struct.unpack_from("!H", body, at)
                key = body[at + 2:at + 2 + klen].decode("ascii", "replace")
                at += 2 + klen
                (vlen,) = _LEN.unpack_from(body, at)
                trailing.append((key, bytes(body[at + 4:at + 4 + vlen])))
                at += 4 + vlen
        except struct.error:
            raise LinkError("the switch sent a malformed reply") from None
        return cls(code, details, tuple(trailing), bytes(body[at:]))


def frame(body: bytes) -> bytes:
    return _LEN.pack(len(body)) + body


def take_frame(buffer: bytearray, limit: int) -> bytes | None:
    """The first complete frame's body, removed from ``buffer``; None while incomplete.
    LinkError for a frame longer than ``limit``."""
    if len(buffer) < 4:
        return None
    (size,) = _LEN.unpack_from(buffer)
    if size > limit:
        raise LinkError(f"a frame of {size} bytes (at most {limit})")
    if len(buffer) < 4 + size:
        return None
    body = bytes(buffer[4:4 + size])
    del buffer[:4 + size]
    return body
