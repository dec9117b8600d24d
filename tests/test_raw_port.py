"""A port's raw socket sees its own interface's frames only, from the first one, and
its receive ring gives the same frames recvmmsg would.

A packet socket opened for every protocol receives every interface's frames until it is
bound to one; loopback traffic (a P4Runtime client's gRPC) then reached the pipeline as
if it had arrived on the port (a CI run failed on such a frame). The socket is opened
for no protocol and bound with it.

The switch's ports read through a PACKET_RX_RING (``ring_bytes``): every frame, in order,
across the ring's wrap; 802.1Q tags put back; a frame bigger than a slot read whole from
the ordinary queue; the port's own frames not looped back; an overflow drops frames
without disturbing the ones after it."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from softswitch.daemon.ports import batchio
from softswitch.daemon.ports.afpacket import RawPort
from softswitch.daemon.ports.veth import veth_pairs

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for veth/AF_PACKET")


@pytest.mark.parametrize("ring_bytes", [0, 1 << 20], ids=["socket", "ring"])
def test_no_frame_of_another_interface_slips_in_before_bind(ring_bytes):
    stop = threading.Event()

    def loopback_traffic() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            while not stop.is_set():
                s.sendto(b"x" * 50, ("127.0.0.1", 9))

    noise = threading.Thread(target=loopback_traffic, daemon=True)
    noise.start()
    stray = 0
    try:
        with veth_pairs(1, "rp") as pairs:
            for _ in range(200):
                port = RawPort(pairs[0][1], ring_bytes=ring_bytes)  # nothing is sent here
                time.sleep(0.0005)
                while port.receive() is not None:
                    stray += 1
                port.close()
    finally:
        stop.set()
        noise.join(2)
    assert stray == 0, f"{stray} frames of other interfaces reached the port"


def _ringed() -> None:
    if batchio.native() is None:
        pytest.skip("batchio is not built here: ports read without a ring")


def _frame(n: int, size: int = 64, ethertype: bytes = b"\x88\xb5") -> bytes:
    body = n.to_bytes(4, "big") * (size // 4)
    return b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02" + ethertype + body


def _read(port: RawPort, count: int, seconds: float = 5.0) -> list[bytes]:
    got: list[bytes] = []
    deadline = time.monotonic() + seconds
    while len(got) < count and time.monotonic() < deadline:
        got += port.receive_batch() or []
        if len(got) < count:
            time.sleep(0.0005)
    return got


@contextmanager
def _ring_and_peer(prefix: str, ring_bytes: int, mtu: int | None = None,
                   ) -> Iterator[tuple[RawPort, RawPort]]:
    """A port reading through a ring of ``ring_bytes`` on one end of a veth pair (its
    MTU then set to ``mtu``), and a plain port on the other end."""
    _ringed()
    with veth_pairs(1, prefix) as pairs:
        sw, host = pairs[0]
        port = RawPort(sw, ring_bytes=ring_bytes)
        try:
            for name in (sw, host) if mtu else ():
                subprocess.run(["ip", "link", "set", name, "mtu", str(mtu)], check=True)
            peer = RawPort(host)
            try:
                yield port, peer
            finally:
                peer.close()
        finally:
            port.close()


def test_the_ring_gives_every_frame_in_order_across_its_wrap():
    with _ring_and_peer("rr", 64 * 2048) as (port, peer):
        assert port._ring is not None                        # noqa: SLF001
        sent: list[bytes] = []
        got: list[bytes] = []
        for burst in range(40):                              # 1280 frames: 20 wraps
            frames = [_frame(burst * 32 + i, 60 + i * 7) for i in range(32)]
            assert peer.send_batch(frames) == 32
            sent += frames
            got += _read(port, 32)
        assert got == sent
        assert port.receive() is None and port.truncated == 0


def test_the_ring_puts_vlan_tags_back_like_recvmmsg():
    _ringed()
    tagged = [_frame(1, 64, b"\x81\x00\x20\x07\x08\x00"),          # VLAN 7, PCP 1
              _frame(2, 64, b"\x88\xa8\x00\x0a\x81\x00\x00\x0b\x08\x00")]  # QinQ
    with veth_pairs(1, "rv") as pairs:
        sw, host = pairs[0]
        ring, plain, peer = RawPort(sw, ring_bytes=1 << 20), RawPort(sw), RawPort(host)
        try:
            assert peer.send_batch(tagged) == 2
            assert _read(ring, 2) == tagged
            assert _read(plain, 2) == tagged
        finally:
            for p in (ring, plain, peer):
                p.close()


def test_a_frame_bigger_than_a_slot_arrives_whole():
    """The MTU raised after the port opened: the frame does not fit a 2 KiB slot; the
    kernel's full copy is read from the ordinary queue, in its place in the order."""
    with _ring_and_peer("rb", 1 << 20, mtu=9000) as (port, peer):   # 2 KiB slots
        frames = [_frame(1), _frame(2, 8000), _frame(3), _frame(4, 4000)]
        assert peer.send_batch(frames) == 4
        assert _read(port, 4) == frames
        assert port.truncated == 0


def test_the_ring_does_not_loop_back_its_own_frames_and_survives_an_overflow():
    with _ring_and_peer("ro", 64 * 2048) as (port, peer):
        assert port.send_batch([_frame(n) for n in range(10)]) == 10
        assert len(_read(peer, 10)) == 10
        assert _read(port, 1, 0.2) == []                     # its own frames: not seen
        flood = [_frame(n) for n in range(300)]              # 64 slots: most are dropped
        for at in range(0, 300, 50):
            peer.send_batch(flood[at:at + 50])
        kept = _read(port, 300, 0.5)
        assert 0 < len(kept) <= 64 and kept == flood[:len(kept)]
        after = [_frame(1000 + n) for n in range(100)]       # then read as they come
        for at in range(0, 100, 20):
            assert peer.send_batch(after[at:at + 20]) == 20
            assert _read(port, 20) == after[at:at + 20]


def test_a_ring_the_kernel_refuses_leaves_the_port_on_recvmmsg(caplog):
    with _ring_and_peer("rf", 1 << 40) as (port, peer):         # 1 TiB: refused
        assert port._ring is None                            # noqa: SLF001
        assert "no receive ring" in caplog.text
        frames = [_frame(n) for n in range(20)]
        assert peer.send_batch(frames) == 20
        assert _read(port, 20) == frames


def test_a_ring_that_cannot_be_mapped_is_taken_down_again(caplog):
    """The kernel made the ring but this process cannot map it (its address space is
    full): the ring is taken down again, so frames reach the socket's queue, where the
    port reads them with recvmmsg, instead of a ring nobody reads."""
    import resource

    _ringed()
    with veth_pairs(1, "rm") as pairs:
        sw, host = pairs[0]
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm") as f:
            used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (used + (16 << 20), hard))
        try:
            port = RawPort(sw, ring_bytes=256 << 20)             # maps 256 MiB: refused
        finally:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        peer = RawPort(host)
        try:
            assert port._ring is None                            # noqa: SLF001
            assert "no receive ring" in caplog.text
            frames = [_frame(n) for n in range(20)]
            assert peer.send_batch(frames) == 20
            assert _read(port, 20) == frames
        finally:
            port.close()
            peer.close()
