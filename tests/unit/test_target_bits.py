"""Bit-level packet reading and writing used by extract/emit."""

import pytest

from softswitch.core.bits import (
    BitWriter,
    PacketReader,
    PacketTooShort,
    join_fields,
    split_fields,
    to_signed,
)


def test_read_unaligned_fields():
    r = PacketReader(bytes([0b1010_1100, 0b0011_1111]))
    assert r.read(3) == 0b101
    assert r.read(7) == 0b0_1100_00
    assert r.read(6) == 0b11_1111
    assert r.remaining_bits() == 0


def test_peek_does_not_consume_and_short_packet_raises():
    r = PacketReader(b"\x12\x34")
    assert r.peek(8) == 0x12
    assert r.read(16) == 0x1234
    with pytest.raises(PacketTooShort):
        r.read(1)
    with pytest.raises(PacketTooShort):
        r.advance(1)


def test_writer_pads_trailing_bits():
    w = BitWriter()
    w.write(0b101, 3)
    w.write(0x1F, 5)
    w.write(0x3, 4)
    assert w.to_bytes() == bytes([0b101_11111, 0b0011_0000])


def test_split_and_join_round_trip():
    widths = (4, 4, 8, 16)
    vals = split_fields(0x45_00_1234 | (0x4 << 28), widths)
    assert vals == [4, 5, 0, 0x1234]
    assert join_fields(vals, widths) == 0x4500_1234


def test_to_signed():
    assert to_signed(0xFF, 8) == -1
    assert to_signed(0x7F, 8) == 127
    assert to_signed(0x180, 8) == -128
