"""pcap trace files, one per interface and direction, as BMv2's ``--pcap DIR`` writes
(``<iface>_in.pcap`` / ``<iface>_out.pcap``).

The packet path only stamps a frame and appends it to a list; a writer thread puts the
records in the file and flushes it within ``FLUSH_S``, so a trace can be read (tcpdump,
scapy) while the switch is still running, which is how users debug a live topology, and
a slow disk never delays a packet. :meth:`PcapWriter.close` writes what is left.
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections import deque
from typing import BinaryIO

PCAP_MAGIC = 0xA1B2C3D4
LINKTYPE_ETHERNET = 1
SNAPLEN = 65535
FLUSH_S = 0.02


class PcapWriter:
    """Appends Ethernet frames to a classic (microsecond) pcap file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._file: BinaryIO | None = open(path, "wb")  # noqa: SIM115 - lives with the port
        self._file.write(struct.pack("<IHHiIII", PCAP_MAGIC, 2, 4, 0, 0, SNAPLEN,
                                     LINKTYPE_ETHERNET))
        self._file.flush()
        # deque: append (packet path) and popleft (writer) are atomic, no lock shared
        self._pending: deque[tuple[float, bytes]] = deque()
        self._lock = threading.Lock()            # the file: writer thread vs close
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"pcap {path}", daemon=True)
        self._thread.start()

    def write(self, frame: bytes, timestamp: float | None = None) -> None:
        """Record a frame (stamped now unless ``timestamp``); written by the thread."""
        if self._file is None:
            return
        self._pending.append((time.time() if timestamp is None else timestamp, frame))

    def _run(self) -> None:
        while not self._stop.wait(FLUSH_S):
            self._write_pending()

    def _write_pending(self) -> None:
        with self._lock:
            if self._file is None or not self._pending:
                return
            records = []
            pending = self._pending
            while pending:
                ts, frame = pending.popleft()
                sec = int(ts)
                data = frame[:SNAPLEN]
                records.append(struct.pack("<IIII", sec, int((ts - sec) * 1_000_000),
                                           len(data), len(frame)) + data)
            self._file.write(b"".join(records))
            self._file.flush()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(2)
        self._write_pending()
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def trace_paths(directory: str, iface: str) -> tuple[str, str]:
    """The (ingress, egress) trace files of an interface."""
    return (os.path.join(directory, f"{iface}_in.pcap"),
            os.path.join(directory, f"{iface}_out.pcap"))
