"""Integer literals of STF files and runtime CLI commands (``softswitch.stf.values``):
the fast paths (plain decimals, dotted quads computed without ``ipaddress``) must read
exactly what the general path reads, and refuse exactly what it refuses."""

from __future__ import annotations

import ipaddress
import itertools

import pytest

from softswitch.diagnostics import P4Error
from softswitch.stf.values import parse_int

OCTETS = ("0", "00", "01", "7", "10", "010", "99", "099", "100", "199", "200", "255",
          "256", "300", "999", "٣")


def _reference_ipv4(text: str) -> int | None:
    try:
        return int(ipaddress.IPv4Address(text))
    except ValueError:
        return None


@pytest.mark.parametrize("first", OCTETS)
def test_dotted_quads_read_as_ipaddress_reads_them(first):
    for rest in itertools.product(("0", "01", "255", "256", "9"), repeat=3):
        text = ".".join((first, *rest))
        expected = _reference_ipv4(text)
        if expected is None:
            with pytest.raises(P4Error, match="invalid number"):
                parse_int(text, None)
        else:
            assert parse_int(text, None) == expected, text


@pytest.mark.parametrize(("text", "width", "value"), [
    ("0", None, 0), ("007", None, 7), ("4294967295", 32, 0xFFFFFFFF), ("12", 4, 12),
    (" 42 ", 8, 42), ("0x2a", 8, 42), ("1_000", None, 1000), ("-1", 8, 255),
    ("02:00:00:00:00:01", 48, 0x020000000001), ("::1", 128, 1)])
def test_integers(text, width, value):
    assert parse_int(text, None, "v", width) == value


@pytest.mark.parametrize(("text", "width", "message"), [
    ("16", 4, "does not fit in 4 bits"), ("4294967296", 32, "does not fit in 32 bits"),
    ("12a", None, "invalid number"),
    ("", None, "invalid number")])
def test_refused(text, width, message):
    with pytest.raises(P4Error, match=message):
        parse_int(text, None, "v", width)
