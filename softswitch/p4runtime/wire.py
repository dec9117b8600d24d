"""Protobuf wire encoding of Read results, built from cached bytes.

Building a stored entry's canonical message in Python is most of what a Read of many
entries costs (upb makes serializing it cheap, not building it). A stored entry's
serialized form is cached once, and responses are assembled from those bytes: a
length-delimited field is ``tag, varint length, bytes``, and concatenating encodings of
the same message merges them, which is how a live counter value is appended to a cached
entry.
"""

from __future__ import annotations

from google.protobuf.message import Message

# Field tags (field number << 3 | wire type 2 = length-delimited).
ENTITY_TABLE_ENTRY = b"\x12"          # Entity.table_entry = 2
TABLE_ENTRY_COUNTER_DATA = b"\x3a"    # TableEntry.counter_data = 7
TABLE_ENTRY_TIME_SINCE_LAST_HIT = b"\x52"   # TableEntry.time_since_last_hit = 10
READ_RESPONSE_ENTITIES = b"\x0a"      # ReadResponse.entities = 1


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(tag: bytes, payload: bytes) -> bytes:
    """One length-delimited field."""
    return tag + varint(len(payload)) + payload


def read_response(entities: list[bytes]) -> bytes:
    """A ReadResponse holding already-encoded entities."""
    return b"".join(field(READ_RESPONSE_ENTITIES, e) for e in entities)


def serialize(message: Message | bytes) -> bytes:
    """gRPC response serializer that passes pre-encoded bytes through."""
    if isinstance(message, bytes):
        return message
    return message.SerializeToString()
