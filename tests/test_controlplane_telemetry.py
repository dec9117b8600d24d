"""Telemetry: BRIEF §1's diagnostics as functions, and end to end on a live softswitch:
traffic injected into the tailcc pipeline shows up in `export`, `watch` and `diagnose`."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from controlplane.cli import main
from controlplane.telemetry import analysis
from controlplane.telemetry.snapshot import Snapshot

ROOT = Path(__file__).resolve().parents[1]


def _snap(t: float, classes: dict[int, int], marks: dict[int, int],
          pfc: dict[int, int] | None = None) -> Snapshot:
    return Snapshot(t, {"class": {k: (v, 0) for k, v in classes.items()},
                        "ecn_mark": {k: (v, 0) for k, v in marks.items()},
                        "pfc": {k: (v, 0) for k, v in (pfc or {}).items()}})


def test_mark_rates_per_queue_and_sustain() -> None:
    q4 = 3 << 3 | 4                                   # port 3, queue 4
    snaps = [_snap(0, {6: 0, 0: 0}, {q4: 0}), _snap(1, {6: 100, 0: 100}, {q4: 10}),
             _snap(2, {6: 200, 0: 200}, {q4: 30}), _snap(3, {6: 300, 0: 300}, {q4: 31})]
    windows = [analysis.mark_rates(a, b, {6: 4, 0: 0})
               for a, b in zip(snaps, snaps[1:], strict=False)]
    by_queue = [{r.queue: round(r.rate, 3) for r in w} for w in windows]
    assert [q[4] for q in by_queue] == [0.1, 0.2, 0.01]
    assert [q[0] for q in by_queue] == [0.0, 0.0, 0.0]
    assert [q[None] for q in by_queue] == [0.05, 0.1, 0.005]       # all queues
    two = analysis.sustained_ecn(windows, 0.05, sustain=2)
    assert [f.message.split(" above")[0] for f in two] == ["ECN mark rate on queue 4"]
    assert "peak 20.0%" in two[0].message
    assert analysis.sustained_ecn(windows, 0.05, sustain=3) == []


def test_pfc_pause_rate() -> None:
    a, b = _snap(0, {}, {}, {2 << 3 | 3: 0}), _snap(2, {}, {}, {2 << 3 | 3: 10})
    [finding] = analysis.pfc_pauses(a, b, max_per_s=1.0)
    assert finding.message.startswith("port 2 priority 3: 10 PFC pause frames (5.0/s)")
    assert analysis.pfc_pauses(a, b, max_per_s=5.0) == []


def test_tail_ratio_rising_with_load(tmp_path: Path) -> None:
    csv = tmp_path / "lat.csv"
    csv.write_text("class,load,p50,p99\nkv,0.2,10,15\nkv,0.5,10,22\nkv,0.9,10,41\n"
                   "api,0.2,10,35\napi,0.9,10,34\n")
    findings = analysis.tail_oscillation(analysis.read_latency_csv(csv), 3.0)
    assert [f.message.split(":")[0] for f in findings] == ["kv"]   # api is high but flat
    assert "P99/P50 = 4.1 at load 0.9, up from 1.5 at load 0.2" in findings[0].message
    bad = tmp_path / "bad.csv"
    bad.write_text("load,p50\n1,2\n")
    with pytest.raises(analysis.LatencyFileError, match="missing column.s. p99"):
        analysis.read_latency_csv(bad)
    bad.write_text("load,p50,p99\n0.5,ten,20\n")
    with pytest.raises(analysis.LatencyFileError, match="bad.csv:2: "):
        analysis.read_latency_csv(bad)


def test_diagnose_latency_only_exit_codes(tmp_path: Path, capsys) -> None:
    csv = tmp_path / "lat.csv"
    csv.write_text("load,p50,p99\n0.1,10,12\n0.9,10,45\n")
    assert main(["diagnose", "--latency", str(csv)]) == 3
    assert "tail: all: P99/P50 = 4.5" in capsys.readouterr().out
    assert main(["diagnose", "--latency", str(csv), "--tail-ratio", "5"]) == 0


# --- live ---------------------------------------------------------------------------------
INTENT = """base: default
ecn_profiles:
  - {{name: always, id: 1, kmin: 0, kmax: 0, pmax: 1.0}}
classes:
  - {{name: tp_pp, id: 6, queue: 4, match: {{dscp: 32}}, ecn_profile: always}}
  - {{name: best_effort, id: 0, queue: 0}}
default_class: best_effort
switches:
  - name: s1
    address: {address}
    device_id: 1
    router_mac: "00:aa:00:00:00:01"
    ports: [1, 2]
    next_hops: [{{name: h1, port: 1, dst_mac: "00:00:00:00:01:01"}}]
    routes: [{{prefix: 10.0.1.1/32, next_hop: h1}}]
"""


def _packet(dscp: int, ecn: int) -> bytes:
    return bytes(Ether(dst="00:aa:00:00:00:01", src="00:00:00:00:02:02")
                 / IP(src="10.0.2.2", dst="10.0.1.1", tos=dscp << 2 | ecn)
                 / UDP(sport=1000, dport=2000) / (b"x" * 100))


@pytest.fixture()
def lab(tmp_path: Path):
    """A tailcc switch (softswitch P4Runtime server) programmed by `tailcc apply`."""
    from softswitch.daemon.device import Device
    from softswitch.daemon.rpc.server import serve

    device = Device(device_id=1, cpu_port=255)
    srv, port = serve(device, "127.0.0.1:0")
    intent = tmp_path / "intent.yaml"
    intent.write_text(INTENT.format(address=f"127.0.0.1:{port}"))
    assert main(["apply", str(intent), "--pipeline", str(ROOT / "p4src/tailcc.p4"),
                 "-q"]) == 0
    yield device, intent
    srv.stop(0).wait()


def test_traffic_shows_in_export_watch_and_diagnose(lab, capsys) -> None:
    device, intent = lab
    for _ in range(30):
        device.receive(2, _packet(32, 0b10))      # tp_pp, ECT(0): marked (kmax 0)
    for _ in range(10):
        device.receive(2, _packet(0, 0b00))       # best effort, Not-ECT
    capsys.readouterr()
    assert main(["export", "--once", "-i", str(intent)]) == 0
    out = capsys.readouterr().out
    assert 'tailcc_class_packets_total{class="tp_pp",switch="s1"} 30.0' in out
    assert 'tailcc_class_packets_total{class="best_effort",switch="s1"} 10.0' in out
    assert 'tailcc_ecn_marked_packets_total{port="1",queue="4",switch="s1"} 30.0' in out

    stop = threading.Event()

    def traffic() -> None:
        while not stop.is_set():
            device.receive(2, _packet(32, 0b10))
            device.receive(2, _packet(0, 0b00))
            time.sleep(0.005)

    thread = threading.Thread(target=traffic, daemon=True)
    thread.start()
    try:
        assert main(["watch", "-i", str(intent), "--count", "1", "--interval", "0.5"]) == 0
        out = capsys.readouterr().out
        assert "s1 class tp_pp: " in out and "s1 ECN marks port 1 queue 4: " in out
        code = main(["diagnose", "-i", str(intent), "--windows", "3", "--interval", "0.4",
                     "--sustain", "2"])
    finally:
        stop.set()
        thread.join()
    out = capsys.readouterr().out
    assert code == 3, out
    assert "ecn: ECN mark rate on queue 4 above 5% for 3 consecutive windows" in out
    assert "(peak 100.0%)" in out


def test_export_marks_unreachable_switch_down(tmp_path: Path, capsys) -> None:
    intent = tmp_path / "i.yaml"
    intent.write_text(INTENT.format(address="127.0.0.1:1"))
    assert main(["export", "--once", "-i", str(intent), "--timeout", "0.5"]) == 0
    assert 'tailcc_switch_up{switch="s1"} 0.0' in capsys.readouterr().out
