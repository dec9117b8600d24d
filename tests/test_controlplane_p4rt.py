"""controlplane.p4rt: entity building by name with p4runtime-shell value syntax, and the
client against a live softswitch P4Runtime server (arbitration, pipeline, Read, Write,
per-update errors, ROLLBACK_ON_ERROR, reconnect)."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from controlplane.p4rt import Client, EntityBuilder, P4InfoIndex, P4RuntimeClientError, values
from controlplane.p4rt.client import update
from controlplane.p4rt.describe import entity_text, entry_key, entry_value
from controlplane.p4rt.entities import to_entity
from controlplane.p4rt.errors import BadValueError, P4RuntimeWriteError, UnknownNameError
from softswitch.frontend.compiler import compile_program
from softswitch.p4info import generate

ROOT = Path(__file__).resolve().parents[1]
L3 = ROOT / "p4src/samples/l3_basic.p4"

# A hand-written P4Info with every match kind the builder supports.
ACL_P4INFO = """
tables {
  preamble { id: 1 name: "Ing.acl" alias: "acl" }
  match_fields { id: 1 name: "hdr.ipv4.src_addr" bitwidth: 32 match_type: TERNARY }
  match_fields { id: 2 name: "hdr.udp.dst_port" bitwidth: 16 match_type: RANGE }
  match_fields { id: 3 name: "meta.vrf" bitwidth: 12 match_type: OPTIONAL }
  match_fields { id: 4 name: "hdr.ethernet.dst_addr" bitwidth: 48 match_type: EXACT }
  action_refs { id: 10 } action_refs { id: 11 }
  size: 64
}
actions { preamble { id: 10 name: "Ing.allow" alias: "allow" } }
actions { preamble { id: 11 name: "Ing.set_port" alias: "set_port" }
          params { id: 1 name: "port" bitwidth: 9 } }
actions { preamble { id: 12 name: "Eg.allow" alias: "Eg.allow" } }
registers { preamble { id: 20 name: "Ing.r" alias: "r" } size: 8
            type_spec { bitstring { bit { bitwidth: 48 } } } }
"""


@pytest.fixture(scope="module")
def l3() -> P4InfoIndex:
    return P4InfoIndex(generate(compile_program(str(L3))))


@pytest.fixture()
def acl() -> EntityBuilder:
    return EntityBuilder(P4InfoIndex(text_format.Parse(ACL_P4INFO, p4info_pb2.P4Info())))


NH = {"port": 1, "src_mac": "00:aa:bb:cc:dd:ee", "dst_mac": "00:00:00:00:00:02"}


# --- values -------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "width", "value"), [
    ("10.0.0.1", 32, 0x0A000001), ("00:11:22:33:44:55", 48, 0x001122334455),
    ("0x81", 8, 0x81), ("0b101", 3, 5), (" 42 ", 16, 42), (7, 9, 7),
    ("::1", 128, 1),
])
def test_parse_scalar(text, width, value) -> None:
    assert values.parse_scalar(text, width, "f") == value


@pytest.mark.parametrize(("text", "width", "message"), [
    ("256", 8, "does not fit in 8 bits"), ("10.0.0.300", 32, "not a number"),
    ("-1", 8, "negative"), (True, 1, "not a number"), ("x1", 8, "not a number"),
])
def test_parse_scalar_rejects(text, width, message) -> None:
    with pytest.raises(BadValueError, match=message):
        values.parse_scalar(text, width, "f")


def test_lpm_ternary_range_parsing() -> None:
    assert values.parse_lpm("10.0.0.0/8", 32, "f") == (0x0A000000, 8)
    assert values.parse_lpm("10.0.0.1", 32, "f") == (0x0A000001, 32)
    with pytest.raises(BadValueError, match="beyond the /8 prefix"):
        values.parse_lpm("10.0.0.1/8", 32, "f")
    with pytest.raises(BadValueError, match="prefix length 33"):
        values.parse_lpm("10.0.0.0/33", 32, "f")
    assert values.parse_ternary("0x0a000000&&&0xff000000", 32, "f") == (0x0A000000, 0xFF000000)
    assert values.parse_ternary("5", 8, "f") == (5, 0xFF)
    with pytest.raises(BadValueError, match="outside mask"):
        values.parse_ternary("0x11&&&0x10", 8, "f")
    assert values.parse_range("1024..2047", 16, "f") == (1024, 2047)
    with pytest.raises(BadValueError, match="empty range"):
        values.parse_range("9..3", 16, "f")


def test_canonical_bytes() -> None:
    assert values.encode(0) == b"\x00" and values.encode(0x1FF) == b"\x01\xff"
    assert values.canonical(b"\x00\x00\x05") == b"\x05"


# --- entity building ----------------------------------------------------------------------
def test_l3_entry_by_alias_suffix_and_full_name(l3: P4InfoIndex) -> None:
    b = EntityBuilder(l3)
    e1 = b.table_entry("ipv4_lpm", match={"hdr.ipv4.dst_addr": "10.0.0.0/8"},
                       action="set_next_hop", params=NH)
    e2 = b.table_entry("L3Ingress.ipv4_lpm", match={"dst_addr": "10.0.0.0/8"},
                       action="L3Ingress.set_next_hop", params=NH)
    assert e1 == e2
    assert e1.match[0].lpm.prefix_len == 8 and e1.match[0].lpm.value == b"\x0a\0\0\0"
    assert [p.value for p in e1.action.action.params] == [b"\x01", bytes.fromhex(
        "aabbccddee"), b"\x02"]
    text = entity_text(l3, to_entity(e1))
    assert text == ("L3Ingress.ipv4_lpm hdr.ipv4.dst_addr=10.0.0.0/8 -> "
                    "L3Ingress.set_next_hop(port=1, src_mac=00:aa:bb:cc:dd:ee, "
                    "dst_mac=00:00:00:00:00:02)")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"table": "nope"}, "no table 'nope' in the P4Info .known: L3Ingress.ipv4_lpm"),
    ({"match": {"hdr.ipv4.src": "1.2.3.4"}}, "has no key field 'hdr.ipv4.src'"),
    ({"action": "forward"},
     "has no action 'forward' .actions: L3Ingress.set_next_hop, L3Ingress.drop"),
    ({"params": {"port": 1}}, "parameter 'src_mac' is missing"),
    ({"params": {**NH, "vlan": 3}}, "has no parameter 'vlan'"),
    ({"params": {**NH, "port": 512}}, "parameter port: 512 does not fit in 9 bits"),
    ({"priority": 5}, "has only exact/lpm keys: entries take no priority"),
    ({"match": {"hdr.ipv4.dst_addr": "10.1.0.0/8"}}, "bits set beyond the /8 prefix"),
])
def test_entry_errors_name_the_problem(l3: P4InfoIndex, kwargs, message) -> None:
    args = {"table": "ipv4_lpm", "match": {"hdr.ipv4.dst_addr": "10.0.0.0/8"},
            "action": "set_next_hop", "params": NH, **kwargs}
    with pytest.raises((BadValueError, UnknownNameError), match=message):
        EntityBuilder(l3).table_entry(**args)


def test_one_builder_answers_the_same_after_its_lookups_are_kept(l3: P4InfoIndex) -> None:
    """The builder and the index keep what they resolved (names inside a table or action,
    a table's priority rule, an action's parameters): a builder used for many entries
    must still build each like a fresh one and refuse each mistake with the same error."""
    args = {"table": "ipv4_lpm", "match": {"hdr.ipv4.dst_addr": "10.0.0.0/8"},
            "action": "set_next_hop", "params": NH}
    b = EntityBuilder(l3)
    first = b.table_entry(**args)
    for _ in range(2):
        for kwargs, message in [
                ({"match": {"hdr.ipv4.src": "1.2.3.4"}}, "has no key field 'hdr.ipv4.src'"),
                ({"action": "forward"}, "has no action 'forward'"),
                ({"params": {"port": 1}}, "parameter 'src_mac' is missing"),
                ({"params": {**NH, "vlan": 3}}, "has no parameter 'vlan'"),
                ({"params": {"port": 1, "src_mac": 2, "vlan": 3}}, "no parameter 'vlan'"),
                ({"priority": 5}, "entries take no priority")]:
            with pytest.raises((BadValueError, UnknownNameError), match=message):
                b.table_entry(**{**args, **kwargs})
        assert b.table_entry(**args) == first == EntityBuilder(l3).table_entry(**args)
        assert b.table_entry(**{**args, "match": {"dst_addr": "10.0.0.0/8"},
                                "action": "L3Ingress.set_next_hop"}) == first


def test_ternary_range_optional_and_wildcards(acl: EntityBuilder) -> None:
    e = acl.table_entry("acl", match={"src_addr": "10.0.0.0&&&255.0.0.0",
                                      "dst_port": "4791..4791", "vrf": 3,
                                      "dst_addr": "aa:bb:cc:dd:ee:ff"},
                        action="allow", priority=10)
    kinds = {fm.field_id: fm.WhichOneof("field_match_type") for fm in e.match}
    assert kinds == {1: "ternary", 2: "range", 3: "optional", 4: "exact"}
    # don't-care values are omitted, as P4Runtime requires
    w = acl.table_entry("acl", match={"src_addr": "0&&&0", "dst_port": "0..65535",
                                      "dst_addr": 1}, action="allow", priority=1)
    assert [fm.field_id for fm in w.match] == [4]
    with pytest.raises(BadValueError, match="needs a priority"):
        acl.table_entry("acl", match={"dst_addr": 1}, action="allow")


def test_ambiguous_suffix_is_an_error(acl: EntityBuilder) -> None:
    with pytest.raises(UnknownNameError, match="ambiguous: Eg.allow, Ing.allow"):
        acl.index.action("allow")
    # inside a table only its own actions count, so "allow" is fine there
    acl.table_entry("acl", match={"dst_addr": 1}, action="allow", priority=1)


def test_register_write_and_index_range(acl: EntityBuilder) -> None:
    assert acl.register_write("r", 3, "00:00:00:00:00:07").data.bitstring == b"\x07"
    with pytest.raises(BadValueError, match="index 8 is not in 0..7"):
        acl.register_entry("r", 8)


def test_entry_key_ignores_padding(l3: P4InfoIndex) -> None:
    b = EntityBuilder(l3)
    e = to_entity(b.table_entry("ipv4_lpm", match={"dst_addr": "10.0.0.0/8"},
                                action="set_next_hop", params=NH))
    padded = to_entity(b.table_entry("ipv4_lpm", match={"dst_addr": "10.0.0.0/8"},
                                     action="set_next_hop", params=NH))
    padded.table_entry.action.action.params[0].value = b"\x00\x01"
    assert entry_key(e) == entry_key(padded) and entry_value(e) == entry_value(padded)
    other = to_entity(b.table_entry("ipv4_lpm", match={"dst_addr": "10.0.0.0/8"},
                                    action="drop"))
    assert entry_key(e) == entry_key(other) and entry_value(e) != entry_value(other)


# --- live client against softswitch's P4Runtime server ------------------------------------
def test_live_pipeline_write_read_and_errors(softswitch_server: str, l3: P4InfoIndex) -> None:
    b = EntityBuilder(l3)
    with Client(softswitch_server, 1, election_id=10) as client:
        assert client.arbitration and client.arbitration.primary
        assert client.get_p4info() is None
        client.set_pipeline(l3.p4info, L3.read_bytes())
        assert client.get_p4info() is not None
        routes = [b.table_entry("ipv4_lpm", match={"dst_addr": f"10.{i}.0.0/16"},
                                action="set_next_hop", params={**NH, "port": i})
                  for i in range(1, 6)]
        assert client.write_batches([update("INSERT", e) for e in routes], batch_size=2) == 5
        read = [entity_text(l3, e) for e in client.read([b.table_wildcard("ipv4_lpm")])]
        assert len(read) == 5 and "hdr.ipv4.dst_addr=10.3.0.0/16" in " ".join(read)

        # a refused update names itself; ROLLBACK_ON_ERROR leaves nothing behind
        fresh = b.table_entry("ipv4_lpm", match={"dst_addr": "192.168.0.0/16"},
                              action="drop")
        with pytest.raises(P4RuntimeWriteError) as info:
            client.write([update("INSERT", fresh), update("INSERT", routes[0])],
                         "ROLLBACK_ON_ERROR")
        assert any(code == "ALREADY_EXISTS" for _, code, _ in info.value.errors)
        assert "ALREADY_EXISTS" in str(info.value)
        assert len(list(client.read([b.table_wildcard("ipv4_lpm")]))) == 5

        counters = list(client.read([b.counter_entry("port_rx")]))
        assert len(counters) == 64


def test_a_batch_with_many_refused_updates_names_each(softswitch_server: str,
                                                      l3: P4InfoIndex) -> None:
    """500 refused updates (~50 KB of per-update errors in the trailers, past gRPC's
    default 16 KiB for received metadata): the error still names every one, instead of
    RESOURCE_EXHAUSTED 'received metadata size exceeds hard limit'."""
    b = EntityBuilder(l3)
    with Client(softswitch_server, 1, election_id=10) as client:
        client.set_pipeline(l3.p4info, L3.read_bytes())
        absent = [b.table_entry("ipv4_lpm", match={"dst_addr": f"10.{i >> 8}.{i & 255}.0/24"},
                                action="drop") for i in range(500)]
        with pytest.raises(P4RuntimeWriteError) as info:
            client.write([update("DELETE", e) for e in absent])
        assert len(info.value.errors) == 500
        assert {code for _, code, _ in info.value.errors} == {"NOT_FOUND"}


def test_live_backup_cannot_write_and_reconnect(softswitch_server: str, l3: P4InfoIndex) -> None:
    b = EntityBuilder(l3)
    primary = Client(softswitch_server, 1, election_id=10)
    primary.connect()
    primary.set_pipeline(l3.p4info, L3.read_bytes())
    backup = Client(softswitch_server, 1, election_id=5)
    with pytest.raises(P4RuntimeClientError, match="not primary"):
        backup.connect()
    arb = backup.connect(require_primary=False)
    assert not arb.primary and arb.election_id == 10
    entry = b.table_entry("ipv4_lpm", match={"dst_addr": "10.0.0.0/8"}, action="drop")
    with pytest.raises(P4RuntimeClientError) as info:
        backup.write([update("INSERT", entry)])
    assert info.value.code == grpc.StatusCode.PERMISSION_DENIED
    assert list(backup.read([b.table_wildcard()])) == []     # backups may read
    primary.close()                       # the backup is promoted ...
    assert backup.reconnect().primary     # ... and a fresh session arbitrates again
    backup.write([update("INSERT", entry)])
    backup.close()


def test_connect_to_nothing_is_a_clear_error() -> None:
    client = Client("127.0.0.1:1", 1, timeout=0.5)
    with pytest.raises(P4RuntimeClientError, match="no P4Runtime server answers"):
        client.connect()


def test_close_with_wait_frees_the_election_id_at_once(softswitch_server: str) -> None:
    """close(wait=...) returns once the server has ended the stream, so the next
    session may take the same election id straight away (a PTF suite's next test)."""
    for _ in range(20):
        client = Client(softswitch_server, 1, election_id=10)
        assert client.connect().primary
        client.close(wait=5)
    # a session that was never connected closes without waiting
    Client(softswitch_server, 1, election_id=10).close(wait=5)


def test_an_election_id_still_held_is_waited_for_then_refused(softswitch_server: str,
                                                               monkeypatch) -> None:
    """A session whose election id the server still sees held (the previous session's
    stream not yet ended) gets it once freed; held for good, the refusal is raised."""
    import threading

    from controlplane.p4rt import client as client_mod

    monkeypatch.setattr(client_mod, "STALE_STREAM_WAIT", 1.0)
    first = Client(softswitch_server, 1, election_id=11)
    assert first.connect().primary
    with pytest.raises(P4RuntimeClientError, match="Election id already exists"):
        Client(softswitch_server, 1, election_id=11).connect()
    threading.Timer(0.3, first.close).start()        # freed while the next one waits
    second = Client(softswitch_server, 1, election_id=11)
    assert second.connect().primary
    second.close(wait=5)
