"""Generated extract/emit code against a bit-by-bit reference on random layouts."""

from __future__ import annotations

import random

from softswitch.core.bits import BitWriter, PacketReader
from softswitch.core.execution import ParserError
from softswitch.core.values import Layouts, attr
from softswitch.core.wire import WireCodegen
from softswitch.frontend import types as T

ERRORS = {"PacketTooShort": 1, "HeaderTooShort": 4, "StackOutOfBounds": 3}


def random_header(rng: random.Random, n: int) -> T.HeaderType:
    widths = [rng.randint(1, 40) for _ in range(n)]
    widths[-1] += (-sum(widths)) % 8          # whole bytes, as BMv2 requires
    fields = tuple(T.FieldInfo(f"f{i}", T.BitsType(w, signed=rng.random() < 0.3))
                   for i, w in enumerate(widths))
    return T.HeaderType(f"h{n}", fields, decl=object())


def reference_fields(data: bytes, offset_bits: int, t: T.HeaderType) -> list[int]:
    bits = "".join(f"{b:08b}" for b in data)[offset_bits:]
    out = []
    for f in t.fields:
        w = f.type.width
        v = int(bits[:w], 2)
        bits = bits[w:]
        if f.type.signed and v >> (w - 1):
            v -= 1 << w
        out.append(v)
    return out


def test_extract_emit_round_trip_on_random_layouts():
    rng = random.Random(99)
    layouts = Layouts()
    wire = WireCodegen(layouts, ERRORS)
    for n in range(1, 12):
        t = random_header(rng, n)
        nbytes = sum(f.type.width for f in t.fields) // 8
        for _ in range(5):
            prefix = rng.randint(0, 3)
            data = bytes(rng.randrange(256) for _ in range(prefix + nbytes + 2))
            r = PacketReader(data)
            r.bit_pos = prefix * 8
            h = layouts.cls(t)()
            wire.extractor(t)(r, h)
            assert h._v and r.bit_pos == (prefix + nbytes) * 8
            assert [getattr(h, attr(f.name)) for f in t.fields] == \
                reference_fields(data, prefix * 8, t)
            w = BitWriter()
            wire.emitter(t)(w, h)
            assert w.to_bytes() == data[prefix:prefix + nbytes]


def test_short_packet_raises_packet_too_short_and_leaves_header_invalid():
    layouts = Layouts()
    wire = WireCodegen(layouts, ERRORS)
    t = T.HeaderType("h", (T.FieldInfo("a", T.BitsType(32)),), decl=object())
    h = layouts.cls(t)()
    r = PacketReader(b"\x01\x02")
    try:
        wire.extractor(t)(r, h)
    except ParserError as e:
        assert e.code == ERRORS["PacketTooShort"]
    else:
        raise AssertionError("no parser error")
    assert not h._v and r.bit_pos == 0
