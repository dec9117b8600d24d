"""AF_PACKET port I/O and pcap traces on a real veth pair (needs root; skipped
otherwise). The pair is created and deleted by the test."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from scapy.utils import rdpcap

from softswitch.daemon.ports.afpacket import RawPort
from softswitch.daemon.ports.dataplane import DataPlane
from softswitch.diagnostics import P4Error

ETHERTYPE = b"\x88\xb5"   # IEEE local experimental: nothing else on the link uses it
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for veth/AF_PACKET")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture()
def veth():
    tag = uuid.uuid4().hex[:6]
    a, b = f"vsa{tag}", f"vsb{tag}"
    _ip("link", "add", a, "type", "veth", "peer", "name", b)
    try:
        for name in (a, b):
            subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1"],
                           capture_output=True)
            _ip("link", "set", name, "up")
        _wait_running(a, b)
        yield a, b
    finally:
        subprocess.run(["ip", "link", "del", a], capture_output=True)


def _wait_running(*names: str, seconds: float = 10.0) -> None:
    """Until both ends carry frames (operstate up): a frame sent before is dropped,
    and on a busy machine the carrier comes up late."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if all(Path(f"/sys/class/net/{n}/operstate").read_text().strip() == "up"
               for n in names):
            return
        time.sleep(0.01)


def _frame(payload: bytes, vlan: int | None = None) -> bytes:
    dst, src = bytes.fromhex("020000000002"), bytes.fromhex("020000000001")
    tag = b"\x81\x00" + vlan.to_bytes(2, "big") if vlan is not None else b""
    return dst + src + tag + ETHERTYPE + payload.ljust(46, b"\0")


def _ours(frame: bytes) -> bool:
    return ETHERTYPE in frame[12:18]


def _receive(port: RawPort, timeout: float = 2.0) -> bytes | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        frame = port.receive()
        if frame is not None and _ours(frame):
            return frame
        time.sleep(0.005)
    return None


def test_loop_delivers_once_and_traces(veth, tmp_path):
    a, b = veth
    plane = DataPlane({3: a}, pcap_dir=str(tmp_path))
    delivered: list[tuple[int, bytes]] = []

    def deliver(port: int, frame: bytes) -> None:
        if _ours(frame):
            delivered.append((port, frame))
            plane.transmit(port, frame[:-5] + b"reply")

    thread = threading.Thread(target=plane.run, args=(deliver,), daemon=True)
    thread.start()
    peer = RawPort(b)
    try:
        sent = _frame(b"hello", vlan=5)
        assert peer.send(sent)
        reply = _receive(peer)
        assert reply is not None and reply[-5:] == b"reply"
        time.sleep(0.2)   # the switch's own transmission must not come back as input
        assert delivered == [(3, sent)]
    finally:
        peer.close()
        plane.stop()
        thread.join(2)
        plane.close()
    assert not thread.is_alive()
    ins = [bytes(p) for p in rdpcap(str(tmp_path / f"{a}_in.pcap")) if _ours(bytes(p))]
    outs = [bytes(p) for p in rdpcap(str(tmp_path / f"{a}_out.pcap")) if _ours(bytes(p))]
    assert ins == [sent]
    assert len(outs) == 1 and outs[0][-5:] == b"reply"


def test_transmit_to_unknown_port_is_dropped(veth):
    a, _ = veth
    plane = DataPlane({1: a})
    try:
        plane.transmit(9, _frame(b"x"))
        assert plane.sent == 0
    finally:
        plane.close()


def test_missing_interface_is_a_user_error():
    with pytest.raises(P4Error, match="does not exist"):
        DataPlane({1: "nosuchif0"})


def test_a_failing_delivery_does_not_stop_the_loop(veth):
    a, b = veth
    plane = DataPlane({1: a})
    seen: list[bytes] = []

    def deliver(port: int, frame: bytes) -> None:
        if not _ours(frame):
            return
        seen.append(frame)
        if len(seen) == 1:
            raise RuntimeError("pipeline bug")

    thread = threading.Thread(target=plane.run, args=(deliver,), daemon=True)
    thread.start()
    peer = RawPort(b)
    try:
        for payload in (b"one", b"two"):
            peer.send(_frame(payload))
            time.sleep(0.1)
        deadline = time.monotonic() + 2
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(seen) == 2 and thread.is_alive()
    finally:
        peer.close()
        plane.stop()
        thread.join(2)
        plane.close()


@pytest.mark.parametrize("native", [True, False], ids=["recvmmsg", "fallback"])
def test_batches_carry_every_frame_in_order_with_vlan_tags(veth, monkeypatch, native):
    """A burst sent in one call arrives whole, in order, VLAN tags restored, and the
    sender does not read its own frames back; the C module and the per-frame fallback
    behave the same."""
    from softswitch.daemon.ports import batchio

    if native and batchio.native() is None:
        pytest.skip("no C compiler: the batched module cannot be built")
    if not native:
        monkeypatch.setattr(batchio, "native", lambda: None)
    a, b = veth
    tx, rx = RawPort(a), RawPort(b)
    try:
        frames = [_frame(i.to_bytes(2, "big"), vlan=7 if i % 3 == 0 else None)
                  for i in range(150)]
        assert tx.send_batch(frames) == len(frames)
        got: list[bytes] = []
        deadline = time.monotonic() + 3
        while len(got) < len(frames) and time.monotonic() < deadline:
            got += [f for f in rx.receive_batch() if _ours(f)]
            time.sleep(0.005)
        assert got == frames
        assert not [f for f in tx.receive_batch() if _ours(f)]
        assert tx.receive_batch(limit=0) == []
    finally:
        tx.close()
        rx.close()


def test_burst_replies_leave_after_the_burst_in_one_call(veth):
    """What the loop's thread transmits while handling a burst is held and sent when the
    burst is done; every reply arrives, in order."""
    a, b = veth
    plane = DataPlane({1: a})
    calls: list[int] = []

    def deliver(port: int, frames: list[bytes]) -> None:
        ours = [f for f in frames if _ours(f)]
        calls.append(len(ours))
        for frame in ours:
            plane.transmit(port, frame[:-5] + b"reply")
        assert plane.sent == 0 or not ours      # nothing left during the burst

    thread = threading.Thread(target=plane.run_batches, args=(deliver,), daemon=True)
    thread.start()
    peer = RawPort(b)
    try:
        sent = [_frame(bytes([i]) * 8) for i in range(40)]
        peer.send_batch(sent)
        replies: list[bytes] = []
        deadline = time.monotonic() + 3
        while len(replies) < len(sent) and time.monotonic() < deadline:
            replies += [f for f in peer.receive_batch() if _ours(f)]
            time.sleep(0.005)
        assert [r[:-5] for r in replies] == [f[:-5] for f in sent]
        assert sum(calls) == len(sent)
    finally:
        peer.close()
        plane.stop()
        thread.join(2)
        plane.close()


def test_pcap_records_reach_the_file_while_the_switch_runs(tmp_path):
    """The writer thread puts records in the file within a few FLUSH_S, so a live trace
    can be read; close writes the rest."""
    from softswitch.daemon.ports.pcap import FLUSH_S, PcapWriter

    path = tmp_path / "t.pcap"
    writer = PcapWriter(str(path))
    try:
        first = _frame(b"one")
        writer.write(first)
        deadline = time.monotonic() + 50 * FLUSH_S
        while time.monotonic() < deadline and path.stat().st_size <= 24:
            time.sleep(FLUSH_S)
        assert [bytes(p) for p in rdpcap(str(path))] == [first]
        later = [_frame(bytes([i])) for i in range(20)]
        for frame in later:
            writer.write(frame)
    finally:
        writer.close()
    assert [bytes(p) for p in rdpcap(str(path))] == [first, *later]
