"""P4Runtime byte strings ⇄ Python ints.

P4Runtime carries every bit<W> value as a big-endian byte string. Clients send the
canonical form (shortest, at least one byte) or any zero-padded form: since P4Runtime
1.4 (§8.3 "Bytestrings") the receiver puts no limit on the string's length and only
checks that the *value* fits in W bits. softswitch answers in the canonical form,
which p4runtime-shell and PTF decode either way. An empty string or a value that needs
more than W bits is the client's error, ``OUT_OF_RANGE`` as §8.3 says, never silently
truncated; a value too wide is refused in PI's words.
"""

from __future__ import annotations

from softswitch.p4runtime.errors import out_of_range


def decode(data: bytes, width: int, what: str) -> int:
    """The int a byte string encodes (zero padding allowed), checked to fit in
    ``width`` bits; OUT_OF_RANGE otherwise (P4Runtime 1.4 §8.3)."""
    if not data:
        raise out_of_range(f"{what}: empty byte string")
    value = int.from_bytes(data, "big")
    if width > 0 and value >> width:
        raise out_of_range(f"Bytestring provided does not fit within {width} bits")
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
