"""Big-endian bit fields at arbitrary bit offsets: the wire format of P4 headers.

A P4 header is a run of fields laid out most-significant-bit first with no padding, so
a packet is read and written as one big integer slice per header rather than field by
field: Python's ``int.from_bytes`` on the covering bytes and a shift per field is far
cheaper than bit loops. :class:`PacketReader` is the parser's cursor (extract,
lookahead, advance); :class:`BitWriter` collects what the deparser emits.
"""

from __future__ import annotations


class PacketTooShort(Exception):
    """Raised by :class:`PacketReader` when the packet ends before the requested bits.

    The pipeline turns it into ``error.PacketTooShort`` (a parser error), never a user
    message, so it is not a :class:`~softswitch.diagnostics.P4Error`.
    """


def to_signed(value: int, width: int) -> int:
    """Interpret the low ``width`` bits of ``value`` as two's complement."""
    if width <= 0:
        return 0
    value &= (1 << width) - 1
    if value >> (width - 1):
        return value - (1 << width)
    return value


def split_fields(value: int, widths: tuple[int, ...]) -> list[int]:
    """Split the integer of a header's bits into its fields (first field = most significant)."""
    out = [0] * len(widths)
    for i in range(len(widths) - 1, -1, -1):
        w = widths[i]
        out[i] = value & ((1 << w) - 1)
        value >>= w
    return out


def join_fields(values: list[int], widths: tuple[int, ...]) -> int:
    """Inverse of :func:`split_fields` (values are masked to their widths)."""
    acc = 0
    for v, w in zip(values, widths, strict=True):
        acc = (acc << w) | (v & ((1 << w) - 1))
    return acc


class PacketReader:
    """A cursor over packet bytes at bit granularity."""

    __slots__ = ("data", "bit_pos", "total_bits")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.bit_pos = 0
        self.total_bits = len(data) * 8

    def remaining_bits(self) -> int:
        return self.total_bits - self.bit_pos

    def peek(self, width: int, at: int | None = None) -> int:
        """The ``width`` bits starting at the cursor (or ``at``) without consuming them."""
        start_bit = self.bit_pos if at is None else at
        end_bit = start_bit + width
        if end_bit > self.total_bits:
            raise PacketTooShort()
        if width == 0:
            return 0
        start = start_bit >> 3
        end = (end_bit + 7) >> 3
        v = int.from_bytes(self.data[start:end], "big")
        return (v >> ((end << 3) - end_bit)) & ((1 << width) - 1)

    def read(self, width: int) -> int:
        """Consume ``width`` bits and return them as an unsigned integer."""
        v = self.peek(width)
        self.bit_pos += width
        return v

    def advance(self, width: int) -> None:
        """Skip ``width`` bits (BMv2 fails with PacketTooShort past the end)."""
        if self.bit_pos + width > self.total_bits:
            raise PacketTooShort()
        self.bit_pos += width

    def rest(self) -> bytes:
        """The unparsed payload (from the next whole byte at or after the cursor)."""
        return self.data[(self.bit_pos + 7) >> 3:]


class BitWriter:
    """Accumulates emitted bits; :meth:`to_bytes` pads a trailing partial byte with zeros."""

    __slots__ = ("acc", "nbits")

    def __init__(self) -> None:
        self.acc = 0
        self.nbits = 0

    def write(self, value: int, width: int) -> None:
        if width:
            self.acc = (self.acc << width) | (value & ((1 << width) - 1))
            self.nbits += width

    def to_bytes(self) -> bytes:
        pad = (-self.nbits) % 8
        return (self.acc << pad).to_bytes((self.nbits + pad) // 8, "big")
