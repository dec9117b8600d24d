"""softswitch.bmv2json: p4c's BMv2 JSON loaded as softswitch's own pipeline.

Units: malformed JSON is refused with its line and column, a document missing parts
names them, an unsupported primitive is refused naming the action, and a hand-written
document forwards a packet. Against real p4c-bm2-ss (the ``reference_tools`` fixture):
a bounded sample of p4c's STF corpus gives the same verdict from the JSON as from the
source, and tailcc.p4's own STF tests do too (one on the compiled fast path).
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest

from softswitch import bmv2json
from softswitch.bmv2json import differential
from softswitch.stf import run_stf

ROOT = Path(__file__).resolve().parents[1]
CORPUS = differential.DEFAULT_CORPUS
# Spread over the corpus: arithmetic, checksums (with payload), stacks, exit, const entries,
# loops with break/continue, unions and union stacks, varbits, clone/resubmit/recirculate.
SAMPLE = ("arith-bmv2.p4", "checksum1-bmv2.p4", "checksum-l4-bmv2.p4",
          "runtime-index-2-bmv2.p4", "gauntlet_exit_combination_1-bmv2.p4",
          "issue1097-2-bmv2.p4", "table-entries-lpm-bmv2.p4", "table-entries-ternary-bmv2.p4",
          "subparser-with-header-stack-bmv2.p4", "forloop-bmv2.p4", "union-bmv2.p4",
          "issue561-6-bmv2.p4", "issue1025-bmv2.p4", "v1model-special-ops-bmv2.p4",
          "saturated-bmv2.p4")
TAILCC_STF = sorted(p.name for p in (ROOT / "tests" / "p4").glob("*.stf"))


def _field(name: str, width: int) -> list:
    return [name, width, False]


MINIMAL = {
    "header_types": [
        {"name": "scalars_0", "id": 0, "fields": []},
        {"name": "standard_metadata", "id": 1, "fields": [
            _field("ingress_port", 9), _field("egress_spec", 9), _field("egress_port", 9),
            _field("instance_type", 32), _field("packet_length", 32),
            _field("mcast_grp", 16), _field("_padding", 3)]},
        {"name": "eth_t", "id": 2, "fields": [_field("dst", 48), _field("src", 48),
                                              _field("type", 16)]},
    ],
    "headers": [
        {"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": True},
        {"name": "standard_metadata", "id": 1, "header_type": "standard_metadata",
         "metadata": True},
        {"name": "eth", "id": 2, "header_type": "eth_t", "metadata": False},
    ],
    "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [
        {"name": "start", "id": 0, "transition_key": [],
         "parser_ops": [{"op": "extract", "parameters": [{"type": "regular",
                                                           "value": "eth"}]}],
         "transitions": [{"type": "default", "value": None, "mask": None,
                          "next_state": None}]}]}],
    "deparsers": [{"name": "deparser", "id": 0, "order": ["eth"]}],
    "actions": [{"name": "fwd", "id": 0, "runtime_data": [{"name": "port", "bitwidth": 9}],
                 "primitives": [{"op": "assign", "parameters": [
                     {"type": "field", "value": ["standard_metadata", "egress_spec"]},
                     {"type": "runtime_data", "value": 0}]}]}],
    "pipelines": [
        {"name": "ingress", "id": 0, "init_table": "ingress.route", "conditionals": [],
         "action_profiles": [],
         "tables": [{"name": "ingress.route", "id": 0, "match_type": "exact",
                     "type": "simple", "max_size": 64, "with_counters": False,
                     "support_timeout": False, "direct_meters": None,
                     "key": [{"match_type": "exact", "name": "hdr.eth.dst",
                              "target": ["eth", "dst"], "mask": None}],
                     "action_ids": [0], "actions": ["fwd"], "next_tables": {"fwd": None},
                     "base_default_next": None,
                     "default_entry": {"action_id": 0, "action_const": False,
                                       "action_data": ["0x3"],
                                       "action_entry_const": False}}]},
        {"name": "egress", "id": 1, "init_table": None, "tables": [], "conditionals": [],
         "action_profiles": []},
    ],
    "checksums": [],
    "__meta__": {"version": [2, 23], "compiler": "https://github.com/p4lang/p4c"},
}


def test_minimal_document_forwards():
    switch = bmv2json.load(json.dumps(MINIMAL), fastpath="off")
    frame = bytes.fromhex("000000000001" "000000000002" "0800") + b"payload"
    out = switch.inject(1, frame)
    assert [(o.port, bytes(o.data)) for o in out] == [(3, frame)]


def test_malformed_json_is_located():
    text = json.dumps(MINIMAL, indent=1)
    broken = text.replace('"parsers": [', '"parsers": [,', 1)
    with pytest.raises(bmv2json.LoadError) as err:
        bmv2json.load(broken)
    line = text[:text.index('"parsers": [')].count("\n") + 1
    assert err.value.loc is not None and err.value.loc.line == line
    assert "malformed JSON" in err.value.message


def test_bytes_load_and_non_utf8_is_located():
    frame = bytes.fromhex("000000000001" "000000000002" "0800")
    switch = bmv2json.load(json.dumps(MINIMAL).encode(), fastpath="off")
    assert [o.port for o in switch.inject(1, frame)] == [3]
    with pytest.raises(bmv2json.LoadError, match="not UTF-8") as err:
        bmv2json.load(b'{\n  "headers": "\xff"}')
    assert err.value.loc is not None and (err.value.loc.line, err.value.loc.col) == (2, 15)


def test_missing_parts_are_named():
    doc = {k: v for k, v in MINIMAL.items() if k not in ("parsers", "actions")}
    with pytest.raises(bmv2json.LoadError, match="missing parsers, actions"):
        bmv2json.load(json.dumps(doc))


def test_unsupported_primitive_names_the_action():
    doc = copy.deepcopy(MINIMAL)
    doc["actions"][0]["primitives"].append({"op": "xyz", "parameters": []})
    text = json.dumps(doc, indent=2)
    with pytest.raises(bmv2json.LoadError,
                       match=r"actions\[0\] \"fwd\": primitive 'xyz' is not supported") as err:
        bmv2json.load(text)
    assert err.value.loc is not None
    assert text.splitlines()[err.value.loc.line - 1].strip() == '"name": "fwd",'


def test_wrong_member_type_is_named_not_a_traceback():
    doc = copy.deepcopy(MINIMAL)
    doc["pipelines"][0]["tables"][0]["key"][0]["match_type"] = 7
    with pytest.raises(bmv2json.LoadError, match=r"tables\[0\] \"ingress.route\""):
        bmv2json.load(json.dumps(doc))


def _paths(value: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    for key, sub in items:
        out += _paths(sub, (*prefix, key))
    return out


def test_mutated_documents_load_or_fail_with_a_load_error():
    """Any member replaced by a value of another shape: a LoadError, never a traceback."""
    replacements = (None, 7, "x", [], {}, -1, True, [1, 2], {"type": "field"})
    paths = _paths(MINIMAL)[1:]
    refused = 0
    for i, path in enumerate(paths):
        doc = copy.deepcopy(MINIMAL)
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = replacements[i % len(replacements)]
        try:
            bmv2json.load_program(json.dumps(doc))
        except bmv2json.LoadError:
            refused += 1
    assert refused > len(paths) // 2


def test_command_line_prints_the_located_error(tmp_path, capsys):
    from softswitch.bmv2json.__main__ import main

    doc = copy.deepcopy(MINIMAL)
    doc["actions"][0]["primitives"][0]["op"] = "xyz"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc, indent=2))
    assert main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:") and "primitive 'xyz' is not supported" in err
    path.write_text(json.dumps(MINIMAL))
    assert main([str(path)]) == 0


def test_file_path_and_text_agree(tmp_path):
    path = tmp_path / "minimal.json"
    path.write_text(json.dumps(MINIMAL))
    assert bmv2json.to_p4(path) == bmv2json.to_p4(json.dumps(MINIMAL))


@pytest.mark.skipif(not (CORPUS / "manifest.json").exists(),
                    reason=f"conformance corpus not found at {CORPUS}")
def test_corpus_sample_agrees(reference_tools, tmp_path):
    names = {f"p4_16_samples/{n}" for n in SAMPLE}
    cases = [c for c in differential.cases(CORPUS, tmp_path) if c.name in names]
    assert len(cases) == len(SAMPLE)
    outcomes = differential.compare(cases, reference_tools.p4c, jobs=2)
    lines = [f"{o.name}: {o.reason}" for o in outcomes if not o.agrees]
    assert not lines, "\n".join(lines)
    assert all(o.json_ok for o in outcomes)


@pytest.fixture(scope="module")
def tailcc_json(reference_tools, tmp_path_factory) -> Path:
    """p4c's JSON of tailcc.p4, with p4c's P4Info beside it (tailcc.p4info.txtpb)."""
    out = tmp_path_factory.mktemp("bmv2json") / "tailcc.json"
    subprocess.run([reference_tools.p4c, "--arch", "v1model", "-o", str(out),
                    "--p4runtime-files", str(out.with_suffix(".p4info.txtpb")),
                    str(ROOT / "p4src" / "tailcc.p4")], check=True, timeout=120)
    return out


def _control_plane_names(p4info) -> dict[str, set]:
    kinds = ("tables", "actions", "counters", "direct_counters", "meters", "direct_meters",
             "registers", "digests", "action_profiles", "value_sets")
    names: dict[str, set] = {k: {e.preamble.name for e in getattr(p4info, k)} for k in kinds}
    names["keys"] = {(t.preamble.name, m.name, m.match_type, m.bitwidth)
                     for t in p4info.tables for m in t.match_fields}
    names["params"] = {(a.preamble.name, p.name, p.bitwidth)
                       for a in p4info.actions for p in a.params}
    return names


def test_tailcc_names_are_p4c_p4info_names(tailcc_json):
    """The loaded program's control plane is p4c's: same tables, actions, keys, params."""
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    from softswitch.p4info import generate

    reference = text_format.Parse(tailcc_json.with_suffix(".p4info.txtpb").read_text(),
                                  p4info_pb2.P4Info())
    ours = generate(bmv2json.load_program(tailcc_json))
    assert _control_plane_names(ours) == _control_plane_names(reference)


@pytest.mark.parametrize("stf", TAILCC_STF)
def test_tailcc_from_p4c_json_as_from_source(tailcc_json, stf):
    path = ROOT / "tests" / "p4" / stf
    source = run_stf(str(ROOT / "p4src" / "tailcc.p4"), str(path), (str(ROOT / "p4src"),),
                     None, priority_queues=8)
    loaded = bmv2json.run_stf(tailcc_json, path, priority_queues=8)
    assert source.ok, source.report
    assert loaded.ok, loaded.report


def test_tailcc_from_p4c_json_on_the_compiled_fast_path(tailcc_json):
    """``require``: the C pipeline serves the JSON-loaded program or loading fails."""
    path = ROOT / "tests" / "p4" / "forwarding.stf"
    loaded = bmv2json.run_stf(tailcc_json, path, priority_queues=8, fastpath="require")
    assert loaded.ok, loaded.report
