"""Real-time queueing for ``softswitch run``: the traffic manager on the wall clock.

Frames from the ports go through ingress at once; the packets ingress sends out wait in
the traffic manager's queues (``--priority-queues N``, 64 packets each, rates and depths
set over the runtime channel) and leave when the scheduler lets them. Everything
touching the switch runs under the device's lock. Packets a controller injects with
PacketOut take the same path from the CPU port (ingress, then the egress queues), as on
BMv2. Departures are timed by the port loop itself when it drives the scheduler
(:meth:`Forwarder.drive`): it waits on its sockets only until the next departure,
so departures and arrivals share one thread and never wait for each other's GIL turn or
lock. Without a port loop (tests feeding frames by hand), :meth:`Forwarder.start`
runs a thread that does the same.

PFC (a softswitch extension, thresholds set with the runtime channel's ``set_pfc``):
when the packets held from an ingress port and priority reach XOFF, an 802.1Qbb frame
pausing that priority (maximum quanta) goes out of that port, and one with quanta 0 when
they drain to XON. A PFC frame arriving pauses that port's egress queue of each priority
it names for its quanta; it still goes through the P4 pipeline, so a program can count it.

The native loop: when the pipeline runs on the C fast path (``FastSwitch``), a burst
goes through C (``fastpath/rt_loop.c``) in one call per run of frames the traffic manager
lets pass at once, and ports whose queues C can hold (``fastpath/rt_queues.c``) keep
their packets there. A frame needing anything else (a Python-held queue, a PFC frame,
the CPU port's PacketIn) is handed back and finished the Python way, so results and the
order per port are those of the Python way (``Forwarder(native=False)``).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from softswitch.core.control import PacketOut
from softswitch.diagnostics import P4Error
from softswitch.tm import TrafficManager
from softswitch.tm.pfc import MAX_PAUSE_QUANTA, build_pfc_frame, parse_pfc_frame
from softswitch.v1model.queueing import QueuedSwitch

if TYPE_CHECKING:
    from softswitch.daemon.device import Device

log = logging.getLogger("softswitch.tm")
_device_log = logging.getLogger("softswitch.device")
IDLE_WAIT_S = 0.5
_MAC_CONTROL = b"\x88\x08"      # PFC frames are MAC control frames (pfc.parse_pfc_frame)
# what the native loop's forward() says of where it stopped (fastpath/rt_loop.c)
_LOOP_DONE, _LOOP_FRAME, _LOOP_WORK, _LOOP_ERROR, _LOOP_DRAIN = 0, 1, 2, 3, 4


def _log_dropped(port: int, exc: BaseException) -> None:
    """A frame the pipeline failed on is dropped and logged; the ports go on."""
    if isinstance(exc, P4Error):
        log.warning("port %d: packet dropped: %s", port, exc.message)
    else:
        log.error("port %d: frame dropped, internal error: %s: %s", port,
                  type(exc).__name__, exc)


class Forwarder:
    """Feeds arriving frames through a :class:`QueuedSwitch` and drains it on time."""

    def __init__(self, device: Device, tm: TrafficManager,
                 port_mac: Callable[[int], bytes] = lambda port: bytes(6),
                 held_frames: Callable[[], dict[int, list[bytes]] | None] = lambda: None,
                 native: bool = True) -> None:
        """``held_frames``: the DataPlane's (its per-port lists of frames out during a
        burst), which lets bursts take the native loop when ``native`` and the pipeline
        is C; ``native=False`` keeps every frame on the Python way (the reference the
        native loop is tested against)."""
        self.device = device
        self.tm = tm
        self.port_mac = port_mac
        self.held_frames = held_frames
        self.native = native
        self._gate: bytearray | None = None   # the native loop's, during a burst
        self.native_frames = 0       # frames the native loop finished
        self.handed_back = 0         # frames it handed back to the Python way
        self._origin = time.monotonic()
        tm.clock = self.now_us      # queues made by set_queue_rate start their interval now
        self._queued: Any = None       # QueuedSwitch, or a NIC's NicQueues
        self._wake = threading.Condition(device.lock)
        self._stopping = False
        self._poke: Callable[[], None] | None = None   # the port loop's wake, when it drives
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
        pause stays queued until its departure (:meth:`tick`). On the C fast path, runs of frames
        the traffic manager lets pass go through the native loop in one call
        (:meth:`_forward`), with the same results."""
        with self.device.lock:
            loaded = self.device.current
            if loaded is None:
                return
            queued = self._queued_for(loaded.switch)
            sinks = self._native_sinks(queued)
            self._gate = None
            frames = frames if type(frames) is list else list(frames)
            outs: list[PacketOut] = []  # passed straight through; dispatched in order
            emitted = at = 0
            while at < len(frames):
                if sinks is not None:
                    at, whole, count = self._forward(loaded, queued, port, frames, at, sinks,
                                                     outs)
                    emitted += count
                    if not whole:
                        continue
                self._receive(loaded, queued, port, frames[at], outs)
                self._gate = None     # a PFC frame may have paused a queue
                at += 1
            if outs or emitted:
                self.device.dispatch(loaded, outs)
            # The timer only has work when something waits for later (a rate,
            # link rate or pause holds it); waking it for every frame hands the GIL back
            # and forth for nothing.
            if self.tm.holding() and self.tm.next_event_us(self.now_us()) is not None:
                if self._poke is not None:
                    self._poke()
                else:
                    self._wake.notify()

    def _receive(self, loaded: Any, queued: Any, port: int, frame: bytes,
                 outs: list[PacketOut]) -> None:
        """One frame, the Python way."""
        now = self.now_us()
        enqueues = self.tm.enqueues
        if frame[12:14] == _MAC_CONTROL:
            self._apply_pause(port, frame, now)
        try:
            queued.receive(port, frame, now, outs)
        except Exception as exc:  # noqa: BLE001 - one bad frame must not stop ports
            _log_dropped(port, exc)
        self._after_frame(loaded, enqueues, now, outs)

    def _after_frame(self, loaded: Any, enqueues: int, now: float,
                     outs: list[PacketOut]) -> None:
        # Only a packet that took a queue can make something leave now: what waits for
        # a rate or a pause leaves at its departure (tick).
        if self.tm.enqueues != enqueues and self.tm.holding():
            if outs:
                self.device.dispatch(loaded, outs)
                outs.clear()
            self._transmit(loaded, now)

    # --- the native loop ------------------------------------------------------------------
    def _native_sinks(self, queued: Any) -> dict[int, list[bytes]] | None:
        """The lists the native loop appends frames out to (one per front-panel port but
        the CPU and drop ports), or None when this burst takes the Python way: the loop
        is off, the pipeline is not on the C fast path, the caller is not the port loop
        (PacketOut), or the device logs each frame (debug)."""
        if not self.native or type(queued) is not QueuedSwitch \
                or not hasattr(queued.switch, "forward"):
            return None
        held = self.held_frames()
        if held is None or _device_log.isEnabledFor(logging.DEBUG):
            return None
        skip = (self.device.cpu_port, self.device.drop_port)
        return {number: frames for number, frames in held.items() if number not in skip}

    def _forward(self, loaded: Any, queued: Any, port: int, frames: list[bytes], start: int,
                 sinks: dict[int, list[bytes]],
                 outs: list[PacketOut]) -> tuple[int, bool, int]:
        """Run ``frames[start:]`` through the native loop (``fastpath/rt_loop.c``) until
        it is done or hands a frame back, and finish a handed-back frame here. Returns
        (next frame, whether that frame must go the Python way whole, frames out)."""
        if outs:        # frames out so far go before the ones the loop holds next
            self.device.dispatch(loaded, outs)
            outs.clear()
        tm = self.tm
        switch = queued.switch
        now = self.now_us()
        self._gate = tm.pass_through_gate(port, now, self._gate)
        quiet = tm.next_event_us(now)
        nxt, kind, now, rest, passes, others, passed, emitted = switch.forward(
            port, frames, start, self._gate, sinks, self._origin,
            math.inf if quiet is None else quiet, tm.native)
        self.native_frames += nxt - start
        if passed:
            queued.dropped_at_enqueue += tm.count_passed(passed)
        if tm.native_ports:
            queued.dropped_at_enqueue += tm.sync_native()
        if others:
            outs.extend(PacketOut(p, data) for p, data in others)
        if kind == _LOOP_DONE:
            return nxt, False, emitted
        if kind == _LOOP_DRAIN:    # frame nxt is done; its drain left work for Python
            self.native_frames += 1
            try:
                queued.finish_native(rest, now, outs)
            except Exception as exc:  # noqa: BLE001 - one bad frame must not stop ports
                _log_dropped(port, exc)
            queued.dropped_at_enqueue += tm.sync_native()
            return nxt + 1, False, emitted
        self.handed_back += 1
        if kind == _LOOP_FRAME:
            return nxt, True, emitted
        if kind == _LOOP_WORK:
            enqueues = tm.enqueues
            try:
                queued.resume(switch.work_of(rest), now, outs, passes)
            except Exception as exc:  # noqa: BLE001 - one bad frame must not stop ports
                _log_dropped(port, exc)
            self._after_frame(loaded, enqueues, now, outs)
        else:
            _log_dropped(port, rest)
        return nxt + 1, False, emitted

    def _queued_for(self, switch: Any) -> Any:
        """The queued view of the current pipeline; a new pipeline starts with empty
        queues (the old one's packets cannot run through the new program)."""
        if self._queued is None or self._queued.switch is not switch:
            self.tm.flush()
            # a PNA NIC brings its own view (per-class transmit queues, softswitch.pna.tm)
            view = getattr(switch, "queued_view", None)
            self._queued = view(self.tm) if view is not None else QueuedSwitch(switch, self.tm)
            # native egress queues: v1model on the C fast path, unless native=False
            native = self.native and type(self._queued) is QueuedSwitch \
                and hasattr(switch, "native_queues")
            self.tm.attach_native(switch.native_queues(self.tm.num_queues) if native else None)
        return self._queued

    def _transmit(self, loaded: Any, now: float) -> None:
        assert self._queued is not None
        sent: list[PacketOut] = []
        try:
            sent.extend(packet for packet, _ in self._queued.transmit_ready(now))
            if self.tm.native is not None and type(self._queued) is QueuedSwitch:
                self._queued.transmit_native(now, sent)
        except P4Error as exc:
            log.warning("egress: packet dropped: %s", exc.message)
        finally:
            if self.tm.native_ports:
                self._queued.dropped_at_enqueue += self.tm.sync_native()
        if sent:
            self.device.dispatch(loaded, sent)
        self._send_pfc()

    # --- PFC ------------------------------------------------------------------------------
    def _apply_pause(self, port: int, frame: bytes, now: float) -> None:
        """A PFC frame from the neighbour on ``port`` pauses our queues towards it."""
        pause = parse_pfc_frame(frame)
        if not pause:
            return
        for priority, quanta in pause.items():
            if priority < self.tm.num_queues:
                self.tm.pause(port, priority, quanta, now)
                key = (port, priority)
                self.tm.pfc_received[key] = self.tm.pfc_received.get(key, 0) + 1

    def _send_pfc(self) -> None:
        """XOFF/XON frames for the thresholds crossed since the last call."""
        for ev in self.tm.pfc.take_events():
            quanta = MAX_PAUSE_QUANTA if ev.pause else 0
            self.device.transmit(ev.port, build_pfc_frame(self.port_mac(ev.port),
                                                          {ev.priority: quanta}))

    # --- timed by the port loop -------------------------------------------------------------
    def drive(self, wake: Callable[[], None]) -> Forwarder:
        """Let the port loop keep the departures' time (it calls :meth:`wait_s` and
        :meth:`tick`; ``wake`` makes it look again when another thread queued
        something) instead of a thread of this scheduler's own."""
        self._poke = wake
        return self

    def wait_s(self) -> float | None:
        """Seconds until the next departure (<= 0: due), None when nothing waits. Under
        the device lock: a PacketOut may be queueing on a gRPC thread meanwhile."""
        with self.device.lock:
            if self._queued is None or not self.tm.holding():
                return None
            now = self.now_us()
            nxt = self.tm.next_event_us(now)
        return None if nxt is None else (nxt - now) / 1e6

    def tick(self) -> None:
        """Send what may leave now, under the device lock."""
        with self.device.lock:
            loaded = self.device.current
            if loaded is not None and self._queued is not None \
                    and self._queued.switch is loaded.switch:
                self._transmit(loaded, self.now_us())

    # --- scheduler thread ---------------------------------------------------------------
    def start(self) -> Forwarder:
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify()
        if self._thread.is_alive():
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
