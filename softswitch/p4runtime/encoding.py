"""Protobuf wire encoding of Read results, built from cached bytes.

Building a stored entry's canonical message in Python is most of what a Read of many
entries costs (upb makes serializing it cheap, not building it). A stored entry's
serialized form is cached once, and responses are assembled from those bytes: a
length-delimited field is ``tag, varint length, bytes``, and concatenating encodings of
the same message merges them, which is how a live counter value is appended to a cached
entry.
"""

from __future__ import annotations

from collections.abc import Iterator

from google.protobuf.message import Message

from softswitch.p4runtime import entrywire

# Field tags (field number << 3 | wire type 2 = length-delimited).
ENTITY_TABLE_ENTRY = b"\x12"          # Entity.table_entry = 2
TABLE_ENTRY_COUNTER_DATA = b"\x3a"    # TableEntry.counter_data = 7
TABLE_ENTRY_TIME_SINCE_LAST_HIT = b"\x52"   # TableEntry.time_since_last_hit = 10
READ_RESPONSE_ENTITIES = b"\x0a"      # ReadResponse.entities = 1
# Updates decoded per C call (a batch is never held decoded whole: a Write of 250k
# updates would otherwise hold 250k tuples at once).
_DECODE_SLICE = 1024


_ONE_BYTE = tuple(bytes((i,)) for i in range(128))   # the varints below 128


def varint(n: int) -> bytes:
    """The protobuf varint of ``n`` >= 0 (most are one byte: a table lookup)."""
    if n < 128:
        return _ONE_BYTE[n]
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


def table_entry(table_id: int, match: bytes, action: bytes, priority: int = 0,
                idle_timeout_ns: int = 0) -> bytes:
    """A TableEntry, encoded as protobuf writes it (fields in number order, defaults
    omitted): table_id 1, ``match`` (its FieldMatch fields, already tagged 2), the
    encoded Action ``action`` in its TableAction (3, the action at 1), priority 4,
    idle_timeout_ns 9."""
    parts = [b"\x08" + varint(table_id), match, field(b"\x1a", field(b"\x0a", action))]
    if priority:
        parts.append(b"\x20" + varint(priority & 0xFFFFFFFFFFFFFFFF))
    if idle_timeout_ns:
        parts.append(b"\x48" + varint(idle_timeout_ns & 0xFFFFFFFFFFFFFFFF))
    return b"".join(parts)


def read_response(entities: list[bytes]) -> bytes:
    """A ReadResponse holding already-encoded entities."""
    return b"".join(field(READ_RESPONSE_ENTITIES, e) for e in entities)


def serialize(message: Message | bytes) -> bytes:
    """gRPC response serializer that passes pre-encoded bytes through."""
    if isinstance(message, bytes):
        return message
    return message.SerializeToString()


# ---------------------------------------------------------------------- lazy requests
class WireError(ValueError):
    """Bytes that are not a well-formed protobuf message."""


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise WireError("truncated or overlong varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def split(data: bytes, lazy_field: int) -> tuple[bytes, list[tuple[int, int]]]:
    """Split a serialized message into the encoding of every field but ``lazy_field``
    (parsed at once: cheap) and the (start, end) spans of ``lazy_field``'s
    length-delimited occurrences (parsed one by one, later — or never, when the
    request is refused first). WireError on malformed bytes.

    Done in C by entrywire's ``split`` where it is built (the Python loop's cost per
    update adds up over a big batch), else by :func:`split_python`: same result, same
    errors."""
    mod = entrywire.native()
    if mod is None:
        return split_python(data, lazy_field)
    try:
        return mod.split(data, lazy_field)  # type: ignore[no-any-return]
    except ValueError as exc:
        raise WireError(str(exc)) from None


def split_python(data: bytes, lazy_field: int) -> tuple[bytes, list[tuple[int, int]]]:
    """:func:`split` in Python (where entrywire cannot be built)."""
    head: list[bytes] = []
    spans: list[tuple[int, int]] = []
    pos, end = 0, len(data)
    while pos < end:
        start = pos
        tag = data[pos]
        if tag < 0x80:                   # one-byte tags (every field below 16): inline
            pos += 1
        else:
            tag, pos = _read_varint(data, pos)
        number, wire_type = tag >> 3, tag & 7
        if number == 0:
            raise WireError("field number 0")
        if wire_type == 0:
            _, pos = _read_varint(data, pos)
        elif wire_type == 1:
            pos += 8
        elif wire_type == 5:
            pos += 4
        elif wire_type == 2:
            length = data[pos] if pos < end else 0x80
            if length < 0x80:
                pos += 1
            else:
                length, pos = _read_varint(data, pos)
            if number == lazy_field:
                if pos + length > end:
                    raise WireError("truncated field")
                spans.append((pos, pos + length))
                pos += length
                continue
            pos += length
        else:
            raise WireError(f"unsupported wire type {wire_type}")
        if pos > end:
            raise WireError("truncated field")
        head.append(data[start:pos])
    return b"".join(head), spans


class LazyRequest:
    """A request whose one big repeated field (Write's ``updates``) is parsed only
    when iterated, one element at a time: the server checks the device, role and
    election id first, and never holds a whole parsed batch (a parsed update costs
    many times its encoding). Other attributes are the header message's; ``error`` is
    set (and the header empty) when the bytes are malformed."""

    def __init__(self, message_type: type, element_type: type, field_number: int,
                 data: bytes) -> None:
        self.size = len(data)
        self.error: str | None = None
        self._data = data
        self._element_type = element_type
        try:
            head, self._spans = split(data, field_number)
            self.header = message_type.FromString(head)
        except Exception as exc:  # noqa: BLE001 - malformed input, reported as such
            self.error = f"malformed {message_type.__name__}: {exc}"
            self.header, self._spans = message_type(), []

    def __getattr__(self, name: str) -> object:
        return getattr(self.header, name)

    def __len__(self) -> int:
        return len(self._spans)

    def element(self, i: int) -> object:
        """Element ``i``, parsed (a WireError if it does not parse)."""
        start, end = self._spans[i]
        try:
            return self._element_type.FromString(self._data[start:end])
        except Exception as exc:  # noqa: BLE001 - one bad element, reported alone
            return WireError(f"malformed {self._element_type.__name__}: {exc}")

    def plain_slices(self, plans: dict[int, tuple] | None = None
                     ) -> Iterator[tuple[int, list[object]]]:
        """The elements of a Write batch per slice of up to 1024, as (index of the
        first, items): each item a plain table-entry update decoded straight from the
        wire (a tuple, checked with ``plans`` where its table has one: see
        :mod:`entrywire`), or None for one that is not plain (:meth:`element` parses
        it). One C call decodes a slice."""
        spans = self._spans
        mod = entrywire.native()
        for start in range(0, len(spans), _DECODE_SLICE):
            part = spans[start:start + _DECODE_SLICE]
            yield start, (mod.decode(self._data, part, plans) if mod is not None
                          else [None] * len(part))

    def element_slices(self) -> Iterator[tuple[int, list[object]]]:
        """Every element, parsed (:meth:`element`), per slice of up to 1024 as (index
        of the first, elements)."""
        for start in range(0, len(self._spans), _DECODE_SLICE):
            yield start, [self.element(i) for i in
                          range(start, min(start + _DECODE_SLICE, len(self._spans)))]

    def parse_all(self) -> Message:
        """The whole request, parsed (once it is known to be worth it)."""
        message = type(self.header)()
        message.MergeFromString(self._data)
        return message

    def part(self, start: int, stop: int) -> LazyRequest:
        """The same request with elements ``start`` to ``stop`` only (sharing its bytes
        and header): a batch applied a few updates at a time."""
        view = object.__new__(LazyRequest)
        view.__dict__.update(self.__dict__)
        view._spans = self._spans[start:stop]
        view.size = sum(end - begin for begin, end in view._spans)
        return view

    def release(self) -> None:
        """Drop the raw bytes (the request is done)."""
        self._data, self._spans = b"", []
