"""Ingress priority (``softswitch run --ingress-priority-dscp``): each port reads the
frames of the urgent DSCPs (or sizes) ahead of a backlog of the others, every frame
reaches the pipeline exactly once, and order is kept within each set.

Real kernel filters on a veth pair: a backlog is built before the port loop starts, so
the order the loop hands frames over shows which socket each frame went to."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether

from softswitch.daemon.ports import batchio, ingress_priority
from softswitch.daemon.ports.afpacket import RawPort
from softswitch.daemon.ports.dataplane import DataPlane
from softswitch.daemon.ports.veth import veth_pairs
from softswitch.diagnostics import P4Error

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for veth/AF_PACKET")


def _frames() -> list[bytes]:
    """IPv4, IPv6 and 802.1Q-tagged frames of DSCP 46 and others, small and large, and
    frames too short for the headers the filter reads, in sending order."""
    eth = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
    out: list[bytes] = []
    for seq in range(40):
        kind = seq % 8
        pad = bytes([seq]) * 200
        if kind == 0:
            pkt = eth / IP(tos=46 << 2) / UDP() / pad
        elif kind == 1:
            pkt = eth / IPv6(tc=46 << 2) / UDP() / pad
        elif kind == 2:
            pkt = eth / Dot1Q(vlan=7) / IP(tos=(46 << 2) | 1) / UDP() / pad
        elif kind == 3:
            pkt = eth / IP(tos=48 << 2) / UDP() / pad
        elif kind == 4:
            pkt = eth / IPv6(tc=0) / UDP() / pad
        elif kind == 5:
            pkt = eth / IP(tos=46 << 2) / UDP() / bytes([seq])
        elif kind == 6:
            pkt = eth / IP(tos=0) / UDP() / bytes([seq])
        else:
            # too short for the headers the filter reads: must still arrive
            out.append(bytes(12) + b"\x08\x00" + bytes([seq]) * 4)
            out.append(bytes(12) + b"\x86\xdd" + bytes([seq]))    # (a short 802.1Q
            # frame never reaches a socket: the kernel drops it when it strips the tag)
            continue
        out.append(bytes(pkt))
    return out


@needs_root
@pytest.mark.parametrize("max_bytes", [80, None])
@pytest.mark.parametrize("io", ["batchio", "python"])
def test_urgent_frames_overtake_a_backlog_and_none_is_lost(max_bytes, io, monkeypatch):
    """With batchio (ppoll, recvmmsg) and without it (select, one recvmsg a frame)."""
    if io == "python":
        monkeypatch.setattr(batchio, "native", lambda: None)
    spec = ingress_priority.parse("46", max_bytes)
    assert spec is not None
    frames = _frames()
    with veth_pairs(1, "ip") as pairs:
        switch_side, peer = pairs[0]
        plane = DataPlane({1: switch_side}, priority=spec)
        tx = RawPort(peer)
        try:
            for frame in frames:
                assert tx.send(frame)
            time.sleep(0.2)                  # all of them wait in the kernel now
            got: list[bytes] = []
            done = threading.Event()

            def deliver(port: int, burst: list[bytes]) -> None:
                got.extend(burst)
                if len(got) >= len(frames):
                    done.set()
            loop = threading.Thread(target=plane.run_batches, args=(deliver,))
            loop.start()
            done.wait(10)
            time.sleep(0.1)                  # nothing more may come
            plane.stop()
            loop.join(5)
        finally:
            tx.close()
            plane.close()
    assert len(got) == len(frames), f"{len(got)} frames read, {len(frames)} sent"
    urgent = [f for f in frames if max_bytes and len(f) <= max_bytes or _dscp46(f)]
    rest = [f for f in frames if f not in urgent]
    assert urgent and rest
    assert got[:len(urgent)] == urgent, "urgent frames first, in their order"
    assert got[len(urgent):] == rest, "then the others, in their order"


def _dscp46(frame: bytes) -> bool:
    """What the filter tests, written the obvious way (scapy parses the frame)."""
    if len(frame) < 20:
        return False
    pkt = Ether(frame)
    ip = pkt.getlayer(IP) or pkt.getlayer(IPv6)
    if ip is None:
        return False
    tos = ip.tos if isinstance(ip, IP) else ip.tc
    return tos >> 2 == 46


def test_filters_are_complementary_programs():
    spec = ingress_priority.parse("46,48", 128)
    assert spec is not None
    urgent, rest = spec.program(urgent=True), spec.program(urgent=False)
    assert [i[:3] for i in urgent] == [i[:3] for i in rest]
    assert urgent[-2:] == [(0x06, 0, 0, ingress_priority.ACCEPT),
                           (0x06, 0, 0, ingress_priority.REJECT)]
    assert rest[-2:] == [(0x06, 0, 0, ingress_priority.REJECT),
                         (0x06, 0, 0, ingress_priority.ACCEPT)]
    assert spec.describe() == "DSCP 46,48 or frames of at most 128 bytes"


@pytest.mark.parametrize("dscps, size, message", [
    ("46,x", None, "'x' is not a DSCP"),
    ("64", None, "'64' is not a DSCP"),
    (",", None, "no DSCP given"),
    (None, 5, "5 is not a frame size"),
])
def test_bad_options_are_named(dscps, size, message):
    with pytest.raises(P4Error, match=message):
        ingress_priority.parse(dscps, size)


def test_nothing_asked_is_no_priority():
    assert ingress_priority.parse(None, None) is None


def urgent_and_bulk() -> tuple[bytes, bytes]:
    """An urgent frame (DSCP 46) and a bulk one, as the checkpoint tests send them."""
    eth = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
    return (bytes(eth / IP(tos=46 << 2) / UDP() / b"urgent"),
            bytes(eth / IP(tos=0) / UDP() / b"bulk"))


@contextlib.contextmanager
def running_priority_plane(prefix: str) -> Iterator[tuple[DataPlane, RawPort, list[bytes]]]:
    """A DataPlane reading DSCP 46 first on one veth pair, its port loop running (up
    and taking calls when this yields); a raw port on the peer to send from; the list
    the loop hands every burst to. The checkpoint tests' set-up."""
    spec = ingress_priority.parse("46", None)
    assert spec is not None
    with veth_pairs(1, prefix) as pairs:
        switch_side, peer = pairs[0]
        plane = DataPlane({1: switch_side}, priority=spec)
        tx = RawPort(peer)
        got: list[bytes] = []
        loop = threading.Thread(target=plane.run_batches,
                                args=(lambda port, burst: got.extend(burst),))
        try:
            loop.start()
            deadline = time.monotonic() + 5
            while plane.calls._loop is None:            # noqa: SLF001 - loop is up
                assert time.monotonic() < deadline
                time.sleep(0.001)
            yield plane, tx, got
        finally:
            plane.stop()
            loop.join(5)
            tx.close()
            plane.close()


def wait_for(got: list[bytes], count: int) -> None:
    deadline = time.monotonic() + 5
    while len(got) < count:
        assert time.monotonic() < deadline, got
        time.sleep(0.001)


@needs_root
def test_a_command_on_the_port_loop_lets_urgent_frames_through_at_its_checkpoints():
    """A runtime-channel command runs on the port loop between bursts; at its
    checkpoints (LoopCalls.checkpoint) the loop forwards the urgent frames that came
    meanwhile — and only those: the others wait for the command to end."""
    if batchio.native() is None:
        pytest.skip("batchio is not built here")
    urgent, bulk = urgent_and_bulk()
    with running_priority_plane("ip") as (plane, tx, got):
        def command() -> list[bytes]:
            assert tx.send(bulk) and tx.send(urgent)
            time.sleep(0.05)                        # both wait in the kernel now
            before = list(got)
            plane.calls.checkpoint()
            return before + [b"|"] + got[len(before):]
        seen = plane.calls.call(command)
        wait_for(got, 2)
    assert seen == [b"|", urgent], "the checkpoint forwarded the urgent frame alone"
    assert got == [urgent, bulk]
