"""The ``tailcc`` command: every command has --help, user errors end with a message and
a non-zero exit (never a traceback), and the commands work against a live switch."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from controlplane.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
TAILCC = [sys.executable, "-m", "controlplane.cli"]

COMMANDS = [["validate"], ["diff"], ["apply"], ["table"], ["table", "add"],
            ["table", "modify"], ["table", "delete"], ["table", "list"], ["show"],
            ["counters"], ["registers"], ["load"], ["watch"], ["diagnose"], ["export"]]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help(command, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args([*command, "--help"])
    assert info.value.code == 0
    assert "usage: tailcc" in capsys.readouterr().out


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([*TAILCC, *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def test_validate_ok_and_errors_without_traceback(tmp_path: Path) -> None:
    ok = _run(["validate", "controlplane/examples/two_leaf.yaml"])
    assert ok.returncode == 0 and "ok: 2 switches, 11 classes" in ok.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("classes:\n  - {name: a, id: 1, queue: 1, match: {dscp: 70}}\n"
                   "  - {name: b, id: 1, queue: 9, match: {dscp: 1}}\n")
    r = _run(["validate", str(bad)])
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert f"{bad}:2: classes[0].match.dscp: 70 is not in 0..63" in r.stderr
    assert f"{bad}:3: classes[1].queue: 9 is not in 0..7" in r.stderr
    missing = _run(["validate", str(tmp_path / "nope.yaml")])
    assert missing.returncode == 1 and "cannot read" in missing.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["apply"], "the following arguments are required: intent"),
    (["table", "add", "t", "--address", "127.0.0.1:1"], "needs --action"),
    (["counters", "x"], "name a switch: --intent FILE --switch NAME, or --address"),
    (["counters", "x", "--intent", "controlplane/examples/two_leaf.yaml"],
     "--switch is required: the intent has several (leaf1, leaf2)"),
    (["show", "-i", "controlplane/examples/two_leaf.yaml", "-s", "spine"],
     "no switch 'spine'"),
    (["apply", "controlplane/examples/two_leaf.yaml", "--switch", "spine"],
     "no switch spine in"),
    (["table", "add", "t", "k", "--action", "a", "--address", "127.0.0.1:1"],
     "match field 'k': expected NAME=VALUE"),
    (["show", "--address", "localhost"], "argument --address/-a: 'localhost' is not HOST:PORT"),
    (["show", "-a", "127.0.0.1:1", "--timeout", "0"], "argument --timeout: 0 must be > 0"),
    (["counters", "c", "-a", "127.0.0.1:1", "--index", "-2"], "--index: -2 must be >= 0"),
    (["diagnose", "-a", "127.0.0.1:1", "--ecn-threshold", "5"],
     "--ecn-threshold must be in (0, 1]"),
])
def test_usage_errors_exit_2(args, message) -> None:
    r = _run(args)
    assert r.returncode == 2, r
    assert message in r.stderr + r.stdout and "Traceback" not in r.stderr


def test_unreachable_switch_is_exit_1() -> None:
    r = _run(["show", "--address", "127.0.0.1:1", "--timeout", "0.5"])
    assert r.returncode == 1 and "no P4Runtime server answers" in r.stderr
    assert "Traceback" not in r.stderr


# --- live -------------------------------------------------------------------------------
def test_load_runtime_json_then_table_commands(softswitch_server: str, tmp_path: Path,
                                               capsys) -> None:
    from controlplane.p4rt.p4info import P4InfoIndex  # noqa: F401 - import check
    from softswitch.frontend.compiler import compile_program
    from softswitch.p4info import generate, write

    write(generate(compile_program(str(ROOT / "p4src/samples/l3_basic.p4"))),
          str(tmp_path / "l3.p4info.txtpb"))
    runtime = {
        "target": "bmv2", "p4info": "l3.p4info.txtpb", "bmv2_json": "l3.json",
        "table_entries": [
            {"table": "L3Ingress.ipv4_lpm", "default_action": True,
             "action_name": "L3Ingress.drop", "action_params": {}},
            {"table": "L3Ingress.ipv4_lpm", "match": {"hdr.ipv4.dst_addr": ["10.0.1.1", 32]},
             "action_name": "L3Ingress.set_next_hop",
             "action_params": {"port": 1, "src_mac": "00:aa:00:00:00:01",
                               "dst_mac": "08:00:00:00:01:11"}},
        ],
        "multicast_group_entries": [{"multicast_group_id": 1, "replicas": [
            {"egress_port": 1, "instance": 1}, {"egress_port": 2, "instance": 1}]}],
    }
    path = tmp_path / "s1-runtime.json"
    path.write_text(json.dumps(runtime))
    target = ["--address", softswitch_server]
    pipeline = ["--pipeline", str(ROOT / "p4src/samples/l3_basic.p4")]
    assert main(["load", str(path), *pipeline, *target]) == 0
    assert "loaded s1-runtime.json: 3 entries" in capsys.readouterr().out

    assert main(["table", "add", "ipv4_lpm", "hdr.ipv4.dst_addr=10.0.2.0/24", "--action",
                 "set_next_hop", "port=2", "src_mac=00:aa:00:00:00:01",
                 "dst_mac=08:00:00:00:02:22", *target]) == 0
    assert main(["table", "modify", "ipv4_lpm", "dst_addr=10.0.2.0/24", "--action", "drop",
                 *target]) == 0
    capsys.readouterr()
    assert main(["table", "list", "ipv4_lpm", *target]) == 0
    out = capsys.readouterr().out
    assert "L3Ingress.ipv4_lpm: 2 entries" in out
    assert "hdr.ipv4.dst_addr=10.0.1.1/32 -> L3Ingress.set_next_hop(port=1, " in out
    assert "hdr.ipv4.dst_addr=10.0.2.0/24 -> L3Ingress.drop()" in out
    assert main(["table", "delete", "ipv4_lpm", "dst_addr=10.0.2.0/24", *target]) == 0
    assert main(["table", "delete", "ipv4_lpm", "dst_addr=10.0.2.0/24", *target]) == 1
    assert "NOT_FOUND" in capsys.readouterr().err
    assert main(["counters", "port_rx", "--all", *target]) == 0
    assert "L3Ingress.port_rx: 64 of 64 cells" in capsys.readouterr().out

    # a bad file is refused before anything is written
    runtime["table_entries"][1]["match"] = {"hdr.ipv4.dst_addr": ["10.0.3.1", 40]}
    path.write_text(json.dumps(runtime))
    assert main(["load", str(path), "--no-pipeline", *target]) == 1
    assert "s1-runtime.json: table_entries[1].match.hdr.ipv4.dst_addr: prefix length 40" \
        in capsys.readouterr().err


def test_apply_diff_show_on_tailcc(softswitch_server: str, tmp_path: Path, capsys) -> None:
    intent = tmp_path / "i.yaml"
    intent.write_text(f"base: default\nswitches:\n  - name: s1\n    address: {softswitch_server}\n"
                      "    device_id: 1\n    ports: [1, 2]\n")
    pipeline = ["--pipeline", str(ROOT / "p4src/tailcc.p4")]
    assert main(["diff", str(intent), *pipeline]) == 0
    out = capsys.readouterr().out
    assert "s1: + TailccIngress.classify.traffic_class dscp=56&&&0x3f" in out
    assert "s1: would write" in out
    assert main(["apply", str(intent), *pipeline, "-q"]) == 0
    assert "pipeline loaded" in capsys.readouterr().out
    assert main(["apply", str(intent), "-q"]) == 0
    assert "s1: in sync, nothing to write" in capsys.readouterr().out
    assert main(["show", "-i", str(intent)]) == 0
    out = capsys.readouterr().out
    assert "TailccIngress.classify.traffic_class" in out and "clone sessions: 1" in out


def test_apply_every_undoes_drift(softswitch_server: str, tmp_path: Path, capsys) -> None:
    import threading
    import time

    from controlplane.p4rt import Client, EntityBuilder, P4InfoIndex
    from controlplane.p4rt.client import update

    intent = tmp_path / "i.yaml"
    intent.write_text(f"base: default\nswitches:\n  - name: s1\n    address: {softswitch_server}\n"
                      "    device_id: 1\n    ports: [1]\n")
    assert main(["apply", str(intent), "--pipeline", str(ROOT / "p4src/tailcc.p4"),
                 "-q"]) == 0
    codes: list[int] = []
    loop = threading.Thread(target=lambda: codes.append(main(
        ["apply", str(intent), "--every", "0.5", "--rounds", "5", "-q"])))
    loop.start()
    time.sleep(0.8)
    with Client(softswitch_server, 1, election_id=50) as c:  # an operator's stray edit
        index = P4InfoIndex(c.get_p4info())
        b = EntityBuilder(index)
        [control] = [e for e in c.read([b.table_wildcard("traffic_class")])
                     if e.table_entry.priority == 110]
        c.write([update("DELETE", control.table_entry)])
    intent.write_text("classes: [oops\n")                   # and a broken edit of the file
    loop.join(timeout=60)
    assert codes == [0]
    captured = capsys.readouterr()
    assert "s1: wrote 1 (1 insert, 0 modify, 0 delete)" in captured.out
    assert "is invalid, keeping the last valid intent" in captured.err
    with Client(softswitch_server, 1, election_id=51) as c:
        assert any(e.table_entry.priority == 110
                   for e in c.read([b.table_wildcard("traffic_class")]))
