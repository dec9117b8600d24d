"""Real-time queueing for ``softswitch run``: the traffic manager on the wall clock.

Frames from the ports go through ingress at once; the packets ingress sends out wait in
the traffic manager's queues (``--priority-queues N``, 64 packets each, rates and depths
set over the runtime channel) and leave when the scheduler lets them, from the port
loop's thread when they may leave at once and from this module's thread when a rate
limit or link rate holds them. Everything touching the switch runs under the device's
lock. Packets a controller injects with PacketOut take the same path from the CPU port
(ingress, then the egress queues), as on BMv2.

PFC (a softswitch extension, thresholds set with the runtime channel's ``set_pfc``):
when the packets held from an ingress port and priority reach XOFF, an 802.1Qbb frame
pausing that priority (maximum quanta) goes out of that port, and one with quanta 0 when
they drain to XON. A PFC frame arriving on a port pauses that port's egress queue of
each priority it names for its quanta; the frame still goes through the P4 pipeline,
so a program can count it (tailcc does).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from softswitch.diagnostics import P4Error
from softswitch.tm import TrafficManager
from softswitch.tm.pfc import MAX_PAUSE_QUANTA, build_pfc_frame, parse_pfc_frame
from softswitch.v1model.queueing import QueuedSwitch

log = logging.getLogger("softswitch.tm")
IDLE_WAIT_S = 0.5
_MAC_CONTROL = b"\x88\x08"      # PFC frames are MAC control frames (pfc.parse_pfc_frame)


class EgressScheduler:
    """Feeds arriving frames through a :class:`QueuedSwitch` and drains it on time."""

    def __init__(self, device: Any, tm: TrafficManager,
                 port_mac: Callable[[int], bytes] = lambda port: bytes(6)) -> None:
        self.device = device
        self.tm = tm
        self.port_mac = port_mac
        self._origin = time.monotonic()
        tm.clock = self.now_us      # queues made by set_queue_rate start their interval now
        self._queued: Any = None       # QueuedSwitch, or a NIC's NicQueues
        self._wake = threading.Condition(device.lock)
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="egress-scheduler",
                                         daemon=True)
        device.ingress = self.deliver_batch       # PacketOut queues too

    def now_us(self) -> float:
        """Microseconds since the switch started (BMv2's timestamp origin)."""
        return (time.monotonic() - self._origin) * 1e6

    # --- port loop side ---------------------------------------------------------------
    def deliver(self, port: int, frame: bytes) -> None:
        """A frame arrived on a front-panel port."""
        self.deliver_batch(port, [frame])

    def deliver_batch(self, port: int, frames: list[bytes]) -> None:
        """Frames that arrived together on a front-panel port (the DataPlane's callback),
        under one hold of the device lock. Each frame leaves the queues before the next
        one goes through ingress, as if it had come alone (queue depths do not grow
        because frames were read in one call); a frame held by a rate, link rate or
        pause stays queued for the scheduler thread."""
        with self.device.lock:
            loaded = self.device.current
            if loaded is None:
                return
            queued = self._queued_for(loaded.switch)
            tm = self.tm
            outs: list[Any] = []      # passed straight through; dispatched in order
            for frame in frames:
                now = self.now_us()
                enqueues = tm.enqueues
                if frame[12:14] == _MAC_CONTROL:
                    self._apply_pause(port, frame, now)
                try:
                    queued.receive(port, frame, now, outs)
                except P4Error as exc:
                    log.warning("port %d: packet dropped: %s", port, exc.message)
                except Exception as exc:  # noqa: BLE001 - one bad frame must not stop ports
                    log.error("port %d: frame dropped, internal error: %s: %s", port,
                              type(exc).__name__, exc)
                # Only a packet that took a queue can make something leave now: what
                # waits for a rate or a pause is the scheduler thread's.
                if tm.enqueues != enqueues and tm.queued:
                    if outs:
                        self.device._dispatch(loaded, outs)
                        outs = []
                    self._transmit(loaded, now)
            if outs:
                self.device._dispatch(loaded, outs)
            # The scheduler thread only has work when something waits for later (a rate,
            # link rate or pause holds it); waking it for every frame hands the GIL back
            # and forth for nothing (veth l3_basic/tailcc: ~1.6x the frames per second).
            if tm.queued and self.tm.next_event_us(self.now_us()) is not None:
                self._wake.notify()

    def _queued_for(self, switch: Any) -> Any:
        """The queued view of the current pipeline; a new pipeline starts with empty
        queues (the old one's packets cannot run through the new program)."""
        if self._queued is None or self._queued.switch is not switch:
            self.tm.flush()
            # a PNA NIC brings its own view (per-class transmit queues, softswitch.pna.tm)
            view = getattr(switch, "queued_view", None)
            self._queued = view(self.tm) if view is not None else QueuedSwitch(switch, self.tm)
        return self._queued

    def _transmit(self, loaded: Any, now: float) -> None:
        assert self._queued is not None
        try:
            outs = self._queued.transmit_ready(now)
        except P4Error as exc:
            log.warning("egress: packet dropped: %s", exc.message)
            return
        if outs:
            self.device._dispatch(loaded, [packet for packet, _ in outs])
        self._send_pfc()

    # --- PFC ------------------------------------------------------------------------------
    def _apply_pause(self, port: int, frame: bytes, now: float) -> None:
        """A PFC frame from the neighbour on ``port`` pauses our queues towards it."""
        pause = parse_pfc_frame(frame)
        if not pause:
            return
        egress = self.tm.port(port)
        for priority, quanta in pause.items():
            if priority < self.tm.num_queues:
                egress.pause(priority, quanta, now)
                key = (port, priority)
                self.tm.pfc_received[key] = self.tm.pfc_received.get(key, 0) + 1

    def _send_pfc(self) -> None:
        """XOFF/XON frames for the thresholds crossed since the last call."""
        for ev in self.tm.pfc.take_events():
            quanta = MAX_PAUSE_QUANTA if ev.pause else 0
            self.device.transmit(ev.port, build_pfc_frame(self.port_mac(ev.port),
                                                          {ev.priority: quanta}))

    # --- scheduler thread ---------------------------------------------------------------
    def start(self) -> EgressScheduler:
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join(timeout=2)

    def _loop(self) -> None:
        with self._wake:
            while not self._stopping:
                loaded = self.device.current
                if loaded is not None and self._queued is not None \
                        and self._queued.switch is loaded.switch:
                    now = self.now_us()
                    try:
                        self._transmit(loaded, now)
                    except Exception as exc:  # noqa: BLE001 - the scheduler must keep running
                        log.error("egress scheduler: %s: %s", type(exc).__name__, exc)
                    nxt = self.tm.next_event_us(self.now_us())
                    wait = IDLE_WAIT_S if nxt is None else max(0.0, (nxt - self.now_us()) / 1e6)
                else:
                    wait = IDLE_WAIT_S
                self._wake.wait(timeout=min(wait, IDLE_WAIT_S))
