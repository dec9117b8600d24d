"""Numbers and match values as written in STF files and ``simple_switch_CLI`` commands.

Integers: decimal, ``0x``/``0b``/``0o``/``0d`` prefixes (case-insensitive), ``_`` digit
separators, a leading ``-`` (two's complement in the field's width), and, like
``simple_switch_CLI``, IPv4 (``10.0.0.1``), MAC (``00:11:22:33:44:55``) and IPv6
addresses.

Match values per match kind (``KeyMatch`` is built here so every front end of the
command language interprets a key the same way):

* exact: an integer.
* ternary: ``value&&&mask``; ``*`` (any); ``value/len`` (prefix mask); or a prefixed
  literal whose digits may be ``*`` (``0x****0101``). As in p4c's ``bmv2stf.py`` the mask
  of such a literal covers exactly the digits written (each ``*`` contributes zero bits,
  every other digit all ones), so ``0x0101`` on a 32-bit key only matches the low 16 bits;
  a decimal literal is matched exactly.
* lpm: ``value/len``; or a prefixed literal whose prefix length is the number of digits
  written that are not ``*`` times the bits per digit (``0x0a01****`` = ``/16``), again as
  ``bmv2stf.py`` computes it; a decimal literal is a full-width prefix.
* range: ``low..high`` or ``low->high`` (``simple_switch_CLI``); a single value; ``*``.
* optional: a value, or ``*`` for the wildcard.
"""

from __future__ import annotations

import ipaddress
import re

from softswitch.core.control import KeyInfo, KeyMatch
from softswitch.diagnostics import P4Error, SourceLoc

_BASES = {"x": 16, "b": 2, "o": 8, "d": 10}
_BITS_PER_DIGIT = {16: 4, 2: 1, 8: 3}
_IPV4 = re.compile(r"\d{1,3}(\.\d{1,3}){3}")
_MAC = re.compile(r"[0-9a-fA-F]{1,2}(:[0-9a-fA-F]{1,2}){5}")


def _split_prefix(text: str) -> tuple[int, str]:
    """(base, digits) of an integer literal without sign."""
    if len(text) > 2 and text[0] == "0" and text[1].lower() in _BASES:
        return _BASES[text[1].lower()], text[2:]
    return 10, text


def _parse_address(text: str) -> int | None:
    """The integer value of an IPv4/MAC/IPv6 address literal, None if it is not one."""
    if _IPV4.fullmatch(text):
        return _ipv4(text)
    if _MAC.fullmatch(text):
        return int("".join(p.rjust(2, "0") for p in text.split(":")), 16)
    if ":" in text:
        try:
            return int(ipaddress.IPv6Address(text))
        except ValueError:
            return None
    return None


def _ipv4(text: str) -> int | None:
    """A dotted quad's value; None where ``ipaddress`` refuses it (an octet over 255,
    a leading zero, a digit that is not ASCII). Computed here: ``IPv4Address`` is a
    large part of parsing a routing ``table_add``."""
    if not text.isascii():
        return None
    value = 0
    for octet in text.split("."):
        if len(octet) > 1 and octet[0] == "0":
            return None
        byte = int(octet)
        if byte > 255:
            return None
        value = value << 8 | byte
    return value


def parse_int(text: str, loc: SourceLoc | None, what: str = "value",
              width: int | None = None) -> int:
    """Parse an integer literal; with ``width``, check it fits (negatives wrap)."""
    raw = text.strip()
    if raw.isdigit() and raw.isascii():     # plain decimal, the common case
        value = int(raw)
        if width is not None and value >> width:
            raise P4Error(f"{what}: value {text} does not fit in {width} bits", loc)
        return value
    addr = _parse_address(raw)
    if addr is not None:
        value = addr
    else:
        negative = raw.startswith("-")
        body = raw[1:] if negative else raw
        base, digits = _split_prefix(body)
        digits = digits.replace("_", "")
        try:
            if not digits or not digits.isalnum():
                raise ValueError(raw)
            value = int(digits, base)
        except ValueError:
            raise P4Error(f"invalid number {text!r} for {what}", loc) from None
        if negative:
            if width is None:
                raise P4Error(f"negative number {text!r} for {what} of unknown width", loc)
            value = (-value) % (1 << width)
    if width is not None and value >> width:
        raise P4Error(f"{what}: value {text} does not fit in {width} bits", loc)
    return value


def _full(width: int) -> int:
    return (1 << width) - 1


def _prefix_mask(width: int, length: int) -> int:
    return _full(width) ^ _full(width - length)


def _starred_literal(text: str, loc: SourceLoc | None, what: str,
                     width: int) -> tuple[int, int, int] | None:
    """(value, mask, significant bits) of a prefixed literal that may contain ``*``
    digits, per ``bmv2stf.py``; None for a literal without a base prefix."""
    base, digits = _split_prefix(text)
    if base == 10:
        return None
    digits = digits.replace("_", "")
    bits = _BITS_PER_DIGIT.get(base)
    if bits is None or not digits:
        raise P4Error(f"invalid number {text!r} for {what}", loc)
    value = mask = 0
    for ch in digits:
        if ch == "*":
            digit, dmask = 0, 0
        else:
            try:
                digit = int(ch, base)
            except ValueError:
                raise P4Error(f"invalid digit {ch!r} in {text!r} for {what}", loc) from None
            dmask = _full(bits)
        value = (value << bits) | digit
        mask = (mask << bits) | dmask
    if value >> width:
        raise P4Error(f"{what}: value {text} does not fit in {width} bits", loc)
    significant = len(digits.replace("*", "")) * bits
    return value, mask & _full(width), significant


def _split_once(text: str, sep: str) -> tuple[str, str] | None:
    if sep not in text:
        return None
    left, right = text.split(sep, 1)
    return left.strip(), right.strip()


def parse_ternary(key: KeyInfo, text: str, loc: SourceLoc | None) -> KeyMatch:
    what = f"key {key.name}"
    w = key.width
    if text == "*":
        return KeyMatch(key.name, "ternary", 0, 0)
    parts = _split_once(text, "&&&")
    if parts is not None:
        value = parse_int(parts[0], loc, what, w)
        mask = parse_int(parts[1], loc, f"mask of {what}", w)
        return KeyMatch(key.name, "ternary", value & mask, mask)
    parts = _split_once(text, "/")
    if parts is not None:
        length = _prefix_len(parts[1], key, loc)
        mask = _prefix_mask(w, length)
        return KeyMatch(key.name, "ternary", parse_int(parts[0], loc, what, w) & mask, mask)
    starred = _starred_literal(text, loc, what, w)
    if starred is None:
        return KeyMatch(key.name, "ternary", parse_int(text, loc, what, w), _full(w))
    value, mask, _ = starred
    return KeyMatch(key.name, "ternary", value & mask, mask)


def _prefix_len(text: str, key: KeyInfo, loc: SourceLoc | None) -> int:
    length = parse_int(text, loc, f"prefix length of key {key.name}")
    if length > key.width:
        raise P4Error(f"prefix length {length} exceeds the {key.width}-bit key {key.name}", loc)
    return length


def parse_lpm(key: KeyInfo, text: str, loc: SourceLoc | None) -> KeyMatch:
    what = f"key {key.name}"
    w = key.width
    if text == "*":
        return KeyMatch(key.name, "lpm", 0, prefix_len=0)
    parts = _split_once(text, "/")
    if parts is not None:
        length = _prefix_len(parts[1], key, loc)
        parts = (parts[0].replace("*", "0"), parts[1])
    else:
        starred = _starred_literal(text, loc, what, w)
        length = w if starred is None else min(starred[2], w)
        parts = (text.replace("*", "0"), "")
    value = parse_int(parts[0], loc, what, w)
    return KeyMatch(key.name, "lpm", value & _prefix_mask(w, length), prefix_len=length)


def parse_range(key: KeyInfo, text: str, loc: SourceLoc | None) -> KeyMatch:
    what = f"key {key.name}"
    if text == "*":
        return KeyMatch(key.name, "range", 0, high=_full(key.width))
    parts = _split_once(text, "..") or _split_once(text, "->")
    if parts is None:
        parts = (text, text)
    low = parse_int(parts[0], loc, what, key.width)
    high = parse_int(parts[1], loc, what, key.width)
    if low > high:
        raise P4Error(f"empty range {text} for {what}", loc)
    return KeyMatch(key.name, "range", low, high=high)


def parse_optional(key: KeyInfo, text: str, loc: SourceLoc | None) -> KeyMatch:
    if text == "*":
        return KeyMatch(key.name, "optional", 0, wildcard=True)
    return KeyMatch(key.name, "optional", parse_int(text, loc, f"key {key.name}", key.width))


def parse_exact(key: KeyInfo, text: str, loc: SourceLoc | None) -> KeyMatch:
    lowered = text.lower()
    if key.width == 1 and lowered in ("true", "false"):
        return KeyMatch(key.name, key.match_kind, int(lowered == "true"))
    return KeyMatch(key.name, key.match_kind,
                    parse_int(text, loc, f"key {key.name}", key.width))


_PARSERS = {
    "exact": parse_exact,
    "ternary": parse_ternary,
    "lpm": parse_lpm,
    "range": parse_range,
    "optional": parse_optional,
}


def parse_key_value(key: KeyInfo, text: str, loc: SourceLoc | None) -> KeyMatch:
    """The ``KeyMatch`` for ``text`` written for ``key`` (see the module docstring)."""
    parser = _PARSERS.get(key.match_kind)
    if parser is None:
        raise P4Error(f"key {key.name}: match kind {key.match_kind} cannot be given "
                      "in a table entry", loc)
    return parser(key, text.strip(), loc)


def default_key_match(key: KeyInfo, loc: SourceLoc | None) -> KeyMatch:
    """The match an STF ``add`` uses for a key it does not mention: what ``bmv2stf.py``
    fills in (exact 0, ternary ``0&&&0``, lpm ``0/0``), and "any" for range/optional."""
    kind = key.match_kind
    if kind == "ternary":
        return KeyMatch(key.name, kind, 0, 0)
    if kind == "lpm":
        return KeyMatch(key.name, kind, 0, prefix_len=0)
    if kind == "range":
        return KeyMatch(key.name, kind, 0, high=_full(key.width))
    if kind == "optional":
        return KeyMatch(key.name, kind, 0, wildcard=True)
    if kind == "exact":
        return KeyMatch(key.name, kind, 0)
    raise P4Error(f"key {key.name}: match kind {kind} cannot be given in a table entry", loc)
