"""p4runtime-shell value syntax <-> integers <-> P4Runtime byte strings.

People type ``10.0.0.0/8``, ``0x0a000000&&&0xff000000``, ``1024..2047``,
``00:11:22:33:44:55`` and plain ints; P4Runtime wants big-endian byte strings in the
canonical (shortest) form. Parsing checks that a value fits its field so a typo is a
clear error instead of a silently truncated table entry.
"""

from __future__ import annotations

import ipaddress
import re

from controlplane.p4rt.errors import BadValueError

_MAC = re.compile(r"^[0-9a-fA-F]{1,2}([:-][0-9a-fA-F]{1,2}){5}$")


def parse_scalar(value: object, width: int, what: str) -> int:
    """An int, decimal/hex/binary string, MAC or IPv4/IPv6 address that fits ``width``."""
    if isinstance(value, bool):
        raise BadValueError(f"{what}: {value!r} is not a number")
    if isinstance(value, int):
        number = value
    elif isinstance(value, str):
        number = _parse_text(value.strip(), what)
    else:
        raise BadValueError(f"{what}: {value!r} is not a number or address")
    if number < 0:
        raise BadValueError(f"{what}: {value!r} is negative")
    if width and number >> width:
        raise BadValueError(f"{what}: {value!r} does not fit in {width} bits")
    return number


def _parse_text(text: str, what: str) -> int:
    if _MAC.match(text):
        return int(re.sub("[:-]", "", "".join(p.zfill(2) for p in re.split("[:-]", text))), 16)
    if text.count(".") == 3:
        try:
            return int(ipaddress.IPv4Address(text))
        except ValueError:
            pass
    if ":" in text:
        try:
            return int(ipaddress.IPv6Address(text))
        except ValueError:
            pass
    try:
        return int(text, 0)
    except ValueError:
        raise BadValueError(f"{what}: {text!r} is not a number, MAC or IP address") from None


def parse_lpm(value: int | str | tuple[int, int], width: int, what: str) -> tuple[int, int]:
    """``addr/len`` (or a bare value = full length): (value, prefix length)."""
    if isinstance(value, tuple):
        number, plen = parse_scalar(value[0], width, what), int(value[1])
    elif isinstance(value, str) and "/" in value:
        text, _, plen_text = value.rpartition("/")
        if not plen_text.strip().isdigit():
            raise BadValueError(f"{what}: {value!r}: prefix length is not a number")
        number, plen = parse_scalar(text, width, what), int(plen_text)
    else:
        number, plen = parse_scalar(value, width, what), width
    if not 0 <= plen <= width:
        raise BadValueError(f"{what}: prefix length {plen} is not in 0..{width}")
    host_mask = (1 << (width - plen)) - 1
    if number & host_mask:
        raise BadValueError(f"{what}: {value!r} has bits set beyond the /{plen} prefix")
    return number, plen


def parse_ternary(value: int | str | tuple[int, int], width: int,
                  what: str) -> tuple[int, int]:
    """``v&&&m`` (or a bare value = exact): (value, mask); value must lie within mask."""
    if isinstance(value, tuple):
        number, mask = (parse_scalar(value[0], width, what),
                        parse_scalar(value[1], width, what))
    elif isinstance(value, str) and "&&&" in value:
        left, _, right = value.partition("&&&")
        number, mask = parse_scalar(left, width, what), parse_scalar(right, width, what)
    else:
        number, mask = parse_scalar(value, width, what), (1 << width) - 1
    if number & ~mask:
        raise BadValueError(f"{what}: value {number:#x} has bits outside mask {mask:#x}")
    return number, mask


def parse_range(value: int | str | tuple[int, int], width: int,
                what: str) -> tuple[int, int]:
    """``lo..hi`` (or a bare value = that value only): (low, high), low <= high."""
    if isinstance(value, tuple):
        low, high = parse_scalar(value[0], width, what), parse_scalar(value[1], width, what)
    elif isinstance(value, str) and ".." in value and value.count(".") == 2:
        left, _, right = value.partition("..")
        low, high = parse_scalar(left, width, what), parse_scalar(right, width, what)
    else:
        low = high = parse_scalar(value, width, what)
    if low > high:
        raise BadValueError(f"{what}: empty range {low}..{high}")
    return low, high


def encode(value: int) -> bytes:
    """The canonical P4Runtime byte string (shortest form, at least one byte)."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def decode(data: bytes) -> int:
    return int.from_bytes(data, "big")


def canonical(data: bytes) -> bytes:
    """Strip leading zero bytes so padded and canonical strings compare equal."""
    return encode(decode(data))


def format_value(value: int, width: int, name: str = "") -> str:
    """A value in the syntax people type: MACs for 48-bit, dotted IPv4 for addresses."""
    lname = name.lower()
    if width == 48 and ("mac" in lname or "addr" in lname or "eth" in lname or not lname):
        return ":".join(f"{b:02x}" for b in value.to_bytes(6, "big"))
    if width == 32 and ("addr" in lname or "ip" in lname or lname.endswith(("src", "dst"))):
        return str(ipaddress.IPv4Address(value))
    if width == 128 and ("addr" in lname or "ip" in lname):
        return str(ipaddress.IPv6Address(value))
    return str(value)
