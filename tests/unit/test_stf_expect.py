"""Packet expectation matching, as p4c's bmv2stf.py defines it."""

import pytest

from softswitch.diagnostics import P4Error
from softswitch.stf.expect import (
    check_outputs,
    check_port,
    format_report,
    mismatch,
    parse_expectation,
)


def exp(*words: str, port: int = 0):
    return parse_expectation(port, list(words), None)


def test_prefix_match_accepts_longer_packet():
    assert mismatch(exp("0102"), bytes.fromhex("010203")) is None


def test_shorter_packet_fails():
    assert "too short" in mismatch(exp("010203"), bytes.fromhex("0102"))


def test_dollar_requires_exact_length():
    assert "too long" in mismatch(exp("0102", "$"), bytes.fromhex("010203"))
    assert mismatch(exp("0102$"), bytes.fromhex("0102")) is None


def test_star_is_any_nibble_and_case_is_ignored():
    e = exp("a*", "**", "Ff")
    assert mismatch(e, bytes.fromhex("a1ccff")) is None
    assert "hex digit 0" in mismatch(e, bytes.fromhex("b1ccff"))
    assert "hex digit 5" in mismatch(e, bytes.fromhex("a1ccfe"))


def test_expect_without_data_is_any_one_packet():
    e = exp()
    assert e.pattern is None
    assert mismatch(e, b"\x00") is None
    assert check_port(0, [e], []).problems  # still needs one packet
    assert check_port(0, [e], [b"\x01", b"\x02"]).problems  # and only one


def test_bad_characters_raise():
    with pytest.raises(P4Error, match="invalid character"):
        exp("01zz")
    with pytest.raises(P4Error):
        exp("$")


def test_count_and_order_per_port():
    e1, e2 = exp("01"), exp("02")
    assert check_port(1, [e1, e2], [b"\x01", b"\x02"]).ok
    swapped = check_port(1, [e1, e2], [b"\x02", b"\x01"])
    assert not swapped.ok and len(swapped.problems) == 2
    assert "expected 2 packet(s), received 1" in check_port(1, [e1, e2], [b"\x01"]).problems[0]


def test_unexpected_packet_on_observed_port_fails_but_unobserved_ports_are_not_checked():
    reports = check_outputs({1: [exp("01", port=1)]}, {1: [b"\x01"], 0: [b"\x05"], 7: [b"\x09"]},
                            observed={0, 1})
    assert [r.port for r in reports] == [0, 1]
    assert not reports[0].ok          # port 0 was an input port: nothing was expected there
    assert reports[1].ok              # port 7 is not observed at all


def test_report_shortens_long_packets_only_on_passing_ports():
    long = bytes(range(100))
    good = check_port(1, [exp(long.hex(), port=1)], [long])
    bad = check_port(2, [exp(long.hex() + "00", port=2)], [long])
    text = format_report([good, bad], {9: 3})
    assert "… (100 bytes)" in text.split("port 2")[0]
    assert long.hex().upper() in text.split("port 2")[1]
    assert "port 9: 3 packet(s) not checked" in text
