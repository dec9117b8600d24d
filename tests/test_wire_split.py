"""entrywire's C ``split`` answers exactly as ``encoding.split_python`` does.

``LazyRequest`` splits every Write request into its header and update spans; in C when
entrywire is built. Both are run on well-formed requests, every truncation of one,
random byte flips, random bytes and hand-made edge cases (overlong varints, field 0,
64-bit tags and lengths), and must give the same spans or the same error."""

from __future__ import annotations

import random

import pytest
from p4.v1 import p4runtime_pb2

from softswitch.p4runtime import encoding, entrywire

pytestmark = pytest.mark.skipif(entrywire.native() is None,
                                reason="entrywire C helper not built here")


def _outcome(fn, data: bytes, lazy: int):
    try:
        return ("ok", fn(data, lazy))
    except encoding.WireError as exc:
        return ("error", str(exc))


def _same(data: bytes, lazy: int = 4) -> None:
    got = _outcome(encoding.split, data, lazy)
    want = _outcome(encoding.split_python, data, lazy)
    assert got == want, data.hex()


def _request(rng: random.Random) -> bytes:
    req = p4runtime_pb2.WriteRequest(device_id=rng.randrange(1 << 40), role="r",
                                      atomicity=rng.randrange(3))
    req.election_id.low = rng.randrange(1 << 64)
    for i in range(rng.randrange(6)):
        te = req.updates.add(type=1 + rng.randrange(3)).entity.table_entry
        te.table_id = rng.randrange(1 << 32)
        te.match.add(field_id=1).exact.value = rng.randbytes(rng.randrange(1, 300))
        te.priority = i
    return req.SerializeToString()


def test_requests_truncations_and_flips() -> None:
    rng = random.Random(11)
    for _ in range(60):
        data = _request(rng)
        _same(data)
        _same(data, lazy=3)
        for cut in range(0, len(data), max(1, len(data) // 40)):
            _same(data[:cut])
        for _ in range(20):
            flipped = bytearray(data)
            if flipped:
                flipped[rng.randrange(len(flipped))] = rng.randrange(256)
            _same(bytes(flipped))


def test_random_bytes() -> None:
    rng = random.Random(12)
    for _ in range(3000):
        _same(rng.randbytes(rng.randrange(24)))


@pytest.mark.parametrize("data", [
    b"", b"\x00", b"\x80", b"\x22\x80", b"\x22\x05ab",
    b"\x22" + b"\xff" * 9 + b"\x01",                     # a 64-bit length
    b"\x22" + b"\xff" * 10 + b"\x01",                    # an overlong varint
    b"\xa2" + b"\x80" * 8 + b"\x02\x00",                 # tag bit 64 set: not field 4
    b"\xa0" + b"\x80" * 8 + b"\x02\x00",                 # tag bits above 63, field 0
    b"\x22\x00\x22\x01x\x08\x07", b"\x09" + b"1234567", b"\x0d\x01", b"\x0b", b"\x0c",
])
def test_edge_cases(data: bytes) -> None:
    _same(data)
