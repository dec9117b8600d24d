"""PI's checks and words (issue 47 point 2): each request PI's P4Runtime server
(BMv2's ``simple_switch_grpc``) refuses, sent to both servers with the same program and
state; both must answer with PI's code and message, or the specification's code where PI
departs from it (``Check.spec``; the message stays PI's). A Write refused update by
update is compared by its updates' ``p4.v1.Error`` list. The rows are the table of
docs/bmv2.md, "PI's checks and words"; BMv2's rows skip when real BMv2 is absent.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch.devtools.p4runtime_client import StreamClient
from softswitch.local_port import free_port
from softswitch.p4runtime import errors

pb = p4runtime_pb2
Update = pb.Update
SetReq = pb.SetForwardingPipelineConfigRequest
PRIMARY = 5
PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }
struct headers_t { eth_t eth; }
struct meta_t { bit<8> color; }
struct learn_t { bit<48> src; bit<9> port; }
struct other_t { bit<48> dst; }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(8, CounterType.packets) ctr;
    meter(8, MeterType.bytes) mtr;
    direct_counter(CounterType.packets) dctr;
    direct_meter<bit<8>>(MeterType.bytes) dmtr;
    action set_port(bit<9> port) { sm.egress_spec = port; }
    action nop() { }
    action only_table() { }
    action only_default() { }
    action metered() { dmtr.read(meta.color); }
    action learn() { digest<learn_t>(1, { hdr.eth.src, sm.ingress_port }); }
    action learn_more() { digest<other_t>(1, { hdr.eth.dst }); }
    action_profile(32w16) prof;
    @max_group_size(4) action_selector(HashAlgorithm.crc16, 32w16, 32w16) sel;
    @max_group_size(4) action_selector(HashAlgorithm.crc16, 32w16, 32w16) sel2;
    table t_exact {
        key = { hdr.eth.dst: exact; }
        actions = { set_port; nop; @tableonly only_table; @defaultonly only_default; learn;
                    learn_more; }
        counters = dctr;
        default_action = nop();
    }
    table t_tern {
        key = { hdr.eth.src: ternary; hdr.eth.etype: optional; }
        actions = { set_port; nop; }
        support_timeout = true;
        default_action = nop();
    }
    table t_lpm {
        key = { hdr.eth.dst: lpm; }
        actions = { set_port; nop; }
        default_action = nop();
    }
    table t_range {
        key = { hdr.eth.etype: range; }
        actions = { set_port; nop; }
        default_action = nop();
    }
    table t_const {
        key = { hdr.eth.etype: exact; }
        actions = { set_port; nop; }
        const default_action = nop();
    }
    table t_meter {
        key = { hdr.eth.etype: exact; }
        actions = { metered; nop; }
        meters = dmtr;
        default_action = nop();
    }
    table t_prof {
        key = { hdr.eth.etype: exact; }
        actions = { set_port; nop; }
        implementation = prof;
    }
    table t_sel {
        key = { hdr.eth.etype: exact; hdr.eth.src: selector; }
        actions = { set_port; nop; }
        implementation = sel;
    }
    table t_small {
        key = { hdr.eth.etype: exact; }
        actions = { set_port; nop; }
        size = 2;
    }
    table t_fixed {
        key = { hdr.eth.etype: exact; }
        actions = { set_port; nop; }
        const entries = { 0x0800: nop(); }
    }
    table t_sel2 {
        key = { hdr.eth.etype: exact; hdr.eth.dst: selector; }
        actions = { set_port; nop; }
        implementation = sel2;
    }
    apply {
        ctr.count(0);
        mtr.execute_meter(0, meta.color);
        t_exact.apply(); t_tern.apply(); t_lpm.apply(); t_range.apply();
        t_const.apply(); t_meter.apply(); t_prof.apply(); t_sel.apply(); t_sel2.apply();
        t_small.apply(); t_fixed.apply();
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


# ------------------------------------------------------------------ the program's ids
class Ids(dict):
    """Short name ('t_exact', 'set_port', 'prof', 'ctr', 'learn_t', …) -> P4Info id."""

    @classmethod
    def of(cls, p4info: p4info_pb2.P4Info) -> Ids:
        ids = cls()
        for kind in ("tables", "actions", "counters", "meters", "direct_counters",
                     "direct_meters", "action_profiles", "digests"):
            for obj in getattr(p4info, kind):
                ids[obj.preamble.name.split(".")[-1]] = obj.preamble.id
        return ids


def entry(ids: Ids, table: str, *matches: pb.FieldMatch, action: str | None = "set_port",
          params: tuple[bytes, ...] = (b"\x01",), **fields) -> pb.TableEntry:
    te = pb.TableEntry(table_id=ids[table], **fields)
    for number, match in enumerate(matches, start=1):
        if not match.field_id:
            match.field_id = number
        te.match.append(match)
    if action is not None:
        te.action.action.action_id = ids[action]
        for number, value in enumerate(params, start=1):
            te.action.action.params.add(param_id=number, value=value)
    return te


def exact(value: bytes, field_id: int = 0) -> pb.FieldMatch:
    return pb.FieldMatch(field_id=field_id, exact=pb.FieldMatch.Exact(value=value))


def ternary(value: bytes, mask: bytes, field_id: int = 0) -> pb.FieldMatch:
    return pb.FieldMatch(field_id=field_id,
                         ternary=pb.FieldMatch.Ternary(value=value, mask=mask))


def lpm(value: bytes, prefix_len: int) -> pb.FieldMatch:
    return pb.FieldMatch(lpm=pb.FieldMatch.LPM(value=value, prefix_len=prefix_len))


def range_(low: bytes, high: bytes) -> pb.FieldMatch:
    return pb.FieldMatch(range=pb.FieldMatch.Range(low=low, high=high))


MAC1 = b"\x00\x00\x00\x00\x00\x01"
MAC2 = b"\x00\x00\x00\x00\x00\x02"


def upd(kind: int, **entity) -> Update:
    return Update(type=kind, entity=pb.Entity(**entity))


def write(*updates: Update) -> tuple[str, list[Update]]:
    return ("write", list(updates))


def read(**entity) -> tuple[str, list[pb.Entity]]:
    return ("read", [pb.Entity(**entity)])


def member(ids: Ids, member_id: int, action: str = "set_port",
           profile: str = "prof") -> pb.ActionProfileMember:
    m = pb.ActionProfileMember(action_profile_id=ids[profile], member_id=member_id)
    m.action.action_id = ids[action]
    if action == "set_port":
        m.action.params.add(param_id=1, value=b"\x01")
    return m


def group(ids: Ids, group_id: int, *members: tuple[int, int], max_size: int = 0,
          profile: str = "sel") -> pb.ActionProfileGroup:
    g = pb.ActionProfileGroup(action_profile_id=ids[profile], group_id=group_id,
                              max_size=max_size)
    for member_id, weight in members:
        g.members.add(member_id=member_id, weight=weight)
    return g


def oneshot(ids: Ids, *weights: int, table: str = "t_sel2",
            key: bytes = b"\x00\x07") -> pb.TableEntry:
    te = entry(ids, table, exact(key), action=None)
    action_set = te.action.action_profile_action_set
    action_set.SetInParent()
    for weight in weights:
        one = action_set.action_profile_actions.add(weight=weight)
        one.action.action_id = ids["set_port"]
        one.action.params.add(param_id=1, value=b"\x01")
    return te


def pre(**kind) -> pb.PacketReplicationEngineEntry:
    return pb.PacketReplicationEngineEntry(**kind)


def mc_group(group_id: int, *replicas: tuple[int, int]) -> pb.PacketReplicationEngineEntry:
    g = pb.MulticastGroupEntry(multicast_group_id=group_id)
    for port, instance in replicas:
        g.replicas.add(egress_port=port, instance=instance)
    return pre(multicast_group_entry=g)


def clone(session_id: int, **fields) -> pb.PacketReplicationEngineEntry:
    session = pb.CloneSessionEntry(session_id=session_id, **fields)
    session.replicas.add(egress_port=2, instance=0)
    return pre(clone_session_entry=session)


def counter(ids: Ids, name: str, index: int | None, **fields) -> pb.CounterEntry:
    c = pb.CounterEntry(counter_id=ids[name], **fields)
    if index is not None:
        c.index.index = index
    c.data.packet_count = 1
    return c


def meter(ids: Ids, index: int | None, cir: int = 1, cburst: int = 1,
          pir: int = 1, pburst: int = 1) -> pb.MeterEntry:
    m = pb.MeterEntry(meter_id=ids["mtr"])
    if index is not None:
        m.index.index = index
    m.config.cir, m.config.cburst, m.config.pir, m.config.pburst = cir, cburst, pir, pburst
    return m


def direct_counter(table_entry: pb.TableEntry | None) -> pb.DirectCounterEntry:
    d = pb.DirectCounterEntry()
    if table_entry is not None:
        d.table_entry.CopyFrom(table_entry)
    d.data.packet_count = 1
    return d


def direct_meter(table_entry: pb.TableEntry | None) -> pb.DirectMeterEntry:
    d = pb.DirectMeterEntry()
    if table_entry is not None:
        d.table_entry.CopyFrom(table_entry)
    d.config.cir = d.config.cburst = d.config.pir = d.config.pburst = 1
    return d


def digest(ids: Ids, digest_id: int | None = None) -> pb.DigestEntry:
    d = pb.DigestEntry(digest_id=ids["learn_t"] if digest_id is None else digest_id)
    d.config.max_timeout_ns, d.config.max_list_size, d.config.ack_timeout_ns = 0, 1, 1000
    return d


def with_(te: pb.TableEntry, **changes) -> pb.TableEntry:
    """``te`` with fields set (a message field given as a message is copied)."""
    for name, value in changes.items():
        if isinstance(value, (pb.MeterConfig, pb.CounterData)):
            getattr(te, name).CopyFrom(value)
        elif name == "time_since_last_hit":
            te.time_since_last_hit.elapsed_ns = value
        else:
            setattr(te, name, value)
    return te


# ------------------------------------------------------------------ the checks
Request = tuple[str, object]


@dataclass(frozen=True)
class Check:
    """One refusal: the request, PI's code and message (``{name}`` stands for that
    object's id) and, where the specification names another code, ``spec``: the code
    softswitch answers instead."""

    name: str
    request: Callable[[Ids], Request]
    code: str
    message: str
    spec: str | None = None


I, M, D = Update.INSERT, Update.MODIFY, Update.DELETE
T = "table_entry"
INVALID, DENIED = "INVALID_ARGUMENT", "PERMISSION_DENIED"


def _t(kind: int, make: Callable[[Ids], pb.TableEntry]) -> Callable[[Ids], Request]:
    return lambda ids: write(upd(kind, table_entry=make(ids)))


def _default(ids: Ids, table: str, action: str | None = "nop", **fields) -> pb.TableEntry:
    return entry(ids, table, action=action, params=(), is_default_action=True, **fields)


CHECKS: list[Check] = [
    # --- table entries: the update --------------------------------------------------
    Check("table entry carrying time_since_last_hit",
          _t(I, lambda ids: with_(entry(ids, "t_exact", exact(MAC2)),
                                  time_since_last_hit=1)),
          INVALID, "has_time_since_last_hit must not be set in WriteRequest"),
    Check("unknown table id", _t(I, lambda ids: pb.TableEntry(table_id=0x02000777)),
          INVALID, "Invalid P4 id"),
    Check("update type unset", _t(Update.UNSPECIFIED,
                                  lambda ids: entry(ids, "t_exact", exact(MAC2))),
          INVALID, "Update type is not set"),
    Check("update type out of the enum", _t(9, lambda ids: entry(ids, "t_exact", exact(MAC2))),
          INVALID, "Invalid update type"),
    Check("INSERT of the default entry", _t(I, lambda ids: _default(ids, "t_exact")),
          INVALID, "Cannot use INSERT for default entry"),
    Check("INSERT without an action",
          _t(I, lambda ids: entry(ids, "t_exact", exact(MAC2), action=None)),
          INVALID, "'action' field must be set"),
    Check("MODIFY without an action",
          _t(M, lambda ids: entry(ids, "t_exact", exact(MAC1), action=None)),
          INVALID, "'action' field must be set for non-default entries"),
    Check("DELETE of the default entry", _t(D, lambda ids: _default(ids, "t_exact")),
          INVALID, "Cannot use DELETE for default entry"),
    Check("INSERT of an existing entry", _t(I, lambda ids: entry(ids, "t_exact", exact(MAC1))),
          "ALREADY_EXISTS", "Match entry exists, use MODIFY if you wish to change action"),
    Check("MODIFY of a missing entry", _t(M, lambda ids: entry(ids, "t_exact", exact(MAC2))),
          "NOT_FOUND", "Cannot find match entry"),
    Check("DELETE of a missing entry", _t(D, lambda ids: entry(ids, "t_exact", exact(MAC2))),
          "NOT_FOUND", "Cannot find match entry"),
    # --- the match key ---------------------------------------------------------------
    Check("too many match fields",
          _t(I, lambda ids: entry(ids, "t_exact", exact(MAC2), exact(MAC2))),
          INVALID, "Too many fields in match key"),
    Check("exact field missing", _t(I, lambda ids: entry(ids, "t_exact")),
          INVALID, "Missing non-ternary field in match key"),
    Check("unknown match field id",
          _t(I, lambda ids: entry(ids, "t_tern", ternary(MAC1, MAC1, field_id=9),
                                  priority=1)),
          INVALID, "Unknown field in match key"),
    Check("priority on an exact table",
          _t(I, lambda ids: entry(ids, "t_exact", exact(MAC2), priority=3)),
          INVALID, "Non-zero priority for non-ternary match"),
    Check("no priority on a ternary table",
          _t(I, lambda ids: entry(ids, "t_tern", ternary(MAC1, MAC1))),
          INVALID, "Zero priority for ternary match"),
    Check("LPM match on an exact field",
          _t(I, lambda ids: entry(ids, "t_exact", lpm(MAC2, 48))),
          INVALID, "Invalid match type"),
    Check("exact value wider than its field",
          _t(I, lambda ids: entry(ids, "t_exact", exact(b"\x01" + MAC2))),
          INVALID, "Bytestring provided does not fit within 48 bits", spec="OUT_OF_RANGE"),
    Check("LPM prefix longer than the field",
          _t(I, lambda ids: entry(ids, "t_lpm", lpm(MAC2, 49))),
          INVALID, "Prefix length cannot be > bitwidth"),
    Check("LPM negative prefix", _t(I, lambda ids: entry(ids, "t_lpm", lpm(MAC2, -1))),
          INVALID, "Prefix length cannot be < 0"),
    Check("LPM prefix 0", _t(I, lambda ids: entry(ids, "t_lpm", lpm(MAC2, 0))),
          INVALID, "Invalid reprsentation of 'don't care' LPM match, omit match field "
          "instead of using a prefix length of 0"),
    Check("LPM value with bits past the prefix",
          _t(I, lambda ids: entry(ids, "t_lpm", lpm(MAC2, 40))),
          INVALID, "Invalid LPM value, incorrect number of trailing zeros"),
    Check("ternary mask 0",
          _t(I, lambda ids: entry(ids, "t_tern", ternary(MAC1, b"\x00"), priority=1)),
          INVALID, "Invalid representation of 'don't care' ternary match, omit match "
          "field instead of using 0 mask"),
    Check("ternary value outside its mask",
          _t(I, lambda ids: entry(ids, "t_tern", ternary(MAC2, MAC1), priority=1)),
          INVALID, "Invalid ternary value, make sure value & mask == value"),
    Check("range covering the whole field",
          _t(I, lambda ids: entry(ids, "t_range", range_(b"\x00\x00", b"\xff\xff"),
                                  priority=1)),
          INVALID, "Invalid representation of 'don't care' range match, omit match "
          "field instead of using low=0 and high=2**bitwidth-1"),
    Check("range low above high",
          _t(I, lambda ids: entry(ids, "t_range", range_(b"\x09", b"\x02"), priority=1)),
          INVALID, "Invalid range value, make sure low <= high"),
    Check("default entry with a match key",
          _t(M, lambda ids: _default(ids, "t_exact", match=[exact(MAC1, 1)])),
          INVALID, "Non-empty key for default entry"),
    Check("default entry with a priority",
          _t(M, lambda ids: _default(ids, "t_exact", priority=2)),
          INVALID, "Non-zero priority for default entry"),
    # --- the action ------------------------------------------------------------------
    Check("default action of an indirect table",
          _t(M, lambda ids: _default(ids, "t_prof")),
          INVALID, "Cannot set / reset default action for indirect table {t_prof}"),
    Check("default action of a table with a const default action",
          _t(M, lambda ids: _default(ids, "t_const")),
          DENIED, "Cannot set / reset default action for table {t_const} which has a "
          "const default action"),
    Check("direct action in an indirect table",
          _t(I, lambda ids: entry(ids, "t_prof", exact(b"\x00\x07"))),
          INVALID, "Cannot provide direct action for indirect table {t_prof}"),
    Check("member in a direct table",
          _t(I, lambda ids: pb.TableEntry(
              table_id=ids["t_exact"], match=[exact(MAC2, 1)],
              action=pb.TableAction(action_profile_member_id=1))),
          INVALID, "Cannot provide indirect action for direct table {t_exact}"),
    Check("unknown action id",
          _t(I, lambda ids: pb.TableEntry(
              table_id=ids["t_exact"], match=[exact(MAC2, 1)],
              action=pb.TableAction(action=pb.Action(action_id=0x01000777)))),
          INVALID, "Invalid P4 id"),
    Check("action not in the table",
          _t(I, lambda ids: entry(ids, "t_exact", exact(MAC2), action="metered",
                                  params=())),
          INVALID, "Invalid action for table"),
    Check("@tableonly action as the default",
          _t(M, lambda ids: _default(ids, "t_exact", action="only_table")),
          DENIED, "Cannot use TABLE_ONLY action as default action"),
    Check("@defaultonly action in an entry",
          _t(I, lambda ids: entry(ids, "t_exact", exact(MAC2), action="only_default",
                                  params=())),
          DENIED, "Cannot use DEFAULT_ONLY action in table entry"),
    Check("too few action parameters",
          _t(I, lambda ids: entry(ids, "t_exact", exact(MAC2), params=())),
          INVALID, "Unexpected number of action parameters"),
    Check("unknown action parameter id",
          _t(I, lambda ids: pb.TableEntry(
              table_id=ids["t_exact"], match=[exact(MAC2, 1)],
              action=pb.TableAction(action=pb.Action(
                  action_id=ids["set_port"],
                  params=[pb.Action.Param(param_id=7, value=b"\x01")])))),
          INVALID, "Unknown action parameter"),
    Check("action parameter wider than bit<9>",
          _t(I, lambda ids: entry(ids, "t_exact", exact(MAC2), params=(b"\x02\x00",))),
          INVALID, "Bytestring provided does not fit within 9 bits", spec="OUT_OF_RANGE"),
    Check("unknown member in an indirect table",
          _t(I, lambda ids: pb.TableEntry(
              table_id=ids["t_prof"], match=[exact(b"\x00\x07", 1)],
              action=pb.TableAction(action_profile_member_id=77))),
          INVALID, "Invalid member / group id"),
    # --- direct resources and idle timeout ------------------------------------------
    Check("meter config on a table without direct meter",
          _t(I, lambda ids: with_(entry(ids, "t_exact", exact(MAC2)),
                                  meter_config=pb.MeterConfig(cir=1, cburst=1, pir=1,
                                                              pburst=1))),
          INVALID, "Table has no direct meters"),
    Check("counter data on a table without direct counter",
          _t(I, lambda ids: with_(entry(ids, "t_lpm", lpm(MAC1, 48)),
                                  counter_data=pb.CounterData(packet_count=1))),
          INVALID, "Table has no direct counters"),
    Check("negative meter CIR",
          _t(I, lambda ids: with_(entry(ids, "t_meter", exact(b"\x00\x07"), action="nop",
                                        params=()),
                                  meter_config=pb.MeterConfig(cir=-2, cburst=1, pir=1,
                                                              pburst=1))),
          INVALID, "Negative meter CIR"),
    Check("meter burst past 32 bits",
          _t(I, lambda ids: with_(entry(ids, "t_meter", exact(b"\x00\x07"), action="nop",
                                        params=()),
                                  meter_config=pb.MeterConfig(cir=1, cburst=1 << 33, pir=1,
                                                              pburst=1))),
          "UNIMPLEMENTED", "CBurst too large"),
    Check("negative idle_timeout_ns",
          _t(I, lambda ids: entry(ids, "t_tern", ternary(MAC1, MAC1), priority=1,
                                  idle_timeout_ns=-5)),
          INVALID, "idle_timeout_ns must be a positive value"),
    Check("idle_timeout_ns on a table without idle timeout",
          _t(I, lambda ids: entry(ids, "t_exact", exact(MAC2), idle_timeout_ns=10**9)),
          INVALID, "idle_timeout_ns must be set to 0 for tables which do not support "
          "idle timeout"),
    # --- one-shot action selector programming ---------------------------------------
    Check("one-shot: empty action set", _t(I, lambda ids: oneshot(ids)),
          "UNIMPLEMENTED", "No support for empty action profile groups"),
    Check("one-shot: weight 0", _t(I, lambda ids: oneshot(ids, 1, 0)),
          INVALID, "Member weight must be a positive integer value"),
    Check("one-shot: weights past max_group_size", _t(I, lambda ids: oneshot(ids, 3, 2)),
          "RESOURCE_EXHAUSTED", "Sum of weights exceeds static max_group_size (from P4Info)"),
    Check("one-shot action set in a selector programmed by members",
          _t(I, lambda ids: oneshot(ids, 1, table="t_sel")),
          INVALID, "Invalid attempt to mix action selector programming modes"),
    # --- action profile members and groups ------------------------------------------
    Check("member of an unknown action profile",
          lambda ids: write(upd(I, action_profile_member=with_(
              member(ids, 9), action_profile_id=0x11000777))),
          INVALID, "Invalid P4 id"),
    Check("member without an action",
          lambda ids: write(upd(I, action_profile_member=pb.ActionProfileMember(
              action_profile_id=ids["prof"], member_id=30))),
          INVALID, "Invalid P4 id"),
    Check("member of an unknown action",
          lambda ids: write(upd(I, action_profile_member=pb.ActionProfileMember(
              action_profile_id=ids["prof"], member_id=30,
              action=pb.Action(action_id=0x01000777)))),
          INVALID, "Invalid P4 id"),
    Check("member in a selector programmed by one-shot sets",
          lambda ids: write(upd(I, action_profile_member=member(ids, 30, profile="sel2"))),
          INVALID, "Invalid attempt to mix action selector programming modes"),
    Check("group in a selector programmed by one-shot sets",
          lambda ids: write(upd(I, action_profile_group=group(ids, 30, profile="sel2"))),
          INVALID, "Invalid attempt to mix action selector programming modes"),
    Check("entry in a table of const entries",
          _t(I, lambda ids: entry(ids, "t_fixed", exact(b"\x00\x03"))),
          "UNKNOWN", "Error when adding match entry to target", spec="PERMISSION_DENIED"),
    Check("MODIFY of a const entry",
          _t(M, lambda ids: entry(ids, "t_fixed", exact(b"\x08\x00"))),
          "NOT_FOUND", "Cannot find match entry", spec="PERMISSION_DENIED"),
    Check("DELETE of a const entry",
          _t(D, lambda ids: entry(ids, "t_fixed", exact(b"\x08\x00"))),
          "NOT_FOUND", "Cannot find match entry", spec="PERMISSION_DENIED"),
    Check("entry past the table's size",
          _t(I, lambda ids: entry(ids, "t_small", exact(b"\x00\x03"))),
          "UNKNOWN", "Error when adding match entry to target", spec="RESOURCE_EXHAUSTED"),
    Check("member update type unset",
          lambda ids: write(upd(Update.UNSPECIFIED, action_profile_member=member(ids, 9))),
          INVALID, "Update type is not set"),
    Check("member id taken", lambda ids: write(upd(I, action_profile_member=member(ids, 1))),
          "ALREADY_EXISTS", "Duplicate member id: 1"),
    Check("member action not in the profile's tables",
          lambda ids: write(upd(I, action_profile_member=member(ids, 9, "metered"))),
          INVALID, "Invalid action for action profile"),
    Check("MODIFY of a missing member",
          lambda ids: write(upd(M, action_profile_member=member(ids, 77))),
          "NOT_FOUND", "Member id does not exist: 77"),
    Check("DELETE of a missing member",
          lambda ids: write(upd(D, action_profile_member=member(ids, 77))),
          "NOT_FOUND", "Member id does not exist: 77"),
    Check("group max_size past the profile's",
          lambda ids: write(upd(I, action_profile_group=group(ids, 9, max_size=5, profile="sel"))),
          INVALID, "Group max_size cannot exceed static max_group_size (from P4Info)"),
    Check("group max_size negative",
          lambda ids: write(upd(I, action_profile_group=group(ids, 9, max_size=-1, profile="sel"))),
          INVALID, "Group max_size cannot be less than 0"),
    Check("group id taken", lambda ids: write(upd(I, action_profile_group=group(ids, 1))),
          "ALREADY_EXISTS", "Duplicate group id: 1"),
    Check("MODIFY of a missing group",
          lambda ids: write(upd(M, action_profile_group=group(ids, 77))),
          "NOT_FOUND", "Group id does not exist: 77"),
    Check("DELETE of a missing group",
          lambda ids: write(upd(D, action_profile_group=group(ids, 77))),
          "NOT_FOUND", "Group id does not exist: 77"),
    Check("group max_size changed",
          lambda ids: write(upd(M, action_profile_group=group(ids, 1, (1, 1), max_size=3))),
          INVALID, "Cannot change group max_size after group creation"),
    Check("group naming an unknown member",
          lambda ids: write(upd(I, action_profile_group=group(ids, 11, (99, 1)))),
          "NOT_FOUND", "Member id does not exist: 99"),
    Check("group member weight 0",
          lambda ids: write(upd(I, action_profile_group=group(ids, 12, (1, 0)))),
          INVALID, "Member weight must be a positive integer value"),
    Check("group weights past its max_size",
          lambda ids: write(upd(I, action_profile_group=group(ids, 13, (1, 5), max_size=4))),
          "RESOURCE_EXHAUSTED", "Sum of member weights exceeds maximum group size"),
    Check("group naming a member twice",
          lambda ids: write(upd(I, action_profile_group=group(ids, 14, (1, 1), (1, 1)))),
          INVALID, "Duplicate member id 1 for group 14, use weights instead"),
    # --- counters and meters ---------------------------------------------------------
    Check("counter without index",
          lambda ids: write(upd(M, counter_entry=counter(ids, "ctr", None))),
          "UNIMPLEMENTED", "Wildcard write is not supported for indirect counters yet",
          spec="OK"),
    Check("counter index -1",
          lambda ids: write(upd(M, counter_entry=counter(ids, "ctr", -1))),
          INVALID, "A negative number is not a valid index value"),
    Check("counter INSERT", lambda ids: write(upd(I, counter_entry=counter(ids, "ctr", 0))),
          INVALID, "INSERT update type not supported for counters"),
    Check("counter with a direct counter's id",
          lambda ids: read(counter_entry=pb.CounterEntry(counter_id=ids["dctr"])),
          INVALID, "Invalid P4 id"),
    Check("direct counter without its table entry",
          lambda ids: write(upd(M, direct_counter_entry=direct_counter(None))),
          INVALID, "Missing table_entry field in DirectCounterEntry"),
    Check("direct counter of a missing entry",
          lambda ids: write(upd(M, direct_counter_entry=direct_counter(
              entry(ids, "t_exact", exact(MAC2), action=None)))),
          INVALID, "Cannot map table entry to handle"),
    Check("direct counter of a table without one",
          lambda ids: write(upd(M, direct_counter_entry=direct_counter(
              entry(ids, "t_lpm", lpm(MAC1, 48), action=None)))),
          INVALID, "Table has no direct counters"),
    Check("direct counter INSERT",
          lambda ids: write(upd(I, direct_counter_entry=direct_counter(
              entry(ids, "t_exact", exact(MAC1), action=None)))),
          INVALID, "INSERT update type not supported for counters"),
    Check("meter without index", lambda ids: write(upd(M, meter_entry=meter(ids, None))),
          "UNIMPLEMENTED", "Wildcard write is not supported for indirect meters yet",
          spec="OK"),
    Check("meter index -1", lambda ids: write(upd(M, meter_entry=meter(ids, -1))),
          INVALID, "A negative number is not a valid index value"),
    Check("meter INSERT", lambda ids: write(upd(I, meter_entry=meter(ids, 0))),
          INVALID, "INSERT update type not supported for meters"),
    Check("meter DELETE", lambda ids: write(upd(D, meter_entry=meter(ids, 0))),
          INVALID, "DELETE update type not supported for meters"),
    Check("meter negative PIR", lambda ids: write(upd(M, meter_entry=meter(ids, 0, pir=-3))),
          INVALID, "Negative meter PIR"),
    Check("meter CIR above PIR",
          lambda ids: write(upd(M, meter_entry=meter(ids, 0, cir=10, pir=5))),
          "UNKNOWN", "Error when writing meter spec"),
    Check("direct meter CIR above PIR",
          lambda ids: write(upd(M, direct_meter_entry=with_(
              direct_meter(entry(ids, "t_meter", exact(b"\x00\x05"), action=None)),
              config=pb.MeterConfig(cir=10, cburst=1, pir=5, pburst=1)))),
          "UNKNOWN", "Error when writing direct meter spec"),
    Check("entry meter config CIR above PIR",
          _t(I, lambda ids: with_(entry(ids, "t_meter", exact(b"\x00\x07"), action="nop",
                                        params=()),
                                  meter_config=pb.MeterConfig(cir=10, cburst=1, pir=5,
                                                              pburst=1))),
          "UNKNOWN", "Error when adding match entry to target"),
    Check("direct meter without its table entry",
          lambda ids: write(upd(M, direct_meter_entry=direct_meter(None))),
          INVALID, "Missing table_entry field in DirectMeterEntry"),
    Check("direct meter of a table without one",
          lambda ids: write(upd(M, direct_meter_entry=direct_meter(
              entry(ids, "t_exact", exact(MAC1), action=None)))),
          INVALID, "Table has no direct meters"),
    # --- packet replication ----------------------------------------------------------
    Check("multicast group 0", lambda ids: write(upd(I, packet_replication_engine_entry=
                                                     mc_group(0, (1, 0)))),
          INVALID, "0 is not a valid group id"),
    Check("multicast group id 32768", lambda ids: write(upd(
        I, packet_replication_engine_entry=mc_group(1 << 15, (1, 0)))),
          "OUT_OF_RANGE", "Group id value is too high"),
    Check("multicast group id taken", lambda ids: write(upd(
        I, packet_replication_engine_entry=mc_group(1, (1, 0)))),
          "ALREADY_EXISTS", "Multicast group already exists"),
    Check("MODIFY of a missing multicast group", lambda ids: write(upd(
        M, packet_replication_engine_entry=mc_group(77, (1, 0)))),
          "NOT_FOUND", "Multicast group does not exist"),
    Check("DELETE of a missing multicast group", lambda ids: write(upd(
        D, packet_replication_engine_entry=mc_group(77))),
          "NOT_FOUND", "Multicast group does not exist"),
    Check("multicast replica twice", lambda ids: write(upd(
        I, packet_replication_engine_entry=mc_group(9, (1, 0), (1, 0)))),
          INVALID, "Duplicate replica in multicast group"),
    Check("multicast replica without port", lambda ids: write(upd(
        I, packet_replication_engine_entry=pre(multicast_group_entry=pb.MulticastGroupEntry(
            multicast_group_id=41, replicas=[pb.Replica(instance=1)])))),
          INVALID, "Missing port in multicast group replica"),
    Check("multicast replica port of no bytes", lambda ids: write(upd(
        I, packet_replication_engine_entry=pre(multicast_group_entry=pb.MulticastGroupEntry(
            multicast_group_id=42, replicas=[pb.Replica(port=b"", instance=1)])))),
          INVALID, "Port must not be the empty string", spec="OUT_OF_RANGE"),
    Check("multicast replica port of 5 bytes", lambda ids: write(upd(
        I, packet_replication_engine_entry=pre(multicast_group_entry=pb.MulticastGroupEntry(
            multicast_group_id=43, replicas=[pb.Replica(port=b"\x00" * 4 + b"\x01",
                                                        instance=1)])))),
          "UNIMPLEMENTED", "Got port of %d bytes, but only 4 bytes are supported", spec="OK"),
    Check("multicast replica port 0", lambda ids: write(upd(
        I, packet_replication_engine_entry=pre(multicast_group_entry=pb.MulticastGroupEntry(
            multicast_group_id=44, replicas=[pb.Replica(port=b"\x00", instance=1)])))),
          INVALID, "Port must be non-negative."),
    Check("clone session replica twice", lambda ids: write(upd(
        I, packet_replication_engine_entry=pre(clone_session_entry=pb.CloneSessionEntry(
            session_id=45, replicas=[pb.Replica(egress_port=2, instance=0)] * 2)))),
          INVALID, "Duplicate replica in multicast group"),
    Check("clone session 0", lambda ids: write(upd(
        I, packet_replication_engine_entry=clone(0))),
          INVALID, "0 is not a valid session id"),
    Check("clone session id taken", lambda ids: write(upd(
        I, packet_replication_engine_entry=clone(5))),
          "ALREADY_EXISTS", "Clone session id already exists"),
    Check("MODIFY of a missing clone session", lambda ids: write(upd(
        M, packet_replication_engine_entry=clone(77))),
          "NOT_FOUND", "Clone session id does not exist"),
    Check("clone session 32768", lambda ids: write(upd(
        I, packet_replication_engine_entry=clone(1 << 15))),
          INVALID, "Clone session id out-of-range"),
    Check("update of an entity of no kind", lambda ids: write(Update(type=I)),
          "UNKNOWN", "Incorrect entity type"),
    Check("extern entry", lambda ids: write(upd(I, extern_entry=pb.ExternEntry(
        extern_type_id=0x81, extern_id=1))),
          "UNIMPLEMENTED", ""),
    Check("replication entry of no kind", lambda ids: write(upd(
        I, packet_replication_engine_entry=pre())),
          INVALID, "Invalid PRE operation"),
    # --- digests ---------------------------------------------------------------------
    Check("digest of an unknown id",
          lambda ids: write(upd(I, digest_entry=digest(ids, 0x0f000777))),
          "NOT_FOUND", "251660151 is not a valid digest id"),
    Check("MODIFY of a digest not configured",
          lambda ids: write(upd(M, digest_entry=digest(ids, ids["other_t"]))),
          "NOT_FOUND", "Digest {other_t} not configured"),
    Check("digest update type unset",
          lambda ids: write(upd(Update.UNSPECIFIED, digest_entry=digest(ids))),
          INVALID, "Invalid update type for DigestEntry"),
    Check("read of a digest not configured",
          lambda ids: read(digest_entry=pb.DigestEntry(digest_id=ids["other_t"])),
          "NOT_FOUND", "Digest {other_t} not configured"),
    Check("read of an unknown table id",
          lambda ids: read(table_entry=pb.TableEntry(table_id=0x02000777)),
          INVALID, "Invalid P4 id"),
    Check("read of an unknown counter id",
          lambda ids: read(counter_entry=pb.CounterEntry(counter_id=0x12000777)),
          INVALID, "Invalid P4 id"),
    Check("digest configured twice",
          lambda ids: write(upd(I, digest_entry=digest(ids))),
          "ALREADY_EXISTS", "Digest {learn_t} already configured"),
    # --- reads -----------------------------------------------------------------------
    # --- the RPCs and the stream ----------------------------------------------------
    Check("GetForwardingPipelineConfig: unknown response_type",
          lambda ids: ("call", lambda srv: srv.stub.GetForwardingPipelineConfig(
              pb.GetForwardingPipelineConfigRequest(device_id=srv.device_id, response_type=7),
              timeout=30)),
          INVALID, "Invalid response_type in GetForwardingPipelineConfigRequest"),
    Check("SetForwardingPipelineConfig: action unset",
          lambda ids: ("call", lambda srv: srv.stub.SetForwardingPipelineConfig(
              _set_request(srv, SetReq.UNSPECIFIED), timeout=30)),
          INVALID, "Invalid SetForwardingPipeline action"),
    Check("Write from a controller that is not primary",
          lambda ids: ("call", lambda srv: srv.stub.Write(_write_request(
              srv, PRIMARY - 1, upd(I, table_entry=entry(ids, "t_exact", exact(MAC2)))),
              timeout=30)),
          DENIED, "Not primary"),
    Check("arbitration with an election id in use",
          lambda ids: ("call", lambda srv: _arbitrate(srv, (srv.device_id, PRIMARY))),
          INVALID, "Election id already exists"),
    Check("arbitration moving a stream to another device",
          lambda ids: ("call", lambda srv: _arbitrate(srv, (srv.device_id, PRIMARY - 2),
                                                      (srv.device_id + 1, PRIMARY - 2))),
          "FAILED_PRECONDITION", "Invalid device id"),
    Check("read of the direct counter of a missing entry",
          lambda ids: read(direct_counter_entry=pb.DirectCounterEntry(
              table_entry=entry(ids, "t_exact", exact(MAC2), action=None))),
          INVALID, "Cannot map table entry to handle"),
    Check("read of a missing multicast group",
          lambda ids: read(packet_replication_engine_entry=mc_group(77)),
          "NOT_FOUND", "Multicast group does not exist"),
    Check("read of a missing clone session",
          lambda ids: read(packet_replication_engine_entry=pre(
              clone_session_entry=pb.CloneSessionEntry(session_id=77))),
          "NOT_FOUND", "Clone session id does not exist"),
    Check("read of time_since_last_hit on a table without idle timeout",
          lambda ids: read(table_entry=with_(pb.TableEntry(table_id=ids["t_exact"]),
                                             time_since_last_hit=0)),
          INVALID, "Do not set time_since_last_hit for a ReadRequest if the table does "
          "not support idle timeout; yes, that includes wildcard reads"),
    Check("read of every direct counter",
          lambda ids: read(direct_counter_entry=pb.DirectCounterEntry(
              table_entry=pb.TableEntry())),
          "UNIMPLEMENTED", "Reading all direct counters for ALL tables is not supported yet",
          spec="OK"),
    Check("read of the default entry's time_since_last_hit",
          lambda ids: read(table_entry=with_(pb.TableEntry(table_id=ids["t_tern"],
                                                           is_default_action=True),
                                             time_since_last_hit=0)),
          INVALID, "Default table entries do not support entry ageing, do not set "
          "'time_since_last_hit' in your ReadRequest"),
    Check("read of multicast group 32768",
          lambda ids: read(packet_replication_engine_entry=mc_group(1 << 15)),
          "OUT_OF_RANGE", "Group id value is too high"),
    Check("read of an entity of no kind", lambda ids: read(),
          "UNKNOWN", "Incorrect entity type"),
]


def _set_request(srv: Server, action: int) -> pb.SetForwardingPipelineConfigRequest:
    req = SetReq(device_id=srv.device_id, action=action)
    req.election_id.low = PRIMARY
    return req


def _write_request(srv: Server, election_id: int, *updates: Update) -> pb.WriteRequest:
    req = pb.WriteRequest(device_id=srv.device_id, updates=updates)
    req.election_id.low = election_id
    return req


def _arbitrate(srv: Server, *steps: tuple[int, int]) -> None:
    """Arbitrate on a new stream once per (device id, election id); the error that ends
    the stream is raised (its RpcError)."""
    stream = StreamClient(srv.channel)
    try:
        for device_id, election_id in steps:
            stream.arbitrate(election_id, device_id=device_id)
            got = stream.next(timeout=10)
            if isinstance(got, grpc.RpcError):
                raise got
    finally:
        stream.close()


# ------------------------------------------------------------------ the servers
@dataclass(frozen=True)
class Answer:
    """What a server answered: the RPC's code and message, and for a Write refused
    update by update, each update's (code, message)."""

    code: str
    message: str
    updates: tuple[tuple[str, str], ...] = ()


@dataclass
class Server:
    """A P4Runtime server with the program loaded and the checks' state in place."""

    address: str
    device_id: int
    p4info: p4info_pb2.P4Info
    config: bytes
    channel: grpc.Channel = field(init=False)
    stub: p4runtime_pb2_grpc.P4RuntimeStub = field(init=False)
    stream: StreamClient = field(init=False)
    ids: Ids = field(init=False)

    def __post_init__(self) -> None:
        self.channel = grpc.insecure_channel(self.address)
        grpc.channel_ready_future(self.channel).result(timeout=60)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.ids = Ids.of(self.p4info)
        self.stream = StreamClient(self.channel)
        self.stream.arbitrate(PRIMARY, device_id=self.device_id)
        got = self.stream.next(timeout=10)
        assert got.arbitration.status.code == code_pb2.OK, got
        req = SetReq(device_id=self.device_id, action=SetReq.VERIFY_AND_COMMIT)
        req.election_id.low = PRIMARY
        req.config.p4info.CopyFrom(self.p4info)
        req.config.p4_device_config = self.config
        self.stub.SetForwardingPipelineConfig(req, timeout=300)
        self._fill()

    def _fill(self) -> None:
        """The state the checks refuse against: an entry, a member, a group, a
        multicast group, a clone session and a digest's configuration."""
        ids = self.ids
        state = write(
            upd(I, table_entry=entry(ids, "t_exact", exact(MAC1))),
            upd(I, table_entry=entry(ids, "t_lpm", lpm(MAC1, 48))),
            upd(I, table_entry=entry(ids, "t_meter", exact(b"\x00\x05"), action="nop",
                                     params=())),
            upd(I, action_profile_member=member(ids, 1)),
            upd(I, action_profile_member=member(ids, 1, profile="sel")),
            upd(I, action_profile_group=group(ids, 1, (1, 1), max_size=4)),
            upd(I, table_entry=oneshot(ids, 1, key=b"\x00\x08")),
            upd(I, table_entry=entry(ids, "t_small", exact(b"\x00\x01"))),
            upd(I, table_entry=entry(ids, "t_small", exact(b"\x00\x02"))),
            upd(I, packet_replication_engine_entry=mc_group(1, (1, 0))),
            upd(I, packet_replication_engine_entry=clone(5)),
            upd(I, digest_entry=digest(ids)))
        answer = self.answer(state)
        assert answer.code == "OK", answer

    def answer(self, request: Request) -> Answer:
        kind, body = request
        try:
            if kind == "call":
                body(self)    # type: ignore[operator]
            elif kind == "write":
                req = pb.WriteRequest(device_id=self.device_id, updates=body)
                req.election_id.low = PRIMARY
                self.stub.Write(req, timeout=30)
            else:
                req = pb.ReadRequest(device_id=self.device_id, entities=body)
                list(self.stub.Read(req, timeout=30))
        except grpc.RpcError as exc:
            updates = tuple((code_pb2.Code.Name(e.canonical_code), e.message)
                            for e in errors.details_of(exc))
            return Answer(exc.code().name, exc.details() or "", updates)
        return Answer("OK", "")

    def close(self) -> None:
        self.stream.close()
        self.channel.close()


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pi_checks") / "prog.p4"
    path.write_text(PROGRAM)
    return path


@pytest.fixture(scope="module")
def softswitch(program: Path) -> Iterator[Server]:
    from softswitch.daemon.device import Device
    from softswitch.daemon.rpc.server import serve
    from softswitch.p4runtime import pipeline

    device_id = 3
    srv, port = serve(Device(device_id=device_id, cpu_port=255), "127.0.0.1:0")
    server = Server(f"127.0.0.1:{port}", device_id,
                    pipeline.compile_file(str(program), {}).p4info, PROGRAM.encode())
    yield server
    server.close()
    srv.stop(0).wait()


@pytest.fixture(scope="module")
def bmv2(reference_tools, program: Path) -> Iterator[Server]:
    out = program.parent
    subprocess.run([reference_tools.p4c, "--arch", "v1model", "-o", str(out / "prog.json"),
                    "--p4runtime-files", str(out / "prog.txtpb"), str(program)],
                   check=True, capture_output=True, timeout=300)
    p4info = text_format.Parse((out / "prog.txtpb").read_text(), p4info_pb2.P4Info())
    device_id = 300 + os.getpid() % 700
    grpc_port, thrift_port = free_port(), free_port()
    switch = subprocess.Popen(
        [reference_tools.simple_switch_grpc, "--no-p4", "--device-id", str(device_id),
         "--thrift-port", str(thrift_port),
         "--notifications-addr", f"ipc://{out}/notify-{uuid.uuid4().hex[:8]}.ipc",
         "--", "--grpc-server-addr", f"127.0.0.1:{grpc_port}", "--cpu-port", "255"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        server = Server(f"127.0.0.1:{grpc_port}", device_id, p4info,
                        (out / "prog.json").read_bytes())
        yield server
        server.close()
    finally:
        switch.terminate()
        switch.wait(30)


def expected(check: Check, ids: Ids, softswitch_side: bool) -> tuple[str, str]:
    """What a server must answer: PI's code and words, or where the specification names
    another code softswitch answers with it (OK: the request is taken, no words)."""
    code = check.spec if softswitch_side and check.spec else check.code
    return code, "" if code == "OK" else check.message.format(**ids)


def refusal(answer: Answer, request: Request) -> tuple[str, str]:
    """The (code, message) of a refusal: a Write's refused update, else the RPC's."""
    kind, body = request
    if kind == "write" and answer.updates:
        assert (answer.code, answer.message) == ("UNKNOWN", ""), answer
        assert len(answer.updates) == len(body), answer
        return next(u for u in answer.updates if u[0] != "OK")
    return answer.code, answer.message


NAMES = [c.name for c in CHECKS]


@pytest.mark.parametrize("check", CHECKS, ids=NAMES)
def test_simple_switch_grpc(bmv2: Server, check: Check) -> None:
    request = check.request(bmv2.ids)
    assert refusal(bmv2.answer(request), request) == expected(check, bmv2.ids, False)


@pytest.mark.parametrize("check", CHECKS, ids=NAMES)
def test_softswitch(softswitch: Server, check: Check) -> None:
    request = check.request(softswitch.ids)
    assert refusal(softswitch.answer(request), request) == expected(
        check, softswitch.ids, True)


def _batch(ids: Ids) -> Request:
    """A batch whose second and third updates are refused: the first's entry is deleted
    by the fourth, so the servers' state is as before."""
    mac = b"\x00\x00\x00\x00\x00\x33"
    return write(upd(I, table_entry=entry(ids, "t_exact", exact(mac))),
                 upd(I, table_entry=entry(ids, "t_exact", exact(MAC1))),
                 upd(I, table_entry=entry(ids, "t_tern", ternary(MAC1, MAC1))),
                 upd(D, table_entry=entry(ids, "t_exact", exact(mac), action=None)))


BATCH = Answer("UNKNOWN", "", (
    ("OK", ""),
    ("ALREADY_EXISTS", "Match entry exists, use MODIFY if you wish to change action"),
    ("INVALID_ARGUMENT", "Zero priority for ternary match"),
    ("OK", "")))


def test_batch_details_simple_switch_grpc(bmv2: Server) -> None:
    """A refused batch: UNKNOWN, no message, one error per update, in order."""
    assert bmv2.answer(_batch(bmv2.ids)) == BATCH


def test_batch_details_softswitch(softswitch: Server) -> None:
    assert softswitch.answer(_batch(softswitch.ids)) == BATCH
