"""run_stf end to end: a small v1model program on the real softswitch target."""

from pathlib import Path

import pytest
from programs import STF_NAMES, v1model_program

from softswitch.diagnostics import P4Error
from softswitch.stf import CommandSession, run_stf
from softswitch.v1model.fast_switch import load_switch_file

PROGRAM = v1model_program(
    types="header h_t { bit<8> a; bit<8> b; }", headers="h_t h;", extract=["hdr.h"],
    ingress="""
    counter(8, CounterType.packets_and_bytes) hits;
    register<bit<8>>(4) last;
    action fwd(bit<9> port, bit<8> tag) { sm.egress_spec = port; hdr.h.b = tag; }
    action drop() { mark_to_drop(sm); }
    table tern {
        key = { hdr.h.a : ternary; }
        actions = { fwd; drop; }
        default_action = drop();
    }
    apply {
        tern.apply();
        hits.count((bit<32>)hdr.h.a[2:0]);
        last.write(0, hdr.h.a);
    }
""",
    emit=["hdr.h"], names=STF_NAMES)

STF = """
# overlapping ternary entries: the higher STF priority wins
add tern 1 hdr.h.a:0x0* fwd(port:1, tag:0x11)
add I.tern 2 a:0x05 I.fwd(port:2, tag:0x22)
PACKET 0 05 00 ff
expect 2 05 22 ff $
packet 0 07 00
expect 1 07 11 $
packet 0 f0 00          # default action: dropped
wait
check_counter hits(5) packets == 1
check_counter hits(7) bytes == 2
check_counter hits(0) packets == 1
setdefault tern fwd(port:3, tag:0x33)
packet 0 f0 00
expect 3 f0 3*
"""


@pytest.fixture()
def program(tmp_path: Path) -> Path:
    path = tmp_path / "tern.p4"
    path.write_text(PROGRAM)
    return path


def write_stf(tmp_path: Path, text: str) -> str:
    path = tmp_path / "t.stf"
    path.write_text(text)
    return str(path)


def test_passing_stf(program: Path, tmp_path: Path):
    result = run_stf(str(program), write_stf(tmp_path, STF))
    assert result.ok, result.report
    assert "port 2: ok" in result.report


def test_wrong_expectation_fails_with_report(program: Path, tmp_path: Path):
    stf = write_stf(tmp_path, STF.replace("expect 2 05 22", "expect 2 05 23"))
    result = run_stf(str(program), stf)
    assert not result.ok
    assert "port 2: FAIL" in result.report and "expected 0523FF$" in result.report
    assert "port 1: ok" in result.report


def test_failed_counter_check_fails(program: Path, tmp_path: Path):
    result = run_stf(str(program), write_stf(tmp_path, STF.replace("bytes == 2", "bytes == 3")))
    assert not result.ok and "check_counter hits(7)" in result.report


def test_unknown_table_is_a_located_error(program: Path, tmp_path: Path):
    stf = write_stf(tmp_path, "packet 0 0000\nadd nosuch a:1 fwd(port:1, tag:1)\n")
    with pytest.raises(P4Error, match="no table 'nosuch'") as info:
        run_stf(str(program), stf)
    assert info.value.loc.line == 2 and info.value.loc.file == stf


def test_cli_session_on_the_switch(program: Path):
    session = CommandSession(load_switch_file(str(program)))
    session.run_line("table_add tern fwd 0x05&&&0xff => 4 0x44 1")
    assert session.control.inject(0, b"\x05\x00")[0].port == 4
    assert session.run_line("register_read last 0").text == "last[0]= 5"
    assert "1 entry" in session.run_line("table_dump tern").text


DIRECT = v1model_program(
    types="header h_t { bit<8> a; bit<8> b; }", headers="h_t h;", extract=["hdr.h"],
    ingress="""
    direct_counter(CounterType.packets_and_bytes) seen;
    action fwd(bit<9> port) { sm.egress_spec = port; seen.count(); }
    table t {
        key = { hdr.h.a : exact; hdr.h.isValid() : exact; }
        actions = { fwd; NoAction; }
        counters = seen;
        default_action = NoAction();
    }
    apply { t.apply(); }
""",
    emit=["hdr.h"], names=STF_NAMES)


def test_direct_counter_checked_through_entry_id(tmp_path: Path):
    program = tmp_path / "direct.p4"
    program.write_text(DIRECT)
    stf = write_stf(tmp_path, """
add t h.a:7 h.$valid$:1 fwd(port:1) = A
add t a:8 valid:1 fwd(port:2) = B
packet 1 07 00
packet 1 07 01 02
packet 1 08 00
expect 1 0700
expect 1 0701 02
check_counter seen($A) packets == 2
check_counter seen($A) bytes == 5
check_counter seen(B) packets >= 0
expect 2 08
""")
    result = run_stf(str(program), stf)
    assert result.ok, result.report
    # port 1 is both input and output here: the two expects match in order
    assert "port 1: ok (expected 2, received 2)" in result.report


def test_cli_modify_delete_and_clear_on_the_switch(program: Path):
    switch = load_switch_file(str(program))
    session = CommandSession(switch)
    out = session.run_line("table_add I.tern I.fwd 0x05&&&0xff => 4 0x44 10")
    handle = int(out.text.rsplit(" ", 1)[1])
    session.run_line(f"table_modify tern fwd {handle} 6 0x66")
    assert switch.inject(0, b"\x05\x00")[0].data == b"\x05\x66"
    session.run_line(f"table_delete tern {handle}")
    assert session.run_line("table_num_entries tern").text == "0"
    assert switch.inject(0, b"\x05\x00") == []  # back to the default: drop
    session.run_line("table_add tern fwd 0x0&&&0x0 => 1 0x11 1")
    session.run_line("table_clear tern")
    assert session.run_line("table_num_entries I.tern").text == "0"
