"""Idle timeouts: IdleTimeoutNotification for entries nobody has hit for a while.

A table with ``support_timeout = true`` (P4Info ``NOTIFY_CONTROL``) lets controllers
give entries an ``idle_timeout_ns``; when an entry has seen no packet for that long
the primaries whose role owns the table get one notification (the entry stays: removing it is the
controller's call), and the entry is re-armed when a packet hits it again. The
switch reports idleness through its optional ``entry_idle_us(table, handle)`` (µs
since the entry was last hit or, never hit, inserted); without it no notification
is produced. A sweeper thread checks a few times per second under the device lock,
visiting only the entries that have a timeout (``TableEntries.timed_records``).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

if TYPE_CHECKING:
    from softswitch.daemon.device import Device

SWEEP_SECONDS = 0.1


def sweep(device: Device) -> int:
    """Notify expired entries once; returns how many were reported."""
    with device.lock:
        loaded = device.current
        if loaded is None:
            return 0
        idle_us = getattr(loaded.switch, "entry_idle_us", None)
        if idle_us is None:
            return 0
        tables = loaded.runtime.tables
        expired: list[p4runtime_pb2.TableEntry] = []
        for tid, table in loaded.runtime.index.tables.items():
            if table.info.idle_timeout_behavior != p4info_pb2.Table.NOTIFY_CONTROL:
                continue
            name = table.info.preamble.name
            for record in tables.timed_records(tid):       # not every entry
                timeout = record.idle_timeout_ns
                if not timeout:
                    continue
                idle = idle_us(name, record.handle) * 1000 >= timeout
                if idle and not record.idle_notified:
                    expired.append(tables.canonical(table, record))
                record.idle_notified = idle
        if not expired:
            return 0
        now = time.time_ns()
        for conn in device.arbiter.primaries():
            role = device.arbiter.role_of(conn)
            mine = [e for e in expired
                    if role is not None and device.notifies(role, loaded, e.table_id)]
            if not mine:
                continue
            message = p4runtime_pb2.StreamMessageResponse()
            message.idle_timeout_notification.table_entry.extend(mine)
            message.idle_timeout_notification.timestamp = now
            conn.send(message)
        return len(expired)


class Sweeper:
    """The background thread of ``softswitch run`` that calls :func:`sweep`."""

    def __init__(self, device: Device, period: float = SWEEP_SECONDS) -> None:
        self._device = device
        self._period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="idle-timeouts", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            sweep(self._device)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2)
