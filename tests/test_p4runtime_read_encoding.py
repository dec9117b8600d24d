"""A Read's canonical TableEntry encodings: the C encoder (``entrywire.encode_plain``)
gives exactly the bytes of the Python one and of protobuf's own serialization, for
every match kind, priority, idle timeout and argument width, and leaves to Python the
shapes it does not take (values over 64 bits, long parameters) instead of guessing."""

from __future__ import annotations

import random

import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from softswitch.p4runtime import bytestrings, entrywire, tables
from softswitch.p4runtime.actions import ActionCall
from softswitch.p4runtime.p4index import ActionPlan

KINDS = ("exact", "lpm", "ternary", "range", "optional")


def _action(rng: random.Random) -> ActionPlan:
    info = p4info_pb2.Action()
    info.preamble.id = rng.choice((1, 127, 128, 0x01000005, 0x7FFFFFFF))
    info.preamble.name = "act"
    for i in range(rng.randint(0, 4)):
        info.params.add(id=rng.choice((1, 2, 200)) + i * 300, name=f"p{i}",
                        bitwidth=rng.choice((1, 8, 9, 32, 48, 64, 128, 900)))
    return ActionPlan.of(info)


def _value(rng: random.Random, bits: int) -> int:
    return rng.choice((0, 1, 255, 256, (1 << min(bits, 64)) - 1, rng.getrandbits(bits)))


def _record(rng: random.Random) -> tuple[tables.Record, int]:
    plan = _action(rng)
    args = [_value(rng, p.bitwidth) for p in plan.info.params]
    call = ActionCall(plan.name, args, None, plan.info, plan)
    fields = []
    for fid in sorted(rng.sample((1, 2, 3, 200, 1000), rng.randint(1, 4))):
        kind = rng.choice(KINDS)
        bits = rng.choice((8, 32, 64, 128))
        if kind == "lpm":
            fields.append((fid, (kind, _value(rng, bits), rng.randint(1, min(bits, 127)))))
        elif kind in ("ternary", "range"):
            fields.append((fid, (kind, _value(rng, bits), _value(rng, bits))))
        else:
            fields.append((fid, (kind, _value(rng, bits), None)))
    priority = rng.choice((0, 0, 1, 127, 128, 1 << 30))
    record = tables.Record(1, b"", None, call, key=(tuple(fields), priority), plain=True,
                           idle_timeout_ns=rng.choice((0, 0, 1, 10**9, (1 << 62) + 5)))
    return record, rng.choice((1, 0x02000001, 0x7FFFFFFF))


def _protobuf(table_id: int, record: tables.Record) -> bytes:
    """The same entry through protobuf's messages."""
    assert record.call is not None
    entry = p4runtime_pb2.TableEntry(table_id=table_id, priority=record.key[1],
                                     idle_timeout_ns=record.idle_timeout_ns)
    for fid, (kind, a, b) in record.key[0]:
        fm = entry.match.add(field_id=fid)
        enc = bytestrings.encode
        if kind == "lpm":
            fm.lpm.value, fm.lpm.prefix_len = enc(a), b
        elif kind == "ternary":
            fm.ternary.value, fm.ternary.mask = enc(a), enc(b)
        elif kind == "range":
            fm.range.low, fm.range.high = enc(a), enc(b)
        elif kind == "exact":
            fm.exact.value = enc(a)
        else:
            fm.optional.value = enc(a)
    entry.action.action.CopyFrom(record.call.canonical())
    return entry.SerializeToString()


@pytest.mark.parametrize("seed", range(4))
def test_c_encoder_matches_python_and_protobuf(seed: int) -> None:
    mod = entrywire.native()
    if mod is None:
        pytest.skip("no C compiler here: Read encodes in Python only")
    rng = random.Random(seed)
    taken = left = 0
    for _ in range(2000):
        record, table_id = _record(rng)
        python = tables._plain_wire_python(table_id, record)
        assert python == _protobuf(table_id, record)
        head, prefixes = record.call.plan.wire_prefixes
        c = mod.encode_plain(table_id, record.key[0], record.key[1],
                             record.idle_timeout_ns, head, prefixes, record.call.args)
        if c is None:
            left += 1
            values = [v for _f, (_k, a, b) in record.key[0] for v in (a, b)
                      if isinstance(v, int)] + record.call.args
            assert any(v >= 1 << 64 for v in values), "left to Python without a reason"
        else:
            taken += 1
            assert c == python
        assert tables._plain_wire(table_id, record) == python
    assert taken > 500 and left > 100          # both ways were exercised
