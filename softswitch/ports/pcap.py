"""pcap trace files, one per interface and direction, as BMv2's ``--pcap DIR`` writes
(``<iface>_in.pcap`` / ``<iface>_out.pcap``).

Each record is flushed at once so that a trace can be read (tcpdump, scapy) while the
switch is still running, which is how users debug a live topology.
"""

from __future__ import annotations

import os
import struct
import time
from typing import BinaryIO

PCAP_MAGIC = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1
SNAPLEN = 65535


class PcapWriter:
    """Appends Ethernet frames to a classic (microsecond) pcap file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file: BinaryIO | None = open(path, "wb")  # noqa: SIM115 - lives with the port
        self._file.write(struct.pack("<IHHiIII", PCAP_MAGIC, 2, 4, 0, 0, SNAPLEN,
                                     LINKTYPE_ETHERNET))
        self._file.flush()

    def write(self, frame: bytes, timestamp: float | None = None) -> None:
        if self._file is None:
            return
        ts = time.time() if timestamp is None else timestamp
        sec = int(ts)
        usec = int((ts - sec) * 1_000_000)
        data = frame[:SNAPLEN]
        self._file.write(struct.pack("<IIII", sec, usec, len(data), len(frame)) + data)
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def trace_paths(directory: str, iface: str) -> tuple[str, str]:
    """The (ingress, egress) trace files of an interface."""
    return (os.path.join(directory, f"{iface}_in.pcap"),
            os.path.join(directory, f"{iface}_out.pcap"))
