"""The port loop of ``softswitch run``: frames in from every port, frames out.

One thread waits on all port sockets and, per wake-up, reads every frame ready on a
port in one call and hands the burst to ``deliver`` (the egress scheduler, which runs
it through the switch under the device's lock); frames leaving the switch come back
through :meth:`DataPlane.transmit`. Frames the port loop's own thread transmits while
it handles a burst are held and sent in one call per port when the burst is done, after
the device lock is released, so no lock is held across socket I/O and a burst costs
one system call each way (``batchio``). Frames other threads transmit (the egress
scheduler's timer, PacketOut) go out at once. Traces are written as BMv2's ``--pcap``
does, by a writer thread (``pcap``). A wake-up pipe lets :meth:`stop` end the loop.
"""

from __future__ import annotations

import logging
import os
import selectors
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from softswitch.ports.afpacket import RawPort
from softswitch.ports.pcap import PcapWriter, trace_paths

log = logging.getLogger("softswitch.ports")
Deliver = Callable[[int, bytes], None]
DeliverBatch = Callable[[int, list[bytes]], None]


@dataclass
class Port:
    number: int
    raw: RawPort
    pcap_in: PcapWriter | None = None
    pcap_out: PcapWriter | None = None
    pending: list[bytes] = field(default_factory=list)   # held during a burst


class DataPlane:
    """All front-panel ports of one switch."""

    def __init__(self, interfaces: dict[int, str], pcap_dir: str | None = None) -> None:
        self.ports: dict[int, Port] = {}
        self._wake_r, self._wake_w = os.pipe()
        self._stopping = False
        self.received = 0
        self.sent = 0
        self.bursts = 0                         # wake-ups that read frames
        self._loop_thread: int | None = None   # set while the loop handles a burst
        self._held: dict[int, list[bytes]] = {}  # port number -> its pending list
        try:
            for number, iface in interfaces.items():
                port = Port(number, RawPort(iface))
                self.ports[number] = port
                self._held[number] = port.pending
                if pcap_dir is not None:
                    path_in, path_out = trace_paths(pcap_dir, iface)
                    port.pcap_in, port.pcap_out = PcapWriter(path_in), PcapWriter(path_out)
        except BaseException:
            self.close()
            raise

    def transmit(self, number: int, frame: bytes) -> None:
        """Send a frame out of a port (frames to unknown ports are dropped, as in BMv2);
        held until the end of the burst when the port loop itself is sending."""
        port = self.ports.get(number)
        if port is None:
            log.debug("dropping frame to port %d: no interface", number)
            return
        if self._loop_thread is not None and threading.get_ident() == self._loop_thread:
            port.pending.append(frame)
            return
        if port.raw.send(frame):
            self._sent(port, [frame])
        else:
            self._refused(port, 1)

    def held_frames(self) -> dict[int, list[bytes]] | None:
        """Each port's list of the frames held during the current burst, for code on the
        port loop's thread that appends frames out directly instead of calling
        :meth:`transmit` per frame (the native loop); sent as :meth:`transmit`'s are.
        None on any other thread or between bursts."""
        if self._loop_thread is None or threading.get_ident() != self._loop_thread:
            return None
        return self._held

    def _flush(self) -> None:
        """Send what the port loop held during the burst, one call per port."""
        for port in self.ports.values():
            if not port.pending:
                continue
            frames = port.pending[:]      # the list itself stays: held_frames hands it out
            port.pending.clear()
            accepted = port.raw.send_batch(frames)
            if accepted == len(frames):
                self._sent(port, frames)
            else:               # a refused frame is skipped; which one is not known here
                self.sent += accepted
                self._refused(port, len(frames) - accepted)

    def _sent(self, port: Port, frames: list[bytes]) -> None:
        self.sent += len(frames)
        if port.pcap_out is not None:
            for frame in frames:
                port.pcap_out.write(frame)

    def _refused(self, port: Port, count: int) -> None:
        log.info("port %d (%s) refused %d frame(s)", port.number, port.raw.iface, count)

    def run(self, deliver: Deliver) -> None:
        """Feed arriving frames one by one to ``deliver`` until :meth:`stop`."""
        def each(number: int, frames: list[bytes]) -> None:
            for frame in frames:
                try:
                    deliver(number, frame)
                except Exception as exc:  # noqa: BLE001 - one bad frame must not stop ports
                    log.error("port %d: frame dropped, internal error: %s: %s", number,
                              type(exc).__name__, exc)
        self.run_batches(each)

    def run_batches(self, deliver: DeliverBatch) -> None:
        """Feed each port's ready frames, as one list per wake-up, to ``deliver`` until
        :meth:`stop`."""
        with selectors.DefaultSelector() as sel:
            for port in self.ports.values():
                sel.register(port.raw, selectors.EVENT_READ, port)
            sel.register(self._wake_r, selectors.EVENT_READ, None)
            while not self._stopping:
                for key, _ in sel.select():
                    if key.data is None:
                        os.read(self._wake_r, 64)
                        continue
                    self._drain(key.data, deliver)

    def _drain(self, port: Port, deliver: DeliverBatch) -> None:
        # bounded (MAX_BATCH), so one busy port cannot starve the others
        frames = port.raw.receive_batch()
        if not frames:
            return
        self.received += len(frames)
        self.bursts += 1
        if port.pcap_in is not None:
            for frame in frames:
                port.pcap_in.write(frame)
        self._loop_thread = threading.get_ident()
        try:
            deliver(port.number, frames)
        except Exception as exc:  # noqa: BLE001 - one bad burst must not stop the ports
            log.error("port %d: frames dropped, internal error: %s: %s", port.number,
                      type(exc).__name__, exc)
        finally:
            self._loop_thread = None
            self._flush()

    def stop(self) -> None:
        self._stopping = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def close(self) -> None:
        for port in self.ports.values():
            port.raw.close()
            for pcap in (port.pcap_in, port.pcap_out):
                if pcap is not None:
                    pcap.close()
        self.ports.clear()
        self._held.clear()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
