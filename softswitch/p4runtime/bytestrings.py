"""P4Runtime byte strings ⇄ Python ints.

P4Runtime carries every bit<W> value as a big-endian byte string. Clients send either
the canonical form (shortest, at least one byte) or the form padded to ⌈W/8⌉ bytes,
and servers must accept both; softswitch answers in the canonical form, which
p4runtime-shell and PTF decode either way. A value that needs more than W bits is the
client's error (INVALID_ARGUMENT), never silently truncated.
"""

from __future__ import annotations

from softswitch.p4runtime.errors import invalid


def decode(data: bytes, width: int, what: str) -> int:
    """The int a byte string encodes, checked to fit in ``width`` bits."""
    if not data:
        raise invalid(f"{what}: empty byte string")
    if width > 0 and len(data) > (width + 7) // 8:
        raise invalid(f"{what}: {len(data)} bytes is too long for a {width}-bit value")
    value = int.from_bytes(data, "big")
    if width > 0 and value >> width:
        raise invalid(f"{what}: value 0x{data.hex()} does not fit in {width} bits")
    return value


def encode(value: int, width: int = 0) -> bytes:
    """The canonical byte string of a non-negative value (``width`` masks negatives)."""
    if value < 0:
        value &= (1 << width) - 1
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def encode_padded(value: int, width: int) -> bytes:
    """The byte string padded to ⌈W/8⌉ bytes (used for packet metadata headers)."""
    if value < 0:
        value &= (1 << width) - 1
    return value.to_bytes(max(1, (width + 7) // 8), "big")
