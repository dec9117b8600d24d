"""The port loop of ``softswitch run``: frames in from every port, frames out.

One thread waits on all port sockets and hands each arriving frame to ``deliver``
(the device, which runs it through the switch under its lock); frames leaving the
switch come back through :meth:`DataPlane.transmit`. Traces are written as BMv2's
``--pcap`` does. A wake-up pipe lets :meth:`stop` end the loop at once.
"""

from __future__ import annotations

import logging
import os
import selectors
from collections.abc import Callable
from dataclasses import dataclass

from softswitch.ports.afpacket import RawPort
from softswitch.ports.pcap import PcapWriter, trace_paths

log = logging.getLogger("softswitch.ports")
Deliver = Callable[[int, bytes], None]


@dataclass
class Port:
    number: int
    raw: RawPort
    pcap_in: PcapWriter | None = None
    pcap_out: PcapWriter | None = None


class DataPlane:
    """All front-panel ports of one switch."""

    def __init__(self, interfaces: dict[int, str], pcap_dir: str | None = None) -> None:
        self.ports: dict[int, Port] = {}
        self._wake_r, self._wake_w = os.pipe()
        self._stopping = False
        self.received = 0
        self.sent = 0
        try:
            for number, iface in interfaces.items():
                port = Port(number, RawPort(iface))
                self.ports[number] = port
                if pcap_dir is not None:
                    path_in, path_out = trace_paths(pcap_dir, iface)
                    port.pcap_in, port.pcap_out = PcapWriter(path_in), PcapWriter(path_out)
        except BaseException:
            self.close()
            raise

    def transmit(self, number: int, frame: bytes) -> None:
        """Send a frame out of a port (frames to unknown ports are dropped, as in BMv2)."""
        port = self.ports.get(number)
        if port is None:
            log.debug("dropping frame to port %d: no interface", number)
            return
        if port.raw.send(frame):
            self.sent += 1
            if port.pcap_out is not None:
                port.pcap_out.write(frame)
        else:
            log.info("port %d (%s) refused a %d-byte frame", number, port.raw.iface,
                     len(frame))

    def run(self, deliver: Deliver) -> None:
        """Feed arriving frames to ``deliver`` until :meth:`stop`."""
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

    def _drain(self, port: Port, deliver: Deliver) -> None:
        for _ in range(64):     # bounded, so one busy port cannot starve the others
            frame = port.raw.receive()
            if frame is None:
                return
            self.received += 1
            if port.pcap_in is not None:
                port.pcap_in.write(frame)
            try:
                deliver(port.number, frame)
            except Exception as exc:  # noqa: BLE001 - one bad frame must not stop the ports
                log.error("port %d: frame dropped, internal error: %s: %s", port.number,
                          type(exc).__name__, exc)

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
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
