"""softswitch.stf.compat: the STF lines p4c's BMv2 STF driver would reject or read
differently are reported, and the runner follows the driver where it ignores a command.

What the driver does with each construct was measured with p4c 1.2.5.16's
``bmv2stf.py`` (tests/test_stf_p4c_driver.py runs the behavioural ones on BMv2)."""

from pathlib import Path

import pytest
from programs import STF_NAMES, v1model_program

from softswitch.stf import run_stf
from softswitch.stf.compat import check
from softswitch.stf.stf import parse_stf_text
from softswitch.v1model.fast_switch import load_switch_file

PROGRAM = v1model_program(
    types="header h_t { bit<8> a; bit<8> b; }", headers="h_t h;", extract=["hdr.h"],
    ingress="""
    action fwd(bit<9> port, bit<8> tag) { sm.egress_spec = port; hdr.h.b = tag; }
    action drop() { mark_to_drop(sm); }
    table tern { key = { hdr.h.a : ternary; } actions = { fwd; drop; } default_action = drop(); }
    table lp { key = { hdr.h.b : lpm; } actions = { fwd; drop; } default_action = drop(); }
    table rng { key = { hdr.h.a : range; } actions = { fwd; drop; } default_action = drop(); }
    table ex { key = { hdr.h.b : exact; } actions = { fwd; drop; } default_action = drop(); }
    apply {
        if (hdr.h.a == 0xee) { ex.apply(); }
        else if (hdr.h.a == 0xdd) { lp.apply(); }
        else if (hdr.h.a == 0xcc) { rng.apply(); }
        else { tern.apply(); }
    }
""",
    emit=["hdr.h"], names=STF_NAMES)


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("compat") / "p.p4"
    path.write_text(PROGRAM)
    return path


@pytest.fixture(scope="module")
def tables(program: Path):
    return load_switch_file(program).tables()


def notes(text: str, tables) -> list[tuple[int, str]]:
    return [(n.loc.line, n.kind) for n in check(parse_stf_text(text, "t.stf"), tables)]


def test_portable_stf_has_no_notes(tables):
    text = ("add tern 5 a:0x0* fwd(port:1, tag:0x11)\n"
            "add tern 7 hdr.h.a:0b0000010* fwd(port:2, tag:17)\n"
            "add lp b:0x1* fwd(port:3, tag:0)\n"
            "add ex b:255 fwd(port:4, tag:0b1)\n"
            "setdefault ex fwd(port:5, tag:0x05)\n"
            "mirroring_add 5 1\nregister_reset r\n"
            "packet 0 0102\nexpect 1 01**\nexpect 2\nwait\n"
            "check_counter c(1) packets == 1\ncounter_read c 1\nregister_read r 0\n")
    assert notes(text, tables) == []


@pytest.mark.parametrize("line", [
    "add tern 5 a:0x05&&&0xff fwd(port:1, tag:0x11)",      # '&&&' is not in its lexer
    "add tern 5 a:5 fwd(port:1, tag:0x11)",                # decimal ternary: an exception
    "add tern 5 a:* fwd(port:1, tag:0x11)",
    "add lp b:0x10/4 fwd(port:1, tag:0x11)",               # value/len crashes the driver
    "add lp b:16 fwd(port:1, tag:0x11)",                   # decimal LPM: '0x0x10/…'
    "add ex b:0x1* fwd(port:1, tag:0x11)",                 # wildcard in an exact key
    "add ex b:0xff fwd(port:1.0, tag:0x11)",
    "add ex b:0xff fwd(port:1, tag:-1)",
])
def test_values_the_driver_cannot_read(line, tables):
    assert notes(line, tables) == [(1, "syntax")]


def test_addresses_are_not_stf_values(tables):
    text = ("add ex b:10.0.0.1 fwd(port:1, tag:0x11)\n"
            "add ex b:0xff fwd(port:1, tag:00:11:22:33:44:55)\n")
    assert notes(text, tables) == [(1, "syntax"), (2, "syntax")]


def test_range_tables_and_missing_priorities(tables):
    text = ("add rng 5 a:1..9 fwd(port:1, tag:0x11)\n"
            "add rng a:0x01 fwd(port:1, tag:0x11)\n"
            "add tern a:0x01 fwd(port:1, tag:0x11)\n")
    assert notes(text, tables) == [(1, "match-kind"), (2, "match-kind"), (2, "priority"),
                                   (3, "priority")]


def test_cli_commands_are_not_stf(tables):
    text = ("table_add ex fwd 5 => 1 2\ntable_set_default ex drop\ncounter_reset c\n"
            "table_dump ex\nregister_read r\nremove all\n")
    assert notes(text, tables) == [(1, "grammar"), (2, "grammar"), (3, "grammar"),
                                   (4, "grammar"), (5, "grammar"), (6, "grammar")]


def test_commands_the_driver_ignores(tables):
    text = "mc_node_update 0 1 2\nmirroring_get 5\nmeter_get_rates m 0\n"
    assert notes(text, tables) == [(1, "ignored")]


def test_control_commands_after_a_packet(tables):
    text = ("add ex b:1 fwd(port:1, tag:0x11)\npacket 0 0001\nexpect 1\n"
            "check_counter c(1) packets == 1\nregister_read r 0\nwait\n"
            "add ex b:2 fwd(port:2, tag:0x22)\nregister_write r 0 5\nmirroring_add 5 1\n")
    assert notes(text, tables) == [(7, "order"), (8, "order"), (9, "order")]


def _run(program: Path, tmp_path: Path, text: str, **kw):
    stf = tmp_path / "t.stf"
    stf.write_text(text)
    return run_stf(str(program), str(stf), **kw)


def test_remove_all_still_clears_but_is_not_stf(program, tmp_path):
    """p4c's driver cannot parse ``remove all`` (a parse error: its lexer reads 'all' as a
    name); softswitch keeps clearing the tables and warns."""
    res = _run(program, tmp_path, "add ex b:0x00 fwd(port:1, tag:0x11)\nremove all\n"
                                  "packet 0 ee00\n")
    assert res.ok, res.report
    assert [n.kind for n in res.warnings] == ["grammar"]


def test_mc_node_update_is_ignored_as_by_the_driver(program, tmp_path):
    """p4c's driver parses ``mc_node_update`` but leaves it out of the commands it passes
    to simple_switch_CLI: the node keeps its ports, on both."""
    res = _run(program, tmp_path, "mc_mgrp_create 1\nmc_node_create 0 1\n"
                                  "mc_node_associate 1 0\nmc_node_update 0 2 3\n"
                                  "packet 0 0000\n")
    assert res.ok, res.report
    assert any("'mc_node_update' ignored" in line for line in res.log)


def test_mirroring_delete_and_getters_are_accepted(program, tmp_path):
    res = _run(program, tmp_path, "mirroring_add 5 1\nmirroring_get 5\nmirroring_delete 5\n"
                                  "meter_get_rates m 0\npacket 0 0000\n")
    assert res.ok, res.report
    assert res.warnings == []


def test_warnings_are_printed_by_the_cli(program, tmp_path, capsys):
    from softswitch.cli import main

    stf = tmp_path / "w.stf"
    stf.write_text("add tern a:0x01 fwd(port:1, tag:0x11)\npacket 0 0100\nexpect 1 0111 $\n")
    assert main(["stf", str(program), str(stf)]) == 0
    err = capsys.readouterr().err
    assert f"{stf}:1:1: warning: an entry of I.tern" in err and "[p4c-priority]" in err
