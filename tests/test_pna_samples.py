"""Packet tests of softswitch's PNA target on the samples in tests/p4/pna.

Each test names the PNA behaviour or extern it shows; packets are built with scapy and
injected on a host-side or network-side port of a :class:`softswitch.pna.nic.Nic`.
The samples must also compile warning-free with ``p4test --arch pna`` and get the
same P4Info from softswitch as from p4test.
"""

from __future__ import annotations

import socket
import subprocess
import zlib
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4info_support import strip_doc
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from softswitch.core.control import KeyMatch
from softswitch.diagnostics import P4Error
from softswitch.pna.nic import Nic

PNA_DIR = Path(__file__).resolve().parent / "p4" / "pna"
SAMPLES = sorted(PNA_DIR.glob("*.p4"))
PROGRAMS = [p for p in SAMPLES if "PNA_NIC(" in p.read_text()]
HOST, NET, NET2, NET3 = 0, 1, 2, 3


def _ip(a: str) -> int:
    return int.from_bytes(socket.inet_aton(a), "big")


def _udp(src: str = "10.0.0.9", dst: str = "10.0.0.2", sport: int = 1234, dport: int = 4791,
         tos: int = 0, ttl: int = 64) -> bytes:
    return bytes(Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:aa")
                 / IP(src=src, dst=dst, ttl=ttl, tos=tos) / UDP(sport=sport, dport=dport)
                 / (b"x" * 10))


def _nic(name: str) -> Nic:
    nic = Nic.from_file(PNA_DIR / name)
    nic.set_ports(host=[HOST], net=[NET, NET2, NET3])
    nic.clock.freeze(0)
    return nic


# --- the samples against p4test ------------------------------------------------------------

@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_sample_p4info_equals_p4test(program: Path, reference_tools, tmp_path: Path) -> None:
    from softswitch.frontend.compiler import compile_program
    from softswitch.p4info import generate

    out = tmp_path / "p4info.txtpb"
    proc = subprocess.run([reference_tools.p4test, "--arch", "pna", str(program),
                           "--p4runtime-files", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    expected = text_format.Parse(out.read_text(), p4info_pb2.P4Info())
    got = generate(compile_program(program))
    strip_doc(expected)
    strip_doc(got)
    assert got == expected


# --- pna_basic: direction, pre_control, forwarding, parser errors ------------------------

@pytest.fixture
def basic() -> Nic:
    nic = _nic("pna_basic.p4")
    nic.table_add("forward", [KeyMatch("meta.remote", "exact", _ip("10.0.0.2"))], "to_port",
                  [HOST])
    nic.table_add("forward", [KeyMatch("meta.remote", "exact", _ip("10.0.0.3"))], "to_port",
                  [NET])
    return nic


def test_net_to_host_direction_and_select_by_direction(basic: Nic) -> None:
    """From a network port: NET_TO_HOST, so SelectByDirection picks the destination."""
    out = basic.inject(NET, _udp(dst="10.0.0.2"))
    assert [o.port for o in out] == [HOST]


def test_host_to_net_direction_and_select_by_direction(basic: Nic) -> None:
    """From a host port: HOST_TO_NET, so SelectByDirection picks the source."""
    out = basic.inject(HOST, _udp(src="10.0.0.3", dst="10.9.9.9"))
    assert [o.port for o in out] == [NET]


def test_pre_control_metadata_reaches_main_control_and_class_of_service(basic: Nic) -> None:
    n2h = basic.inject(NET, _udp(dst="10.0.0.2"))[0]
    h2n = basic.inject(HOST, _udp(src="10.0.0.3"))[0]
    assert Ether(n2h.data).src.endswith(":01") and n2h.meta["class_of_service"] == 1
    assert Ether(h2n.data).src.endswith(":02") and h2n.meta["class_of_service"] == 2


def test_default_drop_packet_on_miss(basic: Nic) -> None:
    assert basic.inject(NET, _udp(dst="10.7.7.7")) == []


def test_parser_error_reaches_main_control_which_drops(basic: Nic) -> None:
    """InternetChecksum verification in the parser; main_control drops on the error."""
    good = _udp(dst="10.0.0.2")
    bad = good[:24] + b"\x12\x34" + good[26:]
    assert basic.inject(NET, bad) == []
    assert basic.counter_read("per_direction", 0) == (0, 0)
    assert len(basic.inject(NET, good)) == 1


def test_internet_checksum_rewrites_ipv4_checksum(basic: Nic) -> None:
    out = Ether(basic.inject(NET, _udp(dst="10.0.0.2", ttl=64))[0].data)
    assert out[IP].ttl == 63
    again = out.copy()
    del again[IP].chksum
    assert Ether(bytes(again))[IP].chksum == out[IP].chksum


def test_counter_per_direction_and_register_initial_value(basic: Nic) -> None:
    pkt = _udp(dst="10.0.0.2")
    basic.inject(NET, pkt)
    basic.inject(NET, pkt)
    basic.inject(HOST, _udp(src="10.0.0.3"))
    assert basic.counter_read("per_direction", 0) == (2, 2 * len(pkt))
    assert basic.counter_read("per_direction", 1)[0] == 1
    assert basic.register_read("per_port", NET) == 102   # Register(256, 100): starts at 100
    assert basic.register_read("per_port", HOST) == 101


def test_hash_get_hash_with_base_and_max(basic: Nic) -> None:
    out = Ether(basic.inject(NET, _udp(src="10.0.0.9", dst="10.0.0.2", dport=4791))[0].data)
    data = socket.inet_aton("10.0.0.9") + socket.inet_aton("10.0.0.2") + (4791).to_bytes(2, "big")
    assert out[UDP].sport == 49152 + zlib.crc32(data) % 16


def test_port_neither_host_nor_network_is_dropped(basic: Nic) -> None:
    assert basic.inject(9, _udp(dst="10.0.0.2")) == []
    assert basic.unknown_port_drops == 1


def test_send_to_unknown_port_is_dropped(basic: Nic) -> None:
    basic.table_add("forward", [KeyMatch("meta.remote", "exact", _ip("10.0.0.4"))], "to_port",
                    [42])
    assert basic.inject(NET, _udp(dst="10.0.0.4")) == []
    assert basic.unknown_port_drops == 1


def test_ports_cannot_be_both_host_and_network() -> None:
    nic = Nic.from_file(PNA_DIR / "pna_basic.p4")
    with pytest.raises(P4Error, match="both host and network"):
        nic.set_ports(host=[1], net=[1])


# --- pna_learn: add-on-miss, flow ids, expiry, direct resources, Meter, Digest ---------------

def _flow_id(out: list) -> int:
    return Ether(out[0].data)[IP].id


def test_add_on_miss_allocates_flow_ids_and_sends_digest() -> None:
    nic = _nic("pna_learn.p4")
    first = _flow_id(nic.inject(HOST, _udp(src="10.0.0.1")))
    again = _flow_id(nic.inject(HOST, _udp(src="10.0.0.1")))
    other = _flow_id(nic.inject(HOST, _udp(src="10.0.0.5")))
    assert (first, again, other) == (1, 1, 2)
    entries = nic.table_entries("flows")
    assert [e.args for e in entries] == [[1], [2]]
    assert nic.drain_digests() == [("MainControlImpl.new_flows",
                                     [_ip("10.0.0.1"), _ip("10.0.0.2")]),
                                    ("MainControlImpl.new_flows",
                                     [_ip("10.0.0.5"), _ip("10.0.0.2")])]


def test_add_entry_fails_when_table_is_full() -> None:
    nic = _nic("pna_learn.p4")   # flows has size 4
    for i in range(6):
        nic.inject(HOST, _udp(src=f"10.0.1.{i}"))
    assert len(nic.table_entries("flows")) == 4
    assert nic.rt.learn_failures == 2


def test_direct_counter_counts_only_when_the_action_calls_count() -> None:
    nic = _nic("pna_learn.p4")
    pkt = _udp(src="10.0.0.1")
    for _ in range(3):
        nic.inject(HOST, pkt)
    (entry,) = nic.table_entries("flows")
    assert (entry.packets, entry.bytes) == (2, 2 * len(pkt))   # the miss added it


def test_idle_expiry_set_entry_expire_time_and_restart_expire_timer() -> None:
    nic = _nic("pna_learn.p4")
    nic.set_expire_profile(1, 1_000)
    nic.set_expire_profile(2, 10_000)
    dscp1, dscp2 = _udp(src="10.0.0.1", tos=1 << 2), _udp(src="10.0.0.1", tos=2 << 2)
    assert _flow_id(nic.inject(HOST, dscp1)) == 1          # learned under profile 1
    nic.clock.advance(2_000)
    assert _flow_id(nic.inject(HOST, dscp1)) == 2          # expired: learned again
    assert _flow_id(nic.inject(HOST, dscp2)) == 2          # hit: moved to profile 2
    nic.clock.advance(5_000)
    assert _flow_id(nic.inject(HOST, dscp2)) == 2          # still there; timer restarted
    nic.clock.advance(9_000)
    assert _flow_id(nic.inject(HOST, dscp2)) == 2          # restart kept it alive
    nic.clock.advance(11_000)
    assert _flow_id(nic.inject(HOST, dscp2)) == 3          # idle > 10 ms: expired


def test_idle_expiry_follows_a_profile_shortened_after_learning() -> None:
    nic = _nic("pna_learn.p4")
    nic.set_expire_profile(1, 10_000)
    dscp1 = _udp(src="10.0.0.1", tos=1 << 2)
    assert _flow_id(nic.inject(HOST, dscp1)) == 1          # learned under profile 1
    nic.clock.advance(2_000)
    assert _flow_id(nic.inject(HOST, dscp1)) == 1          # within 10 ms
    nic.set_expire_profile(1, 1_000)
    nic.clock.advance(1_500)
    assert _flow_id(nic.inject(HOST, dscp1)) == 2          # idle > the new 1 ms


def test_meter_red_drops() -> None:
    nic = _nic("pna_learn.p4")
    nic.meter_set_rates("dscp_police", 5, [(1e-6, 1), (1e-6, 1)])
    pkt = _udp(src="10.0.0.1", tos=5 << 2)
    assert len(nic.inject(HOST, pkt)) == 1      # within the burst
    assert nic.inject(HOST, pkt) == []          # over both rates: RED
    assert len(nic.inject(HOST, _udp(src="10.0.0.1", tos=6 << 2))) == 1   # other index


def test_direct_meter_red_drops() -> None:
    nic = _nic("pna_learn.p4")
    pkt = _udp(src="10.0.0.1")
    nic.inject(HOST, pkt)                                   # learns the flow
    (entry,) = nic.pb.tables["MainControlImpl.flows"].entries.values()
    entry.meter.configure([(1e-6, 1), (1e-6, 1)])
    assert len(nic.inject(HOST, pkt)) == 1
    assert nic.inject(HOST, pkt) == []


# --- pna_paths: recirculate, mirror_packet, ActionSelector/Profile, Checksum, Random -------

@pytest.fixture
def paths() -> Nic:
    nic = _nic("pna_paths.p4")
    nic.table_add("by_profile", [KeyMatch("hdr.ip.dst", "exact", _ip("10.0.0.2"))],
                  "set_port", [NET])
    nic.table_add_group("by_selector", [KeyMatch("hdr.ip.src", "exact", _ip("10.0.0.9"))],
                        [("set_port_sel", [NET2]), ("set_port_sel", [NET3])])
    nic.mirroring_add(5, HOST)
    return nic


def test_recirculate_increments_pass(paths: Nic) -> None:
    (out,) = paths.inject(HOST, _udp(src="10.0.0.1", dport=7, ttl=64))
    ip = Ether(out.data)[IP]
    assert (out.port, ip.ttl, ip.id) == (NET, 62, 2)


def test_mirror_packet_copies_to_the_session_port(paths: Nic) -> None:
    out = paths.inject(HOST, _udp(src="10.0.0.1", dport=9))
    assert sorted(o.port for o in out) == [HOST, NET]
    mirror = next(o for o in out if o.port == HOST)
    assert mirror.meta["mirror_session"] == 5
    assert mirror.data == next(o for o in out if o.port == NET).data


def test_action_selector_spreads_by_selector_key(paths: Nic) -> None:
    ports = {paths.inject(HOST, _udp(src="10.0.0.9", sport=s, dport=80))[0].port
             for s in range(40)}
    assert ports == {NET2, NET3}
    same = {paths.inject(HOST, _udp(src="10.0.0.9", sport=7, dport=80))[0].port
            for _ in range(5)}
    assert len(same) == 1


def test_action_profile_table(paths: Nic) -> None:
    assert paths.inject(HOST, _udp(src="10.0.0.1", dport=80))[0].port == NET


def test_checksum_extern_and_random(paths: Nic) -> None:
    seen = set()
    for _ in range(30):
        out = Ether(paths.inject(HOST, _udp(src="10.0.0.1", dport=80))[0].data)
        crc = zlib.crc32(socket.inet_aton("10.0.0.1") + socket.inet_aton("10.0.0.2"))
        assert out[UDP].chksum == crc & 0xFFFF
        seen.add(out[IP].tos >> 2)
    assert seen <= {0, 1, 2, 3} and len(seen) > 1


def test_recirculation_stops_after_pass_7(tmp_path: Path) -> None:
    text = (PNA_DIR / "pna_paths.p4").read_text().replace("pass < 2", "pass < 200")
    (tmp_path / "common_headers.p4").write_text((PNA_DIR / "common_headers.p4").read_text())
    prog = tmp_path / "loop.p4"
    prog.write_text(text)
    nic = Nic.from_file(prog)
    assert nic.inject(0, _udp(dport=7)) == []
    assert nic.pass_limit_drops == 1


def test_v1model_program_is_refused_by_the_nic() -> None:
    v1 = Path(__file__).resolve().parent / "p4" / "bmv2_semantics" / "recirculate_truncate.p4"
    with pytest.raises(P4Error, match="PNA_NIC"):
        Nic.from_file(v1)


def test_stf_runs_pna_programs(tmp_path: Path) -> None:
    """`softswitch stf` loads the target of main's architecture: a PNA program runs as
    a NIC (every port on the network side); a wrong expectation fails."""
    from softswitch.stf import run_stf

    program, stf = PNA_DIR / "pna_stf_forward.p4", PNA_DIR / "pna_stf_forward.stf"
    result = run_stf(str(program), str(stf))
    assert result.ok, result.report
    wrong = tmp_path / "wrong.stf"
    wrong.write_text(stf.read_text().replace("88B5", "0800"))
    assert not run_stf(str(program), str(wrong)).ok


def test_c_fast_path_required_is_refused_for_pna() -> None:
    with pytest.raises(P4Error, match="v1model programs only"):
        Nic.from_file(PNA_DIR / "pna_basic.p4", fastpath="require")
    assert "interpreter" in Nic.from_file(PNA_DIR / "pna_basic.p4", fastpath="auto").fastpath
