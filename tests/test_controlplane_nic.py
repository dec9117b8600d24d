"""One intent, a switch and a NIC: ``tailcc apply`` programs the tailcc switch and the
tailcc NIC (p4src/nic/tailcc_nic.p4 on softswitch's PNA target) together, a second
apply writes nothing, and the NIC then classifies, stamps and queues as the intent
says. Bad NIC intents are refused with the path of each problem."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from controlplane.intent import IntentError, parse_intent_text
from controlplane.reconcile import load_pipeline, reconcile_all

ROOT = Path(__file__).resolve().parents[1]
NIC_P4 = ROOT / "p4src" / "nic" / "tailcc_nic.p4"
HOST, NET, LOOP = 0, 1, 9

INTENT = """
base: default
switches:
  - name: leaf
    address: {switch}
    device_id: 1
    router_mac: "00:aa:00:00:00:01"
    ports: [{{port: 1}}, {{port: 2}}]
    next_hops:
      - {{name: h1, port: 1, dst_mac: "00:00:00:00:01:01"}}
    routes:
      - {{prefix: 10.0.1.1/32, next_hop: h1}}
nics:
  - name: nic1
    address: {nic}
    device_id: 2
    host_port: 0
    net_port: 1
    loopback_port: 9
    trim_dscp: 63
    qps:
      - {{local_qp: 0x200, peer_qp: 0x300, class: hot_kv, slot: 5, ev_count: 4,
          urgent_max_len: 200, max_rate: 100, burst: 2000}}
    app_tags:
      - {{protocol: tcp, dport: 6000, class: cold_kv}}
    class_meters:
      - {{class: cold_kv, cir: 1000000, cburst: 20000, pir: 2000000, pburst: 40000}}
"""


@pytest.fixture()
def servers():
    from p4.v1 import p4runtime_pb2

    from softswitch.daemon.device import Device
    from softswitch.daemon.rpc.server import serve
    from softswitch.p4runtime import pipeline

    switch = Device(device_id=1, cpu_port=255)
    nic = Device(device_id=2, cpu_port=255)
    compiled = pipeline.compile_file(str(NIC_P4), {})
    compiled.switch.set_ports(host=[HOST, 255], net=[NET], loopback=LOOP)
    config = p4runtime_pb2.ForwardingPipelineConfig(
        p4_device_config=pipeline.make_artifact(str(NIC_P4)).to_bytes())
    nic.start_with(config, compiled)                 # as `softswitch run` starts a NIC
    sent: list[tuple[int, bytes]] = []
    nic.transmit = lambda port, data: sent.append((port, data))
    started = [serve(d, "127.0.0.1:0") for d in (switch, nic)]
    yield [f"127.0.0.1:{port}" for _, port in started], nic, sent
    for srv, _ in started:
        srv.stop(0).wait()


def test_apply_programs_a_switch_and_a_nic_from_one_intent(servers) -> None:
    (switch_addr, nic_addr), nic_device, sent = servers
    intent = parse_intent_text(INTENT.format(switch=switch_addr, nic=nic_addr), "t.yaml")
    assert [d.name for d in intent.devices] == ["leaf", "nic1"]
    pipeline = load_pipeline(None, str(ROOT / "p4src" / "tailcc.p4"))
    results = reconcile_all(intent, pipeline)
    assert [r.error for r in results] == [None, None]
    leaf, nic = results
    assert leaf.pipeline_loaded and not nic.pipeline_loaded   # the NIC keeps its program
    assert nic.written == sum(nic.plan.counts().values()) > 10
    assert any(c.entity.WhichOneof("entity") == "meter_entry" and c.kind == "MODIFY"
               for c in nic.plan.changes)                              # the class meter
    again = reconcile_all(intent, pipeline)
    assert [r.plan.counts() for r in again] == [{"INSERT": 0, "MODIFY": 0, "DELETE": 0}] * 2

    # hot_kv: DSCP 26 (its match), lossless -> ECT(0), queue 5; small SEND-only -> urgent
    bth = bytes([0x0A, 0, 0xFF, 0xFF, 0, 0, 0x03, 0x00, 0, 0, 0, 0])
    write = bytes(Ether() / IP(src="10.0.0.1", dst="10.0.1.1") / UDP(sport=1, dport=4791)
                  / bth / (b"x" * 400))
    nic_device.receive(HOST, write)
    port, data = sent[-1]
    ip = Ether(data)[IP]
    assert port == NET and (ip.tos >> 2, ip.tos & 3) == (26, 2)
    assert Ether(data)[UDP].sport & 0xFFF0 == 0xC000                  # EV spraying


def _tailcc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "controlplane.cli", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_show_and_counters_on_a_nic(servers, tmp_path: Path) -> None:
    (switch_addr, nic_addr), nic_device, _sent = servers
    path = tmp_path / "i.yaml"
    path.write_text(INTENT.format(switch=switch_addr, nic=nic_addr))
    intent = parse_intent_text(path.read_text(), str(path))
    [result] = reconcile_all(intent, None, switches=["nic1"])
    assert result.error is None, result.error
    bth = bytes([0x0A, 0, 0xFF, 0xFF, 0, 0, 0x03, 0x00, 0, 0, 0, 0])
    nic_device.receive(HOST, bytes(Ether() / IP(src="10.0.0.1", dst="10.0.1.1")
                                   / UDP(sport=1, dport=4791) / bth))
    show = _tailcc("show", "--intent", str(path), "--switch", "nic1")
    assert show.returncode == 0, show.stderr
    assert "qp_class" in show.stdout and "port_map" in show.stdout
    counters = _tailcc("counters", "class_packets", "--intent", str(path), "--switch", "nic1")
    assert counters.returncode == 0, counters.stderr
    assert "[8]" in counters.stdout                      # hot_kv (id 8) to the network


def test_validate_counts_nics(tmp_path: Path) -> None:
    path = tmp_path / "i.yaml"
    path.write_text(INTENT.format(switch="127.0.0.1:1", nic="127.0.0.1:2"))
    out = subprocess.run([sys.executable, "-m", "controlplane.cli",
                          "validate", str(path)],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and "1 switches, 1 NICs" in out.stdout, out.stderr


@pytest.mark.parametrize("edit, message", [
    (("class: hot_kv", "class: nope"), "nics[0].qps[0].class: unknown class 'nope'"),
    (("class: cold_kv", "class: best_effort"), "matches no single DSCP"),
    (("net_port: 1", "net_port: 0"), "must differ"),
    (("ev_count: 4,", "ev_count: 4, ev_base: 7,"), "multiple of 16"),
    (("name: nic1", "name: leaf"), "also a switch name"),
    (("cir: 1000000", "cir: 3000000"), "exceeds pir"),
])
def test_bad_nic_intents_name_the_problem(edit, message) -> None:
    text = INTENT.format(switch="127.0.0.1:1", nic="127.0.0.1:2").replace(*edit)
    with pytest.raises(IntentError) as exc:
        parse_intent_text(text, "t.yaml")
    assert message in str(exc.value)
