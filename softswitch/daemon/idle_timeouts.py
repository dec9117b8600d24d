"""Idle timeouts: IdleTimeoutNotification for entries nobody has hit for a while, as BMv2.

A table with ``support_timeout = true`` (P4Info ``NOTIFY_CONTROL``) lets controllers
give entries an ``idle_timeout_ns``. The switch reports idleness through its optional
``entry_idle_us(table, handle)`` (µs since the entry was last hit or, never hit,
inserted); without it no notification is produced. The entry stays: removing it is the
controller's call. The primaries whose role owns the table are told.

The timing is simple_switch_grpc's: a sweep every :data:`SWEEP_SECONDS` (BMv2's
``AgeingMonitor``) reports each entry idle for at least its timeout, except one the
previous sweep reported, so an entry that stays idle is reported every other sweep; the
notification leaves :data:`BUFFER_SECONDS` after its sweep (PI's ``IdleTimeoutBuffer``).
The first report thus comes between the timeout and the timeout plus one sweep period
after the last hit. A sweep visits only the entries that have a timeout
(``TableEntries.timed_records``), under the device lock.

:class:`Sweeper`, the thread of ``softswitch run``, also puts each pipeline that
becomes current on the wall clock for idle times (the switch's ``idle_in_real_time``):
its own clock stands still at each packet's arrival.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from softswitch.core.tables import idle_in_real_time
from softswitch.core.target import Target

if TYPE_CHECKING:
    from softswitch.daemon.device import Device, Loaded

SWEEP_SECONDS = 1.0      # BMv2's ageing sweep interval
BUFFER_SECONDS = 0.1     # PI's idle-timeout buffering before a notification leaves
WATCH_SECONDS = 0.02     # how often the Sweeper looks for a newly committed pipeline


@dataclass
class Expired:
    """What one sweep found: the entries to report, for the pipeline then current."""

    loaded: Loaded
    entries: list[p4runtime_pb2.TableEntry]


def find_expired(device: Device) -> Expired | None:
    """Sweep once (BMv2's rule: idle for the timeout, not reported by the previous sweep)."""
    with device.lock:
        loaded = device.current
        if loaded is None:
            return None
        idle_us = getattr(loaded.switch, "entry_idle_us", None)
        if idle_us is None:
            return None
        tables = loaded.runtime.tables
        expired: list[p4runtime_pb2.TableEntry] = []
        for tid, table in loaded.runtime.index.tables.items():
            if table.info.idle_timeout_behavior != p4info_pb2.Table.NOTIFY_CONTROL:
                continue
            name = table.info.preamble.name
            for record in tables.timed_records(tid):       # not every entry
                timeout = record.idle_timeout_ns
                report = (timeout > 0 and not record.idle_notified
                          and idle_us(name, record.handle) * 1000 >= timeout)
                if report:
                    expired.append(_reported(tables.canonical(table, record)))
                record.idle_notified = report       # "reported by the last sweep"
        return Expired(loaded, expired) if expired else None


def _reported(entry: p4runtime_pb2.TableEntry) -> p4runtime_pb2.TableEntry:
    """The fields PI puts in a notification's entry: no action, no metadata."""
    return p4runtime_pb2.TableEntry(table_id=entry.table_id, match=entry.match,
                                    priority=entry.priority,
                                    controller_metadata=entry.controller_metadata,
                                    idle_timeout_ns=entry.idle_timeout_ns)


def notify(device: Device, found: Expired) -> None:
    """Send what a sweep found to the primaries, if its pipeline is still current."""
    with device.lock:
        loaded = found.loaded
        if device.current is not loaded:
            return
        now = time.time_ns()
        for conn in device.arbiter.primaries():
            role = device.arbiter.role_of(conn)
            mine = [e for e in found.entries
                    if role is not None and device.notifies(role, loaded, e.table_id)]
            if not mine:
                continue
            message = p4runtime_pb2.StreamMessageResponse()
            message.idle_timeout_notification.table_entry.extend(mine)
            message.idle_timeout_notification.timestamp = now
            conn.send(message)


def sweep(device: Device) -> int:
    """One sweep, notified at once; returns how many entries were reported."""
    found = find_expired(device)
    if found is None:
        return 0
    notify(device, found)
    return len(found.entries)


def keep_real_time(switch: object) -> None:
    """Measure a switch's idle times on the wall clock (``idle_in_real_time``)."""
    method = getattr(switch, "idle_in_real_time", None)
    if method is not None:
        method()
    elif isinstance(switch, Target):
        idle_in_real_time(switch.pb.tables.values(), switch.clock._origin)


class Sweeper:
    """The background thread of ``softswitch run``: sweeps every ``period`` seconds and
    puts each pipeline that becomes current on the wall clock (:func:`keep_real_time`)."""

    def __init__(self, device: Device, period: float = SWEEP_SECONDS,
                 buffering: float = BUFFER_SECONDS) -> None:
        self._device = device
        self._period = period
        self._buffering = buffering
        self._timed: Loaded | None = None      # the pipeline last put on the wall clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="idle-timeouts", daemon=True)

    def start(self) -> None:
        self._watch()              # the pipeline given on the command line, before packets
        self._thread.start()

    def _watch(self) -> None:
        loaded = self._device.current
        if loaded is None or loaded is self._timed:
            return
        with self._device.lock:
            keep_real_time(loaded.switch)
        self._timed = loaded

    def _run(self) -> None:
        due = time.monotonic() + self._period
        while not self._stop.wait(min(WATCH_SECONDS, max(0.0, due - time.monotonic()))):
            self._watch()
            if time.monotonic() < due:
                continue
            due += self._period
            found = find_expired(self._device)
            if found is not None and not self._stop.wait(self._buffering):
                notify(self._device, found)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2)
