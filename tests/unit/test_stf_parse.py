"""STF file parsing: every line becomes a typed command or a located P4Error."""

import os
from pathlib import Path

import pytest

from softswitch.diagnostics import P4Error
from softswitch.stf import commands as c
from softswitch.stf.stf import ExpectCmd, PacketCmd, WaitCmd, parse_stf_file, parse_stf_text

CORPUS = Path(os.environ.get("P4_CONFORMANCE_DIR")
              or Path(__file__).resolve().parents[2].parent / "shared" / "conformance")


def test_keywords_are_case_insensitive_and_comments_ignored():
    cmds = parse_stf_text("# header\nPACKET 2 0102 03 04  # trailing\n\nExpect 3 01 ** $\nWAIT\n",
                          "t.stf")
    assert isinstance(cmds[0], PacketCmd)
    assert cmds[0].port == 2 and cmds[0].data == bytes.fromhex("01020304")
    assert cmds[0].loc.line == 2 and cmds[0].loc.file == "t.stf"
    assert isinstance(cmds[1], ExpectCmd)
    assert cmds[1].expected.pattern == "01**" and cmds[1].expected.exact_length
    assert isinstance(cmds[2], WaitCmd)


def test_add_with_priority_keys_action_and_id():
    (cmd,) = parse_stf_text("add ingress.t 7 h.f : 0x0a&&&0xff  h.g:0x1*  "
                            "ingress.act(port: 2, val:0x10) = A\n")
    assert isinstance(cmd, c.TableAdd)
    assert cmd.table == "ingress.t" and cmd.priority == 7 and cmd.entry_id == "A"
    assert cmd.keys == (("h.f", "0x0a&&&0xff"), ("h.g", "0x1*"))
    assert cmd.action == "ingress.act"
    assert cmd.args == (("port", "2"), ("val", "0x10"))


def test_add_without_priority_and_stack_key():
    (cmd,) = parse_stf_text("add t extra$0.h:5 a()")
    assert cmd.priority is None and cmd.keys == (("extra$0.h", "5"),) and cmd.args == ()


def test_setdefault_and_replication_commands():
    cmds = parse_stf_text("setdefault t drop()\nmirroring_add 5 4\nmc_mgrp_create 1113\n"
                          "mc_node_create 400 6 7\nmc_node_associate 1113 0\nremove all\n"
                          "check_counter cnt(3) packets == 2\ncheck_counter cnt($A)\n")
    assert isinstance(cmds[0], c.TableSetDefault) and cmds[0].action == "drop"
    assert cmds[1] == c.MirroringAdd(cmds[1].loc, 5, 4)
    assert cmds[2] == c.McMgrpCreate(cmds[2].loc, 1113)
    assert cmds[3] == c.McNodeCreate(cmds[3].loc, 400, (6, 7))
    assert cmds[4] == c.McNodeAssociate(cmds[4].loc, 1113, 0)
    assert isinstance(cmds[5], c.RemoveAll)
    assert cmds[6].count_type == "packets" and cmds[6].op == "==" and cmds[6].value == 2
    assert cmds[7].count_type is None and cmds[7].index == "$A"


@pytest.mark.parametrize("text, message", [
    ("frobnicate 1 2", "unknown command 'frobnicate'"),
    ("packet x 00", "port"),
    ("packet 1 0g", "hex digits"),
    ("packet 1 012", "odd number"),
    ("packet 1", "without data"),
    ("expect 1 01 zz", "invalid character"),
    ("add t h.f:1 act", "action call"),
    ("add t h.f act()", "KEY:VALUE"),
    ("mirroring_add 5", "usage: mirroring_add"),
    ("remove some", "usage: remove all"),
])
def test_malformed_lines_raise_located_errors(text, message):
    with pytest.raises(P4Error, match=message) as info:
        parse_stf_text("# ok\n" + text + "\n", "bad.stf")
    assert info.value.loc.file == "bad.stf" and info.value.loc.line == 2


@pytest.mark.skipif(not (CORPUS / "manifest.json").exists(),
                    reason=f"conformance corpus not found at {CORPUS} (set P4_CONFORMANCE_DIR)")
def test_every_corpus_stf_file_parses():
    files = sorted((CORPUS / "p4_16_samples").glob("*.stf"))
    assert files, "corpus has no STF files"
    total = 0
    for f in files:
        cmds = parse_stf_file(f)
        assert any(isinstance(x, PacketCmd) for x in cmds) or not cmds, f
        total += len(cmds)
    assert total > len(files)
