"""The P4Runtime server's pure parts in isolation: byte strings, match-key rules,
controller-header packing, device-config artifacts, the undo log, error details."""

from __future__ import annotations

import json

import grpc
import pytest
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from softswitch.diagnostics import P4Error
from softswitch.p4runtime import actions, bytestrings, errors, matches, pipeline
from softswitch.p4runtime.errors import P4RuntimeError
from softswitch.p4runtime.p4index import P4InfoIndex
from softswitch.p4runtime.packetio import PacketIO
from softswitch.p4runtime.undo import UndoLog

MF = p4info_pb2.MatchField


# ---------------------------------------------------------------------- byte strings
@pytest.mark.parametrize("data, width, value", [
    (b"\x00", 9, 0), (b"\x01\xff", 9, 511), (b"\x00\x00\x01", 24, 1), (b"\x0a", 32, 10),
    # P4Runtime 1.4 §8.3: any zero padding is accepted (Table "Valid Bytestring Encoding")
    (b"\x00\x00\x01", 16, 1), (b"\x00\x00\x63", 12, 99), (b"\x00" * 40 + b"\x07", 3, 7)])
def test_decode_accepts_canonical_and_padded(data, width, value):
    assert bytestrings.decode(data, width, "x") == value


@pytest.mark.parametrize("data, width", [
    (b"", 8), (b"\x02\x00", 9), (b"\x01\x63", 8), (b"\x10\x63", 12), (b"\x00\x40\x63", 12)])
def test_decode_rejects_empty_and_wide_with_out_of_range(data, width):
    """§8.3 "Examples of Invalid Bytestring Encoding": OUT_OF_RANGE (a value too wide in
    PI's words)."""
    with pytest.raises(P4RuntimeError) as exc:
        bytestrings.decode(data, width, "field f")
    assert exc.value.code == grpc.StatusCode.OUT_OF_RANGE
    assert exc.value.message == (
        "field f: empty byte string" if not data
        else f"Bytestring provided does not fit within {width} bits")


def test_encode_is_canonical():
    assert bytestrings.encode(0) == b"\x00"
    assert bytestrings.encode(0x1FF) == b"\x01\xff"
    assert bytestrings.encode(-1, 8) == b"\xff"
    assert bytestrings.encode_padded(1, 48) == b"\x00" * 5 + b"\x01"


# ---------------------------------------------------------------------- actions
def test_action_parse_and_canonical_bytes():
    """Arguments are checked against the action's precompiled plan (padded values
    accepted, too-wide ones OUT_OF_RANGE naming the parameter, missing/unknown/twice
    INVALID_ARGUMENT), and the directly encoded canonical Action equals the message."""
    info = p4info_pb2.P4Info()
    act = info.actions.add()
    act.preamble.id, act.preamble.name = 300, "set"
    for pid, name, width in ((1, "port", 9), (2, "mac", 48), (200, "big", 200)):
        act.params.add(id=pid, name=name, bitwidth=width)
    index = P4InfoIndex(info)

    def action(*params: tuple[int, bytes]) -> p4runtime_pb2.Action:
        a = p4runtime_pb2.Action(action_id=300)
        for pid, value in params:
            a.params.add(param_id=pid, value=value)
        return a

    for port, mac, big in ((0, 0, 0), (511, (1 << 48) - 1, (1 << 200) - 1), (7, 1, 1 << 150)):
        call = actions.parse(index, action((2, mac.to_bytes(6, "big")),
                                           (1, port.to_bytes(2, "big")),
                                           (200, big.to_bytes(26, "big"))))
        assert call.args == [port, mac, big]
        assert call.canonical_bytes() == call.canonical().SerializeToString()
    bad = [(action((1, b"\x02\x00"), (2, b"\x01"), (200, b"\x01")), grpc.StatusCode.OUT_OF_RANGE,
            "Bytestring provided does not fit within 9 bits"),
           (action((1, b""), (2, b"\x01"), (200, b"\x01")), grpc.StatusCode.OUT_OF_RANGE,
            "empty byte string"),
           (action((1, b"\x01"), (2, b"\x01")), grpc.StatusCode.INVALID_ARGUMENT,
            "Unexpected number of action parameters"),
           (action((1, b"\x01"), (1, b"\x01"), (2, b"\x01"), (200, b"\x01")),
            grpc.StatusCode.INVALID_ARGUMENT, "Unexpected number of action parameters"),
           (action((1, b"\x01"), (1, b"\x01"), (2, b"\x01")),
            grpc.StatusCode.INVALID_ARGUMENT, "parameter id 1 given twice"),
           (action((1, b"\x01"), (3, b"\x01"), (200, b"\x01")),
            grpc.StatusCode.INVALID_ARGUMENT, "Unknown action parameter")]
    for given, code, message in bad:
        with pytest.raises(P4RuntimeError) as exc:
            actions.parse(index, given)
        assert exc.value.code == code and message in exc.value.message
    with pytest.raises(P4RuntimeError, match="Invalid P4 id"):
        actions.parse(index, p4runtime_pb2.Action(action_id=9))


# ---------------------------------------------------------------------- match keys
def _table(*fields: tuple[int, str, int, int]) -> P4InfoIndex:
    info = p4info_pb2.P4Info()
    t = info.tables.add()
    t.preamble.id, t.preamble.name = 1, "t"
    for fid, name, width, kind in fields:
        t.match_fields.add(id=fid, name=name, bitwidth=width, match_type=kind)
    return P4InfoIndex(info)


def test_ternary_range_optional_rules():
    table = _table((1, "a", 16, MF.TERNARY), (2, "b", 8, MF.RANGE),
                   (3, "c", 8, MF.OPTIONAL)).table(1)
    fm = p4runtime_pb2.FieldMatch(field_id=2)
    fm.range.low, fm.range.high = b"\x05", b"\x07"
    parsed = matches.parse(table, [fm], priority=1)
    kinds = [(k.kind, k.value, k.mask, k.high, k.wildcard) for k in parsed.switch_keys]
    assert kinds == [("ternary", 0, 0, None, False), ("range", 5, None, 7, False),
                     ("optional", 0, None, None, True)]
    for low, high in ((b"\x07", b"\x05"), (b"\x00", b"\xff")):   # inverted / don't-care
        fm.range.low, fm.range.high = low, high
        with pytest.raises(P4RuntimeError):
            matches.parse(table, [fm], priority=1)
    with pytest.raises(P4RuntimeError, match="priority"):
        matches.parse(table, [], priority=0)
    zero = p4runtime_pb2.FieldMatch(field_id=1)
    zero.ternary.value, zero.ternary.mask = b"\x00", b"\x00"
    with pytest.raises(P4RuntimeError, match="omit"):
        matches.parse(table, [zero], priority=1)


def test_wrong_kind_and_duplicate_fields():
    table = _table((1, "a", 16, MF.EXACT)).table(1)
    fm = p4runtime_pb2.FieldMatch(field_id=1)
    fm.lpm.value, fm.lpm.prefix_len = b"\x01", 16
    with pytest.raises(P4RuntimeError, match="Invalid match type"):
        matches.parse(table, [fm], 0)
    ok = p4runtime_pb2.FieldMatch(field_id=1)
    ok.exact.value = b"\x01"
    with pytest.raises(P4RuntimeError, match="Too many fields in match key"):
        matches.parse(table, [ok, ok], 0)
    two = _table((1, "a", 16, MF.EXACT), (2, "b", 16, MF.TERNARY)).table(1)
    with pytest.raises(P4RuntimeError, match="Unknown field in match key"):
        matches.parse(two, [ok, ok], 1)          # PI's words for a field given twice
    both = _table((1, "a", 16, MF.EXACT), (2, "b", 16, MF.EXACT)).table(1)
    with pytest.raises(P4RuntimeError, match="Missing non-ternary field in match key"):
        matches.parse(both, [ok, ok], 0)


def test_padded_key_is_canonicalized_and_equal():
    table = _table((1, "a", 32, MF.LPM)).table(1)
    a = p4runtime_pb2.FieldMatch(field_id=1)
    a.lpm.value, a.lpm.prefix_len = b"\x0a\x00\x00\x00", 8
    b = p4runtime_pb2.FieldMatch(field_id=1)
    b.lpm.value, b.lpm.prefix_len = b"\x00\x0a\x00\x00\x00", 8
    pa = matches.parse(table, [a], 0)
    assert pa.fields(table)[0] is a          # already canonical: the request's message
    pb = matches.parse(table, [b], 0)        # 5 bytes, zero-padded: the same entry (1.4)
    assert pb.key == pa.key
    assert pb.fields(table)[0].lpm.value == a.lpm.value
    c = p4runtime_pb2.FieldMatch(field_id=1)
    c.lpm.value, c.lpm.prefix_len = b"\x0b\x00\x00\x00", 8
    assert matches.parse(table, [c], 0).key != pa.key


# ---------------------------------------------------------------------- packet I/O
def _packet_io() -> PacketIO:
    info = p4info_pb2.P4Info()
    for name, fields in (("packet_out", (("egress_port", 9), ("flag", 1), ("_pad", 6))),
                         ("packet_in", (("ingress_port", 9), ("_pad", 7)))):
        cpm = info.controller_packet_metadata.add()
        cpm.preamble.name = name
        for i, (fname, width) in enumerate(fields, start=1):
            cpm.metadata.add(id=i, name=fname, bitwidth=width)
    return PacketIO(P4InfoIndex(info))


def test_packet_out_header_packing():
    io = _packet_io()
    out = p4runtime_pb2.PacketOut(payload=b"PAY")
    out.metadata.add(metadata_id=1, value=b"\x01\x03")    # port 259
    out.metadata.add(metadata_id=2, value=b"\x01")
    assert io.frame_of(out) == bytes([259 >> 1, ((259 & 1) << 7) | (1 << 6)]) + b"PAY"
    out.metadata.add(metadata_id=2, value=b"\x01")
    with pytest.raises(P4RuntimeError, match="twice"):
        io.frame_of(out)


def test_packet_in_header_parsing():
    io = _packet_io()
    msg = io.packet_in_of(bytes([0x80, 0x80]) + b"DATA")   # port 257
    assert msg.payload == b"DATA"
    assert [(m.metadata_id, m.value) for m in msg.metadata] == [(1, b"\x01\x01"), (2, b"\x00")]
    assert io.packet_in_of(b"\x01").payload == b"\x01"     # too short: passed whole


# ---------------------------------------------------------------------- artifacts
def test_artifact_round_trip_with_includes(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "defs.p4").write_text('#include "more.p4"\n')
    (tmp_path / "lib" / "more.p4").write_text("// more\n")
    (tmp_path / "prog.p4").write_text('#include <core.p4>\n#include "lib/defs.p4"\n')
    art = pipeline.make_artifact(str(tmp_path / "prog.p4"), {"N": "4"})
    assert set(art.files) == {"lib/defs.p4", "lib/more.p4"}
    again = pipeline.parse_device_config(art.to_bytes())
    assert again == art
    assert pipeline.parse_device_config(b"control c() { apply {} }").source.startswith("control")


@pytest.mark.parametrize("data, message", [
    (b"", "empty"), (b"\xff\xfe", "neither"), (b"{oops", "malformed"),
    (json.dumps({"format": "softswitch-pipeline", "version": 9}).encode(), "version"),
    (json.dumps({"format": "softswitch-pipeline", "version": 1, "source": 3}).encode(),
     "strings"),
])
def test_bad_device_configs(data, message):
    with pytest.raises(P4RuntimeError, match=message):
        pipeline.parse_device_config(data)


def test_artifact_files_cannot_escape(tmp_path):
    art = pipeline.Artifact("x", files={"../../etc/evil": "x"})
    with pytest.raises(P4RuntimeError, match="leaves"):
        pipeline.build(art, compiler=lambda path, defines: pytest.fail("compiled"))


# ---------------------------------------------------------------------- undo, errors
def test_undo_log_runs_backwards_and_survives_failures():
    done: list[int] = []
    log = UndoLog()
    log.push(lambda: done.append(1))
    mark = log.mark()
    log.push(lambda: done.append(2))
    log.push(lambda: (_ for _ in ()).throw(RuntimeError("boom")))
    log.push(lambda: done.append(3))
    failures = log.rollback(mark)
    assert done == [3, 2] and len(failures) == 1
    log.rollback()
    assert done == [3, 2, 1]


def test_write_failure_status_has_one_error_per_update():
    status = errors.write_failure_status([None, errors.not_found("gone")])
    assert status.code == code_pb2.UNKNOWN and len(status.details) == 2
    err = p4runtime_pb2.Error()
    status.details[1].Unpack(err)
    assert err.canonical_code == code_pb2.NOT_FOUND and err.message == "gone"


def test_source_with_own_includes_gets_a_hint():
    def compiler(path, defines):
        raise P4Error("defs.p4: No such file or directory")
    art = pipeline.Artifact('#include "defs.p4"\n')
    with pytest.raises(P4RuntimeError, match="send a softswitch artifact"):
        pipeline.build(art, compiler=compiler)


def test_write_failure_bytes_equal_the_message_form():
    results = [None, errors.not_found("gone"), None, errors.not_found("gone"),
               errors.invalid("bad")]
    assert errors.write_failure_bytes(results) == \
        errors.write_failure_status(results).SerializeToString()
