"""Table entries and actions encoded by hand (the runtime channel's writes, a Read's
cached entries) must be the bytes protobuf itself gives for the same messages."""

from __future__ import annotations

import itertools

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from softswitch.core.control import KeyMatch
from softswitch.p4runtime import actions, encoding, matches
from softswitch.p4runtime.p4index import P4InfoIndex

MF = p4info_pb2.MatchField


def _index() -> P4InfoIndex:
    info = p4info_pb2.P4Info()
    table = info.tables.add()
    table.preamble.id, table.preamble.name = 1, "ingress.t"
    for fid, (kind, width) in enumerate([(MF.EXACT, 9), (MF.LPM, 32), (MF.TERNARY, 48),
                                         (MF.RANGE, 16), (MF.OPTIONAL, 12)], start=1):
        table.match_fields.add(id=fid, name=f"k{fid}", bitwidth=width, match_type=kind)
    action = info.actions.add()
    action.preamble.id, action.preamble.name = 0x1000001, "ingress.set"
    action.params.add(id=1, name="port", bitwidth=9)
    action.params.add(id=2, name="mac", bitwidth=48)
    table.action_refs.add(id=action.preamble.id)
    return P4InfoIndex(info)


def test_field_matches_encode_as_protobuf_does():
    index = _index()
    table = index.tables[1]
    cases = {
        "exact": [KeyMatch("k1", "exact", v) for v in (0, 1, 511)],
        "lpm": [KeyMatch("k2", "lpm", 0x0A000001, prefix_len=p) for p in (0, 8, 24, 32)],
        "ternary": [KeyMatch("k3", "ternary", 0xAB, mask=m) for m in (0, 0xFF, (1 << 48) - 1)],
        "range": [KeyMatch("k4", "range", lo, high=hi) for lo, hi in
                  ((0, 0xFFFF), (5, 9), (7, 7))],
        "optional": [KeyMatch("k5", "optional", 3), KeyMatch("k5", "optional", 0,
                                                              wildcard=True)],
    }
    for keys in itertools.product(*cases.values()):
        expected = b"".join(encoding.field(b"\x12", fm.SerializeToString())
                            for fm in matches.from_switch(table, list(keys)))
        assert matches.wire_from_switch(table, list(keys)) == expected, keys


def test_actions_encode_as_protobuf_does():
    index = _index()
    for args in ([0, 0], [1, 0x020000000001], [511, (1 << 48) - 1], [-1, -2], [5]):
        proto = p4runtime_pb2.Action(action_id=0x1000001)
        for p, value in zip(index.action(0x1000001).params, args, strict=False):
            proto.params.add(param_id=p.id, value=(value & ((1 << p.bitwidth) - 1)).to_bytes(
                max(1, ((value & ((1 << p.bitwidth) - 1)).bit_length() + 7) // 8), "big"))
        assert actions.build_wire(index, "set", args) == proto.SerializeToString(), args
        assert actions.build(index, "ingress.set", args) == proto
