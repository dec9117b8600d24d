"""One switch port on a Linux interface through an AF_PACKET raw socket.

The socket sees every frame on the wire in both directions, so frames the switch
itself sent (``PACKET_OUTGOING``) are not delivered to it (``PACKET_IGNORE_OUTGOING``)
or, on kernels without that option, skipped, or every packet would loop back into the
pipeline. The interface is put in promiscuous mode, as BMv2 (libpcap)
does, so frames addressed to other MACs reach the pipeline. The kernel strips the
802.1Q tag of received frames into ancillary data; it is put back so the pipeline
sees the frame as it was on the wire.

The switch's own ports read through a receive ring (``ring_bytes``: PACKET_RX_RING,
see ``batchio.c``) where the C module is built: the kernel writes each frame into
shared memory as it delivers it, and a burst is read without a system call.
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import struct
import threading
from typing import Any

from softswitch.daemon.ports import batchio, ingress_priority
from softswitch.diagnostics import P4Error

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_AUXDATA = 8
PACKET_OUTGOING = 4
PACKET_IGNORE_OUTGOING = 23
PACKET_STATISTICS = 6
_STATISTICS = struct.Struct("II")          # struct tpacket_stats: tp_packets, tp_drops
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
_AUXDATA = struct.Struct("IIIHHHH")
MAX_FRAME = 65536 + 4
RCVBUF_BYTES = 8 << 20
log = logging.getLogger("softswitch.daemon.ports")
SIOCGIFMTU = 0x8921
# A ring slot holds the kernel's header (66 bytes before the MAC header, TPACKET_V2)
# and a frame of the interface's MTU with two VLAN tags; slots stop growing at 16 KiB
# (jumbo frames) and a bigger frame is read from the socket's ordinary queue instead.
RING_SLOT_OVERHEAD = 66 + 14 + 8
RING_SLOT_MIN, RING_SLOT_MAX = 2048, 16384


class RawPort:
    """A raw socket bound to one interface; ``bpf``: a classic BPF program choosing the
    frames it receives (``ingress_priority``), attached before the socket is bound so
    no frame slips past it."""

    def __init__(self, iface: str, bpf: list[tuple[int, int, int, int]] | None = None,
                 ring_bytes: int = 0) -> None:
        self.iface = iface
        self._ring: Any = None
        self._drops = 0
        self._drops_lock = threading.Lock()
        try:
            ifindex = socket.if_nametoindex(iface)
        except OSError:
            raise P4Error(f"interface '{iface}' does not exist") from None
        try:
            # protocol 0: no frame at all until bind names the interface; a socket made
            # for ETH_P_ALL gets every interface's frames (loopback's gRPC traffic…)
            # until it is bound, and those would reach the pipeline as this port's
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        except PermissionError:
            raise P4Error(f"cannot open a raw socket on '{iface}': run as root "
                          "(or with CAP_NET_RAW)") from None
        try:
            if bpf is not None:
                ingress_priority.attach(sock, bpf)
            if ring_bytes:
                self._ring = _open_ring(sock, iface, ring_bytes)
            sock.bind((iface, ETH_P_ALL))      # (Python applies htons to the protocol)
            mreq = struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
            sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
            sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
            _ignore_outgoing(sock)
            # Bursts arrive faster than the pipeline runs: queue them in the kernel
            # (libpcap, which BMv2 uses, asks for a similar buffer).
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF_BYTES)
            sock.setblocking(False)
        except OSError as exc:
            self._ring = None
            sock.close()
            raise P4Error(f"cannot use interface '{iface}': {exc.strerror}") from None
        self.sock = sock

    def fileno(self) -> int:
        return self.sock.fileno()

    def receive(self) -> bytes | None:
        """The next incoming frame, or None when nothing is pending (outgoing frames
        the socket also sees are skipped)."""
        if self._ring is not None:
            frames = self.receive_batch(1)
            return frames[0] if frames else None
        while True:
            try:
                data, ancdata, _flags, addr = self.sock.recvmsg(MAX_FRAME, 64)
            except (BlockingIOError, InterruptedError):
                return None
            if addr[2] != PACKET_OUTGOING:
                break
        for level, kind, payload in ancdata:
            if level == SOL_PACKET and kind == PACKET_AUXDATA and len(payload) >= _AUXDATA.size:
                data = _restore_vlan(data, payload)
        return data

    def receive_batch(self, limit: int = batchio.MAX_BATCH) -> list[bytes]:
        """Every pending incoming frame, at most ``limit`` (empty when none is pending)."""
        mod = batchio.native()
        if self._ring is not None:
            ringed: list[bytes] = mod.ring_recv(self._ring, limit)
            return ringed
        if mod is not None:
            frames: list[bytes] = mod.recv_batch(self.sock.fileno(), limit)
            return frames
        frames = []
        while len(frames) < limit and (frame := self.receive()) is not None:
            frames.append(frame)
        return frames

    def send_batch(self, frames: list[bytes]) -> int:
        """Send frames in order; how many the kernel accepted (refused ones are skipped)."""
        mod = batchio.native()
        if mod is not None:
            sent: int = mod.send_batch(self.sock.fileno(), frames)
            return sent
        return batchio.python_send_batch(self.sock, frames)

    def send(self, frame: bytes) -> bool:
        """Send a frame; False if the kernel refused it (too short, link down, …)."""
        try:
            self.sock.send(frame)
            return True
        except OSError:
            return False

    @property
    def truncated(self) -> int:
        """Frames the ring cut to a slot and could not read whole (0 without a ring)."""
        mod = batchio.native()
        return 0 if self._ring is None else int(mod.ring_truncated(self._ring))

    def kernel_drops(self) -> int:
        """Frames the kernel dropped for this socket since it was opened because its
        receive ring (or queue) was full: the port loop fell behind. The kernel resets
        its count (PACKET_STATISTICS) at each reading, so the readings are added up
        here; after :meth:`close` the last total stays."""
        with self._drops_lock:
            try:
                raw = self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, _STATISTICS.size)
            except OSError:                # closed
                return self._drops
            self._drops += _STATISTICS.unpack(raw)[1]
            return self._drops

    def close(self) -> None:
        self.kernel_drops()                # the count dies with the socket
        self._ring = None                  # unmapped first, then the socket goes
        self.sock.close()


def _open_ring(sock: socket.socket, iface: str, ring_bytes: int) -> Any:
    """The socket's receive ring, slots sized for the interface's MTU; None where the
    C module is not built (the socket is read with recvmmsg or recvmsg then)."""
    mod = batchio.native()
    if mod is None:
        return None
    request = struct.pack("16si", iface.encode()[:15], 0)
    mtu = struct.unpack_from("16si", fcntl.ioctl(sock.fileno(), SIOCGIFMTU, request))[1]
    slot = RING_SLOT_MIN
    while slot < RING_SLOT_MAX and slot < mtu + RING_SLOT_OVERHEAD:
        slot *= 2
    try:
        return mod.ring_open(sock.fileno(), slot, max(ring_bytes // slot, 64))
    except OSError as exc:                 # no memory for it, a kernel without it
        log.warning("%s: no receive ring (%s); reading it with recvmmsg", iface,
                    exc.strerror or exc)
        return None


def _ignore_outgoing(sock: socket.socket) -> None:
    """Ask the kernel (Linux >= 4.20) not to queue the frames we send back to us: on a
    busy port they doubled the frames the port loop reads, only to skip them. Older
    kernels refuse the option; ``receive`` skips ``PACKET_OUTGOING`` frames anyway."""
    try:
        sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    except OSError:
        pass


def _restore_vlan(frame: bytes, aux: bytes) -> bytes:
    status, _len, _snap, _mac, _net, tci, tpid = _AUXDATA.unpack_from(aux)
    if not status & TP_STATUS_VLAN_VALID or len(frame) < 12:
        return frame
    if not status & TP_STATUS_VLAN_TPID_VALID:
        tpid = 0x8100
    return frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]


def interface_exists(iface: str) -> bool:
    return os.path.exists(f"/sys/class/net/{iface}")
