"""P4Info generation for small programs: every section p4c fills for v1model."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2
from programs import P4INFO_NAMES, v1model_program

from softswitch.diagnostics import P4Error
from softswitch.frontend import ast
from softswitch.frontend import types as T
from softswitch.frontend.compiler import check_program
from softswitch.frontend.elaborate import Elaboration, ExternInstance
from softswitch.frontend.parser import parse_text
from softswitch.p4info import generate, ids, read, write
from softswitch.p4info.builder import Builder

PROGRAM = v1model_program(
    types="""
@p4runtime_translation("example.org/port", 32)
type bit<9> port_t;
enum bit<8> kind_t { A = 1, B = 3 }
header h_t { bit<8> a; bit<16> b; }
@controller_header("packet_in") header pin_t { bit<9> port; @hidden bit<7> pad; }
struct dg_t { bit<8> a; kind_t k; }
""",
    headers="h_t h; pin_t pin;", meta="bit<32> m; dg_t d;",
    parser="""
    value_set<bit<16>>(4) vs;
    state start {
        pk.extract(hdr.h);
        transition select(hdr.h.b) { vs: accept; default: accept; }
    }
""",
    ingress="""
    counter(32w16, CounterType.packets_and_bytes) c;
    meter(32w8, MeterType.bytes) mt;
    register<bit<12>>(32w4) r;
    direct_counter(CounterType.packets) dc;
    action fwd(port_t p, bit<8> v) { hdr.h.a = v; }
    @id(7) action drop() { mark_to_drop(sm); }
    action learn() { digest(1, meta.d); }
    table t {
        key = { hdr.h.a : exact; hdr.h.b : range; }
        actions = { @tableonly fwd; drop; @defaultonly learn; }
        const default_action = drop();
        counters = dc;
        size = 64;
    }
    apply { t.apply(); c.count(0); }
""",
    emit=["hdr.h"], package_annotation='@pkginfo(name="demo", version="1.2") ',
    names=P4INFO_NAMES)


@pytest.fixture(scope="module")
def info() -> p4info_pb2.P4Info:
    return generate(check_program(parse_text(PROGRAM, "demo.p4")))


def expected_id(kind: int, name: str) -> int:
    return (kind << 24) | (ids.jenkins_one_at_a_time(name) & 0xFFFFFF)


def test_pkg_info(info: p4info_pb2.P4Info) -> None:
    assert (info.pkg_info.arch, info.pkg_info.name, info.pkg_info.version) == (
        "v1model", "demo", "1.2")


def test_table(info: p4info_pb2.P4Info) -> None:
    (t,) = info.tables
    assert (t.preamble.name, t.preamble.alias) == ("Ing.t", "t")
    assert t.preamble.id == expected_id(ids.TABLE, "Ing.t")
    assert [(m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields] == [
        (1, "hdr.h.a", 8, p4info_pb2.MatchField.EXACT),
        (2, "hdr.h.b", 16, p4info_pb2.MatchField.RANGE)]
    scopes = [r.scope for r in t.action_refs]
    assert scopes == [p4info_pb2.ActionRef.TABLE_ONLY, p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
                      p4info_pb2.ActionRef.DEFAULT_ONLY]
    drop_id = (ids.ACTION << 24) | 7
    assert t.const_default_action_id == drop_id == t.initial_default_action.action_id
    assert t.size == 64
    assert list(t.direct_resource_ids) == [expected_id(ids.DIRECT_COUNTER, "Ing.dc")]


def test_actions_and_params(info: p4info_pb2.P4Info) -> None:
    by_name = {a.preamble.name: a for a in info.actions}
    assert set(by_name) == {"Ing.fwd", "Ing.drop", "Ing.learn"}
    fwd = by_name["Ing.fwd"]
    assert [(p.id, p.name, p.bitwidth, p.type_name.name) for p in fwd.params] == [
        (1, "p", 32, "port_t"), (2, "v", 8, "")]
    translated = info.type_info.new_types["port_t"].translated_type
    assert (translated.uri, translated.sdn_bitwidth) == ("example.org/port", 32)


def test_externs(info: p4info_pb2.P4Info) -> None:
    (c,) = info.counters
    assert (c.preamble.name, c.size, c.spec.unit) == ("Ing.c", 16, p4info_pb2.CounterSpec.BOTH)
    (m,) = info.meters
    assert (m.preamble.name, m.size, m.spec.unit) == ("Ing.mt", 8, p4info_pb2.MeterSpec.BYTES)
    (r,) = info.registers
    assert (r.preamble.name, r.size, r.type_spec.bitstring.bit.bitwidth) == ("Ing.r", 4, 12)
    (dc,) = info.direct_counters
    assert dc.direct_table_id == info.tables[0].preamble.id
    assert dc.spec.unit == p4info_pb2.CounterSpec.PACKETS


def test_digest_value_set_and_controller_header(info: p4info_pb2.P4Info) -> None:
    (d,) = info.digests
    assert d.preamble.name == "dg_t" and d.type_spec.struct.name == "dg_t"
    members = info.type_info.structs["dg_t"].members
    assert [m.name for m in members] == ["a", "k"]
    assert members[1].type_spec.serializable_enum.name == "kind_t"
    enum = info.type_info.serializable_enums["kind_t"]
    assert [(m.name, m.value) for m in enum.members] == [("A", b"\x01"), ("B", b"\x03")]
    (vs,) = info.value_sets
    assert (vs.preamble.name, vs.size, vs.match[0].bitwidth) == ("P.vs", 4, 16)
    (cpm,) = info.controller_packet_metadata
    assert cpm.preamble.name == "packet_in"
    assert cpm.preamble.id == expected_id(ids.CONTROLLER_HEADER, "pin_t")
    assert [(md.name, md.bitwidth) for md in cpm.metadata] == [("port", 9)]


@pytest.mark.parametrize("suffix", [".txt", ".txtpb", ".bin", ".json"])
def test_write_and_read_back(info: p4info_pb2.P4Info, tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"out{suffix}"
    write(info, path)
    assert read(path) == info


def test_unknown_suffix_is_a_user_error(info: p4info_pb2.P4Info, tmp_path: Path) -> None:
    with pytest.raises(P4Error, match="suffix"):
        write(info, tmp_path / "out.yaml")


def test_anonymous_property_extern_is_rejected_for_p4runtime() -> None:
    text = PROGRAM.replace("counters = dc;", "implementation = action_profile(32w4);")
    with pytest.raises(P4Error, match="anonymous table property 'implementation'"):
        generate(check_program(parse_text(text, "anon.p4")))



def test_index_type_name_for_user_defined_index_types() -> None:
    # The index type of counter<I>/meter<I>/register<T, I> names a ``type``: P4Info
    # records it (exercised on the builder directly: it only reads the type argument).
    idx_decl = ast.TypedefDecl("idx_t", ast.BitTypeRef(ast.IntLiteral(32)), newtype=True)
    ref = ast.NamedTypeRef("idx_t")
    ref.resolved = T.NewType("idx_t", T.BitsType(32), idx_decl)
    ext = ExternInstance(ast.InstanceDecl("c", ref, []), "c", "c", "counter", None, [ref],
                         {}, {}, None)
    builder = Builder(Elaboration(ast.Program([])))
    msg = p4info_pb2.Counter()
    builder._index_type(ext, 0, msg)
    assert msg.index_type_name.name == "idx_t"
    assert builder.p4info.type_info.new_types["idx_t"].original_type.bitstring.bit.bitwidth == 32


FIELD_IDS = v1model_program(
    types="header h_t { bit<8> a; bit<16> b; }", headers="h_t h;", meta="bit<32> m;",
    extract=["hdr.h"],
    ingress="""
    action set(@id(5) bit<8> first, bit<8> second, @id(1) bit<4> third) { hdr.h.a = first; }
    table sel {
        key = { meta.m : selector; hdr.h.a : exact; hdr.h.b : ternary @id(9); }
        actions = { set; }
        @name("prof") implementation = action_selector(HashAlgorithm.crc16, 32w64, 32w8);
    }
    apply { sel.apply(); }
""",
    emit=["hdr.h"], names=P4INFO_NAMES)


def test_field_ids_follow_id_annotations_and_selectors_take_an_id() -> None:
    info = generate(check_program(parse_text(FIELD_IDS, "ids.p4")))
    (t,) = info.tables
    assert [(m.id, m.name) for m in t.match_fields] == [(2, "hdr.h.a"), (9, "hdr.h.b")]
    (a,) = [x for x in info.actions if x.preamble.name == "Ing.set"]
    assert [(p.id, p.name, p.bitwidth, p.type_name.name) for p in a.params] == [
        (5, "first", 8, ""), (2, "second", 8, ""), (1, "third", 4, "")]
    (ap,) = info.action_profiles
    assert ap.preamble.name == "prof" and ap.with_selector and list(ap.table_ids) == [
        t.preamble.id]


def test_hidden_action_is_referenced_by_id_but_not_described() -> None:
    text = PROGRAM.replace("@defaultonly learn; }", "@defaultonly learn; secret; }").replace(
        "    table t {", "    @hidden action secret() { }\n    table t {")
    info = generate(check_program(parse_text(text, "hidden.p4")))
    secret_id = expected_id(ids.ACTION, "Ing.secret")
    assert secret_id in [r.id for r in info.tables[0].action_refs]
    assert secret_id not in [a.preamble.id for a in info.actions]


def test_string_translated_type_has_no_width() -> None:
    text = PROGRAM.replace('("example.org/port", 32)', '("example.org/port", string)')
    info = generate(check_program(parse_text(text, "str.p4")))
    fwd = next(a for a in info.actions if a.preamble.name == "Ing.fwd")
    assert (fwd.params[0].bitwidth, fwd.params[0].type_name.name) == (0, "port_t")
    assert info.type_info.new_types["port_t"].translated_type.HasField("sdn_string")


def test_duplicate_control_plane_names_are_rejected() -> None:
    text = PROGRAM.replace("    table t {", '''    @name("t") table other {
        key = { hdr.h.a : exact; }
        actions = { drop; }
    }
    table t {''').replace("apply { t.apply();", "apply { other.apply(); t.apply();")
    with pytest.raises(P4Error, match="duplicate name"):
        generate(check_program(parse_text(text, "dup.p4")))
