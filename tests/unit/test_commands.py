"""The command language: STF and simple_switch_CLI lines become the right SwitchControl calls.

The control used here records what it is asked to do (the switch itself is tested on its
own); it raises like a switch on unknown counters so error paths are exercised too.
"""

import pytest

from softswitch.core.control import ActionInfo, KeyInfo, KeyMatch, PacketOut, TableInfo
from softswitch.diagnostics import P4Error, SourceLoc
from softswitch.stf.commands import parse_command
from softswitch.stf.session import CLI_PRIORITY_BASE, CommandSession
from softswitch.stf.stf import parse_stf_text, run_commands

TABLES = [
    TableInfo("ingress.ipv4_lpm", (KeyInfo("hdr.ipv4.dstAddr", "lpm", 32),),
              (ActionInfo("ingress.set_nhop", (("port", 9), ("dmac", 48))),
               ActionInfo("NoAction", ()))),
    TableInfo("ingress.acl", (KeyInfo("hdr.ipv4.srcAddr", "ternary", 32),
                              KeyInfo("hdr.h.isValid()", "exact", 1),
                              KeyInfo("hdr.extra[0].h", "exact", 8),
                              KeyInfo("meta.port", "range", 9),
                              KeyInfo("meta.opt", "optional", 4)),
              (ActionInfo("ingress.drop", ()), ActionInfo("egress.drop", ()),
               ActionInfo("ingress.fwd", (("port", 9),)))),
    TableInfo("egress.acl", (KeyInfo("x", "exact", 8),), (ActionInfo("NoAction", ()),)),
]


class RecordingControl:
    """A SwitchControl that records calls; inject echoes packets from port p to port p+1."""

    def __init__(self):
        self.calls = []
        self.counters = {("cnt", 3): (2, 128)}

    def tables(self):
        return TABLES

    def table_info(self, name):
        return next(t for t in TABLES if t.name == name)

    def table_add(self, table, keys, action, args, priority=None):
        self.calls.append(("add", table, keys, action, args, priority))
        return 40 + len(self.calls)

    def table_set_default(self, table, action, args):
        self.calls.append(("default", table, action, args))

    def table_clear(self, table):
        self.calls.append(("clear", table))

    def mc_node_create(self, rid, ports):
        self.calls.append(("node", rid, ports))
        return 0

    def counter_read(self, name, index):
        if (name, index) not in self.counters:
            raise P4Error(f"no counter cell {name}[{index}]")
        return self.counters[(name, index)]

    def inject(self, port, data):
        return [PacketOut(port + 1, data)]


def run(line):
    control = RecordingControl()
    outcome = CommandSession(control).run_line(line, SourceLoc("x.stf", 4, 1))
    return control.calls, outcome


def test_stf_add_resolves_suffix_names_and_fills_lpm_prefix():
    calls, _ = run("add ipv4_lpm hdr.ipv4.dstAddr:0x0a01**** set_nhop(dmac:0x0a, port:3)")
    assert calls == [("add", "ingress.ipv4_lpm",
                      [KeyMatch("hdr.ipv4.dstAddr", "lpm", 0x0A010000, prefix_len=16)],
                      "ingress.set_nhop", [3, 0x0A], None)]


def test_stf_add_key_forms_and_defaults():
    calls, _ = run("add ingress.acl 10 srcAddr:0x****0101 hdr.h.$valid$:1 extra$0.h:7 "
                   "meta.port:2..9 ingress.fwd(port:1)")
    (_, table, keys, action, args, prio), = calls
    # p4c's STF driver gives BMv2 10000 - 10 (lower wins), on the switch's one BMv2 scale
    assert (table, action, args, prio) == ("ingress.acl", "ingress.fwd", [1],
                                           CLI_PRIORITY_BASE - (10000 - 10))
    assert keys == [KeyMatch("hdr.ipv4.srcAddr", "ternary", 0x0101, 0xFFFF),
                    KeyMatch("hdr.h.isValid()", "exact", 1),
                    KeyMatch("hdr.extra[0].h", "exact", 7),
                    KeyMatch("meta.port", "range", 2, high=9),
                    KeyMatch("meta.opt", "optional", 0, wildcard=True)]


def test_missing_keys_get_bmv2stf_defaults():
    calls, _ = run("add ingress.acl valid:0 ingress.drop()")
    keys = calls[0][2]
    assert keys[0] == KeyMatch("hdr.ipv4.srcAddr", "ternary", 0, 0)
    assert keys[2] == KeyMatch("hdr.extra[0].h", "exact", 0)
    assert keys[3] == KeyMatch("meta.port", "range", 0, high=511)


def test_lpm_explicit_length_and_decimal_is_full_width():
    calls, _ = run("add ipv4_lpm dstAddr:10.0.0.0/8 NoAction()")
    assert calls[0][2] == [KeyMatch("hdr.ipv4.dstAddr", "lpm", 0x0A000000, prefix_len=8)]
    calls, _ = run("add ipv4_lpm dstAddr:167772161 NoAction()")
    assert calls[0][2] == [KeyMatch("hdr.ipv4.dstAddr", "lpm", 167772161, prefix_len=32)]


def test_cli_table_add_positional_with_bmv2_priority():
    calls, out = run("table_add ingress.acl ingress.fwd 0x0a000000&&&0xff000000 1 3 1->5 * "
                     "=> 7 20")
    (_, table, keys, action, args, prio), = calls
    assert args == [7] and prio == CLI_PRIORITY_BASE - 20
    assert keys[0] == KeyMatch("hdr.ipv4.srcAddr", "ternary", 0x0A000000, 0xFF000000)
    assert keys[3] == KeyMatch("meta.port", "range", 1, high=5)
    assert "handle" in out.text


def test_cli_set_default_and_mac_argument():
    calls, _ = run("table_set_default ipv4_lpm set_nhop 2 00:11:22:33:44:55")
    assert calls == [("default", "ingress.ipv4_lpm", "ingress.set_nhop", [2, 0x001122334455])]


@pytest.mark.parametrize("line, message", [
    ("add nosuch x:1 a()", "no table 'nosuch'"),
    ("add acl hdr.ipv4.srcAddr:1 ingress.drop()", "ambiguous"),
    ("add ingress.acl valid:1 drop()", "action name 'drop' in table ingress.acl is ambiguous"),
    ("add ipv4_lpm dstAddr:1 set_nhop(port:1)", "missing argument"),
    ("add ipv4_lpm dstAddr:1 set_nhop(port:1, dmac:2, ttl:3)", "no parameter 'ttl'"),
    ("add ipv4_lpm dstAddr:1 set_nhop(port:512, dmac:2)", "does not fit in 9 bits"),
    ("add ipv4_lpm nokey:1 NoAction()", "no key field 'nokey'"),
    ("add ipv4_lpm dstAddr:0x1/40 NoAction()", "prefix length 40"),
    ("table_add ingress.ipv4_lpm NoAction 1 2 =>", "1 key field"),
    ("check_counter nosuch(1) packets == 1", "no counter cell"),
    ("check_counter cnt($B)", "unknown entry id"),
])
def test_errors_name_what_and_where(line, message):
    with pytest.raises(P4Error, match=message) as info:
        run(line)
    assert str(info.value.loc) == "x.stf:4:1"


def test_check_counter_outcomes():
    _, ok = run("check_counter cnt(3) packets == 2")
    assert ok.failure is None
    _, bad = run("check_counter cnt(3) bytes < 100")
    assert "expected bytes < 100" in bad.failure
    _, zero = run("check_counter cnt(3)")
    assert zero.failure is not None


def test_remove_all_clears_every_table_and_node_create():
    calls, _ = run("remove all")
    assert calls == [("clear", t.name) for t in TABLES]
    calls, out = run("mc_node_create 400 6 7")
    assert calls == [("node", 400, [6, 7])] and "handle 0" in out.text


def test_parse_command_rejects_unknown():
    with pytest.raises(P4Error, match="unknown command"):
        parse_command("table_frob t")


def test_run_commands_checks_outputs_per_port():
    stf = "packet 0 0102\nexpect 1 0102\npacket 4 ff\nexpect 5 fe\n"
    result = run_commands(RecordingControl(), parse_stf_text(stf, "r.stf"))
    assert not result.ok
    assert "port 5: FAIL" in result.report and "port 1: ok" in result.report
    good = run_commands(RecordingControl(), parse_stf_text("packet 0 01\nexpect 1 01 $\n"))
    assert good.ok
    # a packet emitted on a port no STF line names is not captured, as with bmv2stf
    unnamed = run_commands(RecordingControl(), parse_stf_text("packet 0 01\n"))
    assert unnamed.ok and "port 1: 1 packet(s) not checked" in unnamed.report
    # but on a named port, an unexpected packet fails
    extra = run_commands(RecordingControl(), parse_stf_text("packet 0 01\nexpect 0 01\n"))
    assert not extra.ok


def test_check_counter_failure_fails_the_run():
    result = run_commands(RecordingControl(), parse_stf_text("check_counter cnt(3) packets == 5\n",
                                                             "c.stf"))
    assert not result.ok and "c.stf:1:1: check_counter cnt(3)" in result.report


def test_meter_rates_parse_and_need_a_switch_that_offers_them():
    cmd = parse_command("meter_set_rates m 2 0.5:10 1.5:20")
    assert cmd.name == "m" and cmd.index == 2 and cmd.rates == ((0.5, 10), (1.5, 20))
    assert parse_command("meter_array_set_rates m 1:1").index is None
    with pytest.raises(P4Error, match="RATE:BURST"):
        parse_command("meter_set_rates m 2 fast")
    with pytest.raises(P4Error, match="not supported by this switch"):
        run("meter_set_rates m 2 0.5:10")


def test_run_script_skips_comments_and_locates_errors():
    control = RecordingControl()
    session = CommandSession(control)
    outs = session.run_script("# setup\n\ntable_clear ingress.acl  # all\nmc_node_create 1 2\n")
    assert control.calls == [("clear", "ingress.acl"), ("node", 1, [2])] and len(outs) == 2
    with pytest.raises(P4Error) as info:
        session.run_script("table_clear egress.acl\n  bogus 1\n", "cmds.txt")
    assert str(info.value.loc) == "cmds.txt:2:3"


@pytest.mark.parametrize("line, key", [
    ("add ingress.acl srcAddr:0b1*1 ingress.drop()",
     KeyMatch("hdr.ipv4.srcAddr", "ternary", 0b101, 0b101)),
    ("add ingress.acl srcAddr:0o7* ingress.drop()",
     KeyMatch("hdr.ipv4.srcAddr", "ternary", 0o70, 0o70)),
    ("add ingress.acl srcAddr:* ingress.drop()", KeyMatch("hdr.ipv4.srcAddr", "ternary", 0, 0)),
    ("add ingress.acl srcAddr:10.0.0.0/8 ingress.drop()",
     KeyMatch("hdr.ipv4.srcAddr", "ternary", 0x0A000000, 0xFF000000)),
    ("add ingress.acl srcAddr:-1 ingress.drop()",
     KeyMatch("hdr.ipv4.srcAddr", "ternary", 0xFFFFFFFF, 0xFFFFFFFF)),
    ("add ingress.acl srcAddr:0x0f&&&0xf0 ingress.drop()",
     KeyMatch("hdr.ipv4.srcAddr", "ternary", 0, 0xF0)),
])
def test_ternary_value_forms(line, key):
    calls, _ = run(line)
    assert calls[0][2][0] == key


def test_lpm_digit_inference_and_address_forms():
    calls, _ = run("add ipv4_lpm dstAddr:0x0a0100** NoAction()")
    assert calls[0][2][0].prefix_len == 24
    calls, _ = run("add ipv4_lpm dstAddr:0x0a01ffff/16 NoAction()")
    assert calls[0][2][0] == KeyMatch("hdr.ipv4.dstAddr", "lpm", 0x0A010000, prefix_len=16)
    calls, _ = run("add ipv4_lpm dstAddr:0x0a01****/16 NoAction()")
    assert calls[0][2][0] == KeyMatch("hdr.ipv4.dstAddr", "lpm", 0x0A010000, prefix_len=16)
    with pytest.raises(P4Error, match="does not fit in 32 bits"):
        run("add ipv4_lpm dstAddr:fe80::1/32 NoAction()")


@pytest.mark.parametrize("line, message", [
    ("add ingress.acl meta.port:9..2 ingress.drop()", "empty range"),
    ("add ingress.acl extra$0.h:0x1* ingress.drop()", "invalid number"),
    ("add ingress.acl extra$0.h:256 ingress.drop()", "does not fit in 8 bits"),
    ("add ingress.acl srcAddr:0xz ingress.drop()", "invalid digit"),
])
def test_bad_values(line, message):
    with pytest.raises(P4Error, match=message):
        run(line)


def test_information_commands():
    assert "ingress.ipv4_lpm" in run("show_tables")[1].text
    info = run("table_info ipv4_lpm")[1].text
    assert "hdr.ipv4.dstAddr(lpm, 32)" in info and "ingress.set_nhop" in info
    assert "dmac(48)" in run("table_show_actions ipv4_lpm")[1].text
    every = run("show_actions")[1].text.splitlines()
    assert len(every) == 5 and every[0].startswith("NoAction")
