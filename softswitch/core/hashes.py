"""The hash and checksum algorithms of BMv2, bit-for-bit.

STF tests compare packets that carry hash and checksum results, so each algorithm
must produce exactly what ``behavioral-model``'s ``calculations.cpp`` produces for the
same bytes (CRC parameters, reflection, the internet checksum's zero padding). Inputs
are the bytes BMv2 would build: the fields packed most-significant-bit first with no
padding between them, zero-padded at the end to a whole byte (:func:`pack_fields`).
"""

from __future__ import annotations

import random as _random
import struct
import zlib
from collections.abc import Callable, Sequence


def pack_fields(values: Sequence[int], widths: Sequence[int]) -> bytes:
    """Concatenate bit fields big-endian and pad the tail to a byte boundary, like BMv2."""
    acc = 0
    nbits = 0
    for v, w in zip(values, widths, strict=True):
        acc = (acc << w) | (v & ((1 << w) - 1))
        nbits += w
    pad = (-nbits) % 8
    return (acc << pad).to_bytes((nbits + pad) // 8, "big")


def _reflect(value: int, nbits: int) -> int:
    out = 0
    for _ in range(nbits):
        out = (out << 1) | (value & 1)
        value >>= 1
    return out


class Crc:
    """A table-driven CRC with BMv2's ``crc_custom`` configuration knobs."""

    def __init__(self, width: int, poly: int, init: int, xor_out: int,
                 reflect_data: bool, reflect_rem: bool) -> None:
        self.width = width
        self.mask = (1 << width) - 1
        self.init = init
        self.xor_out = xor_out
        self.reflect_data = reflect_data
        self.reflect_rem = reflect_rem
        self.table = self._make_table(poly)
        self.refl8 = [_reflect(b, 8) for b in range(256)]

    def _make_table(self, poly: int) -> list[int]:
        top = 1 << (self.width - 1)
        table = []
        for dividend in range(256):
            rem = (dividend << (self.width - 8)) & self.mask
            for _ in range(8):
                rem = ((rem << 1) ^ poly) if rem & top else (rem << 1)
                rem &= self.mask
            table.append(rem)
        return table

    def __call__(self, data: bytes) -> int:
        rem = self.init
        shift = self.width - 8
        mask = self.mask
        table = self.table
        refl8 = self.refl8 if self.reflect_data else None
        for byte in data:
            b = refl8[byte] if refl8 is not None else byte
            rem = table[(b ^ (rem >> shift)) & 0xFF] ^ ((rem << 8) & mask)
        if self.reflect_rem:
            rem = _reflect(rem, self.width)
        return rem ^ self.xor_out


_crc16 = Crc(16, 0x8005, 0x0000, 0x0000, True, True)
_crc_ccitt = Crc(16, 0x1021, 0xFFFF, 0x0000, False, False)


def crc16(data: bytes) -> int:
    """CRC-16/ARC, BMv2's ``crc16``."""
    return _crc16(data)


def crc32(data: bytes) -> int:
    """CRC-32 (IEEE 802.3), BMv2's ``crc32`` — identical to zlib's."""
    return zlib.crc32(data) & 0xFFFFFFFF


def crc_ccitt(data: bytes) -> int:
    return _crc_ccitt(data)


_WORDS: dict[int, struct.Struct] = {}


def csum16(data: bytes) -> int:
    """The internet checksum (RFC 1071) of ``data``, zero-padded to an even length."""
    if len(data) & 1:
        data = data + b"\x00"
    n = len(data) >> 1
    st = _WORDS.get(n)
    if st is None:
        st = _WORDS[n] = struct.Struct(f">{n}H")
    total = sum(st.unpack(data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return (~total) & 0xFFFF


def xor16(data: bytes) -> int:
    """XOR of the 16-bit big-endian words of ``data`` (the tail padded with zeros)."""
    if len(data) & 1:
        data = data + b"\x00"
    out = 0
    for i in range(0, len(data), 2):
        out ^= (data[i] << 8) | data[i + 1]
    return out


def identity(data: bytes) -> int:
    """The first (up to) 8 bytes of ``data`` as a big-endian integer."""
    return int.from_bytes(data[:8], "big")


class CustomCrcs:
    """Per-instance ``crc16_custom``/``crc32_custom`` state (configurable by the CLI)."""

    def __init__(self) -> None:
        self.crc16 = Crc(16, 0x8005, 0x0000, 0x0000, True, True)
        self.crc32 = Crc(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)


_DEFAULT_CUSTOM = CustomCrcs()

#: v1model ``HashAlgorithm`` member name → function over bytes.
ALGORITHMS: dict[str, Callable[[bytes], int]] = {
    "crc16": crc16,
    "crc32": crc32,
    "crc16_custom": lambda d: _DEFAULT_CUSTOM.crc16(d),
    "crc32_custom": lambda d: _DEFAULT_CUSTOM.crc32(d),
    "csum16": csum16,
    "xor16": xor16,
    "identity": identity,
}


def compute(algo: str, data: bytes, rng: _random.Random | None = None) -> int:
    """Run the named algorithm; ``random`` draws from ``rng`` like BMv2's random hash."""
    if algo == "random":
        return (rng or _random).getrandbits(32)
    fn = ALGORITHMS.get(algo)
    if fn is None:
        raise KeyError(algo)
    return fn(data)


def hash_offset(base: int, hashed: int, max_: int) -> int:
    """v1model ``hash()``: ``base + (h % max)``; BMv2 yields ``base`` when ``max`` is 0."""
    if max_ == 0:
        return base
    return base + hashed % max_
