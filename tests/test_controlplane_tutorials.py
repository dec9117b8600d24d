"""``tailcc load`` of p4lang/tutorials runtime files (``sN-runtime.json``).

The fixture exercise ``tests/fixtures/tutorials/tunnel_lab`` (our own program and files,
shaped like a tutorials exercise) uses every form the tutorials' loader accepts; its
``build/`` is made by each test as ``make build`` would (p4c-bm2-ss for BMv2, softswitch
for softswitch). Checked: each form becomes the right P4Runtime entity; ``build/`` is
found from the exercise folder, from the runtime file's folder and from its parent;
bad files fail with the file, the entry and the reason, before anything is written;
the same file leaves the same state on softswitch and on BMv2; a refused entry rolls
the whole file back on both.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from bmv2_process import compile_bmv2, read_everything, start_bmv2
from p4.v1 import p4runtime_pb2

from controlplane.cli import main
from controlplane.commands.runtime_json import build_updates, find_file, read_runtime_file
from controlplane.p4rt import Client, EntityBuilder, P4InfoIndex
from controlplane.p4rt.p4info import load_p4info

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests/fixtures/tutorials/tunnel_lab"
P4INFO = "build/tunnel_lab.p4.p4info.txtpb"


@pytest.fixture()
def exercise(tmp_path) -> Path:
    """A copy of the fixture exercise with build/ holding softswitch's P4Info."""
    from softswitch.frontend.compiler import compile_program
    from softswitch.p4info import generate, write

    ex = tmp_path / "tunnel_lab"
    shutil.copytree(FIXTURE, ex)
    (ex / "build").mkdir()
    write(generate(compile_program(str(ex / "solution/tunnel_lab.p4"))), str(ex / P4INFO))
    return ex


def _everything(address: str, device_id: int) -> list[str]:
    with Client(address, device_id, election_id=40) as c:
        return read_everything(c, P4InfoIndex(c.get_p4info()))


# --- every form ------------------------------------------------------------------------------
def test_every_form_of_the_tutorials_loader(exercise: Path) -> None:
    conf = read_runtime_file(exercise / "pod-topo/s1-runtime.json")
    conf["clone_session_entries"][0]["packet_length_bytes"] = 128
    b = EntityBuilder(P4InfoIndex(load_p4info(str(exercise / P4INFO))))
    tables, replication = build_updates(conf, b)
    te = [u.entity.table_entry for u in tables]
    kinds = [p4runtime_pb2.Update.Type.Name(u.type) for u in tables]
    assert kinds == ["MODIFY", "INSERT", "INSERT", "INSERT", "INSERT", "MODIFY", "INSERT",
                     "INSERT", "INSERT", "INSERT"]
    assert te[0].is_default_action and not te[0].match
    assert (te[1].match[0].lpm.value, te[1].match[0].lpm.prefix_len) == \
        (bytes([10, 0, 1, 1]), 32)
    assert te[2].match[0].lpm.value == bytes([10, 0, 2, 0])          # [["10.0.2.0"], 24]
    assert te[2].action.action.params[1].value == b"\x02"            # "port": [2]
    assert te[3].match[0].exact.value == b"\x01"                      # [1]
    assert te[4].match[0].exact.value == b"\x02"                      # 2
    assert te[5].is_default_action and te[5].action.action.params[0].value == b"\x03"
    acl = {m.field_id: m for m in te[6].match}
    assert acl[1].ternary.value == bytes([10, 0, 1, 0])
    assert acl[1].ternary.mask == bytes([255, 255, 255, 0])
    assert (acl[2].range.low, acl[2].range.high) == ((1000).to_bytes(2, "big"),
                                                      (2000).to_bytes(2, "big"))
    assert te[6].priority == 20
    acl = {m.field_id: m for m in te[7].match}
    assert acl[1].ternary.value == bytes([10, 0, 2, 0])               # ints
    assert acl[2].range.low == acl[2].range.high == b"\x50"           # [[80], [80]]
    assert te[8].match[0].exact.value == b"\x04"                      # ingress_port [4]
    mcast = replication[0].entity.packet_replication_engine_entry.multicast_group_entry
    assert [(r.egress_port, r.instance) for r in mcast.replicas] == [(1, 1), (2, 1), (3, 1)]
    clone = replication[1].entity.packet_replication_engine_entry.clone_session_entry
    assert (clone.session_id, clone.packet_length_bytes) == (100, 128)
    assert [r.egress_port for r in clone.replicas] == [3]


def test_negative_ints_are_twos_complement(exercise: Path) -> None:
    b = EntityBuilder(P4InfoIndex(load_p4info(str(exercise / P4INFO))))
    conf = {"table_entries": [{"table": "tunnel_exact", "match": {"hdr.tunnel.dst_id": -1},
                               "action_name": "tunnel_forward",
                               "action_params": {"port": [-2]}}]}
    [u], _ = build_updates(conf, b)
    assert u.entity.table_entry.match[0].exact.value == b"\xff\xff"
    assert u.entity.table_entry.action.action.params[0].value == (510).to_bytes(2, "big")


# --- build/ is found as the tutorials' make run finds it ------------------------------------------
@pytest.mark.parametrize(("cwd", "runtime"), [
    (".", "pod-topo/s1-runtime.json"),        # make run: the exercise folder
    ("pod-topo", "s1-runtime.json"),          # the file's parent holds build/
    ("solution", "../pod-topo/s1-runtime.json"),
    (".", "s2-runtime.json"),
    ("solution", "../s2-runtime.json"),       # the file's own folder
])
def test_build_dir_is_found_from_the_exercise_and_subfolders(exercise, monkeypatch, cwd,
                                                             runtime) -> None:
    monkeypatch.chdir(exercise / cwd)
    path = Path(runtime)
    found = Path(find_file(read_runtime_file(path), "p4info", path)).resolve()
    assert found == (exercise / P4INFO).resolve()


def test_missing_build_dir_says_where_it_looked(exercise, monkeypatch, capsys) -> None:
    shutil.rmtree(exercise / "build")
    monkeypatch.chdir(exercise / "pod-topo")
    assert main(["load", "s1-runtime.json", "-a", "127.0.0.1:1"]) == 1
    err = capsys.readouterr().err
    assert "s1-runtime.json: p4info: build/tunnel_lab.p4.p4info.txtpb not found (looked in:" \
        in err and str(exercise / "pod-topo/build") in err and "make build" in err
    assert "Traceback" not in err


# --- bad input: what and where, never a traceback, nothing written --------------------------------
def _edit(conf: dict, path: str, value) -> None:
    *keys, last = path.split("/")
    obj = conf
    for k in keys:
        obj = obj[int(k)] if isinstance(obj, list) else obj[k]
    if isinstance(obj, list):
        obj[int(last)] = value
    else:
        obj[last] = value


@pytest.mark.parametrize(("path", "value", "message"), [
    ("table_entries/3/match/hdr.tunnel.dst_id", [1, 2],
     "table_entries[3].match.hdr.tunnel.dst_id: expected a number or an address string, "
     "got [1, 2]"),
    ("table_entries/1/match/hdr.ipv4.dstAddr", "10.0.1.1",
     'table_entries[1].match.hdr.ipv4.dstAddr: expected [address, prefix length] for this '
     'lpm key, got "10.0.1.1"'),
    ("table_entries/1/match/hdr.ipv4.dstAddr", ["10.0.1.1", 33],
     "table_entries[1].match.hdr.ipv4.dstAddr: prefix length 33 is not in 0..32"),
    ("table_entries/6/priority", "high", "table_entries[6].priority: expected an integer"),
    ("table_entries/6/priority", None, "table_entries[6]: MyIngress.acl has ternary/range"),
    ("table_entries/2/table", "MyIngress.nope", "table_entries[2]: no table"),
    ("table_entries/2/action_params/port", 512,
     "table_entries[2]: action MyIngress.ipv4_forward parameter port: 512 does not fit in "
     "9 bits"),
    ("table_entries/4/action_params", {"prt": 1}, "table_entries[4]: "),
    ("table_entries/0/default_action", "yes",
     "table_entries[0].default_action: expected true or false"),
    ("multicast_group_entries/0/replicas/1", {"instance": 1},
     "multicast_group_entries[0].replicas[1].egress_port: expected an integer"),
    ("clone_session_entries/0/packet_length_bytes", -1,
     "clone_session_entries[0].packet_length_bytes: expected an integer >= 0"),
    ("target", "tofino", "target: unknown target 'tofino'"),
])
def test_bad_runtime_files_name_the_entry_and_reason(exercise, monkeypatch, capsys, path,
                                                     value, message) -> None:
    runtime = exercise / "pod-topo/s1-runtime.json"
    conf = json.loads(runtime.read_text())
    _edit(conf, path, value)
    runtime.write_text(json.dumps(conf))
    monkeypatch.chdir(exercise)
    # an address nobody serves: the file must fail before any connection is made
    assert main(["load", "pod-topo/s1-runtime.json", "-a", "127.0.0.1:1",
                 "--timeout", "1"]) == 1
    err = capsys.readouterr().err
    assert message in err, err
    assert "pod-topo/s1-runtime.json: " in err and "Traceback" not in err
    assert "no P4Runtime server answers" not in err


def test_not_json_names_line_and_column(exercise, capsys) -> None:
    runtime = exercise / "s2-runtime.json"
    runtime.write_text('{\n  "target": "bmv2",\n  "table_entries": [,]\n}\n')
    assert main(["load", str(runtime), "-a", "127.0.0.1:1"]) == 1
    assert "s2-runtime.json:3:21: not JSON: Expecting value" in capsys.readouterr().err


# --- live: softswitch and BMv2 -----------------------------------------------------------------
EXPECTED = [
    "MyIngress.acl hdr.ipv4.srcAddr=10.0.1.0&&&0xffffff00 hdr.l4.dstPort=1000..2000 "
    "priority=20 -> MyIngress.deny()",
    "MyIngress.ipv4_lpm default -> MyIngress.drop()",
    "MyIngress.ipv4_lpm hdr.ipv4.dstAddr=10.0.1.1/32 -> MyIngress.ipv4_forward("
    "dstAddr=08:00:00:00:01:11, port=1)",
    "MyIngress.tunnel_exact default -> MyIngress.tunnel_forward(port=3)",
    "MyIngress.tunnel_exact hdr.tunnel.dst_id=1 -> MyIngress.tunnel_forward(port=1)",
    "clone session 100 -> [3] cos=0",
    "multicast group 1 -> [1, 2, 3]",
]


def _load_softswitch(address: str, runtime: str, *extra: str) -> int:
    return main(["load", runtime, "--pipeline", "solution/tunnel_lab.p4", "-a", address,
                 "--device-id", "1", *extra])


@pytest.mark.parametrize("self_rollback", [False, True])
def test_load_on_softswitch(exercise, softswitch_server, monkeypatch, capsys,
                            self_rollback) -> None:
    monkeypatch.chdir(exercise)
    extra = ["--self-rollback"] if self_rollback else []
    assert _load_softswitch(softswitch_server, "pod-topo/s1-runtime.json", *extra) == 0
    assert "loaded s1-runtime.json: 13 entries (8 table entries, 2 default actions, " \
           "1 multicast group, 2 clone sessions)" in capsys.readouterr().out
    held = _everything(softswitch_server, 1)
    for line in EXPECTED:
        assert line in held, (line, held)
    assert len([x for x in held if " default " not in x]) == 11


@pytest.fixture()
def bmv2_exercise(exercise, reference_tools) -> Path:
    """The exercise built by p4c-bm2-ss as the tutorials' make build does."""
    compile_bmv2(reference_tools, exercise / "solution/tunnel_lab.p4", exercise / "build")
    return exercise


def test_load_on_bmv2_leaves_what_softswitch_does(bmv2_exercise, reference_tools,
                                                  softswitch_server, monkeypatch, tmp_path,
                                                  capsys) -> None:
    monkeypatch.chdir(bmv2_exercise / "pod-topo")       # build/ is one level up
    sw = start_bmv2(reference_tools, tmp_path)
    try:
        assert main(["load", "s1-runtime.json", "-a", sw.address, "--device-id",
                     str(sw.device_id)]) == 0, capsys.readouterr().err
        on_bmv2 = _everything(sw.address, sw.device_id)
    finally:
        sw.stop()
    monkeypatch.chdir(bmv2_exercise)
    assert _load_softswitch(softswitch_server, "pod-topo/s1-runtime.json") == 0
    on_softswitch = _everything(softswitch_server, 1)
    assert on_bmv2 == on_softswitch
    for line in EXPECTED:
        assert line in on_bmv2


TRUNCATION_REFUSED = {
    "softswitch": "UNIMPLEMENTED: clone session truncation (packet_length_bytes) is not "
                  "supported",
    "bmv2": "UNKNOWN: Error when creating clone session in target",
}


@pytest.mark.parametrize("target", ["softswitch", "softswitch-self-rollback", "bmv2"])
@pytest.mark.parametrize("failure", ["duplicate", "truncation"])
def test_refused_entry_rolls_the_whole_file_back(exercise, softswitch_server, monkeypatch,
                                                 request, tmp_path, capsys, target,
                                                 failure) -> None:
    """s2 loaded first; then s1 with, at the very end (after the table entries, default
    actions and the multicast group went in), a duplicate clone session or one that
    truncates (neither target can): the switch must read as after s2."""
    sw = None
    if target == "bmv2":
        request.getfixturevalue("bmv2_exercise")
        sw = start_bmv2(request.getfixturevalue("reference_tools"), tmp_path)
        address, device, load = sw.address, sw.device_id, []
    else:
        address, device = softswitch_server, 1
        load = ["--pipeline", "solution/tunnel_lab.p4"]
    extra = ["--self-rollback"] if target.endswith("self-rollback") else []
    monkeypatch.chdir(exercise)
    try:
        base = ["-a", address, "--device-id", str(device), *extra]
        assert main(["load", "s2-runtime.json", *load, *base]) == 0
        before = _everything(address, device)
        conf = json.loads((exercise / "pod-topo/s1-runtime.json").read_text())
        extra_session = dict(conf["clone_session_entries"][0])
        if failure == "truncation":
            extra_session.update(clone_session_id=102, packet_length_bytes=128)
        conf["clone_session_entries"].append(extra_session)
        bad = exercise / "pod-topo/bad-runtime.json"
        bad.write_text(json.dumps(conf))
        capsys.readouterr()
        assert main(["load", str(bad.relative_to(exercise)), "--no-pipeline", *base]) == 1
        err = capsys.readouterr().err
        session = 100 if failure == "duplicate" else 102
        assert f"the switch refused INSERT clone session {session} -> [3]" in err, err
        if failure == "truncation":
            assert TRUNCATION_REFUSED[target.split("-")[0]] in err, err
        assert "rolled back the 13 update(s) already applied: the switch reads as before" \
            in err, err
        assert _everything(address, device) == before
    finally:
        if sw is not None:
            sw.stop()
