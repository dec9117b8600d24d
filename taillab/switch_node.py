"""A fabric switch of the lab: ``QueuedSwitch`` (tailcc.p4 on softswitch -> traffic
manager -> egress) with per-port link rates, per-queue depth, PFC thresholds per ingress
port and lossless priority. The traffic manager decides XOFF/XON; this module carries the
pause to the upstream neighbour after the link's propagation delay, and refreshes an XOFF
before its 65535 quanta run out while the priority is still congested.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from softswitch.daemon.cli_channel.commands import RuntimeChannel
from softswitch.tm import TrafficManager
from softswitch.v1model.native_queues import HopStep, NativeHop
from softswitch.v1model.queueing import QueuedSwitch
from softswitch.v1model.switch import Switch
from taillab.leafspine import (
    CNP_RECIRCULATION_PORT,
    CNP_SESSION,
)
from taillab.observations import packet_identity
from taillab.roce import (
    BTH_OPCODE_OFFSET,
    OPCODE_CNP,
    PAUSE_QUANTA,
)

if TYPE_CHECKING:
    from taillab.network import Network


class FabricSwitch:
    """tailcc.p4 on softswitch behind its traffic manager, wired into the network."""

    def __init__(self, net: Network, name: str, switch: Switch, commands: list[str]) -> None:
        self.net, self.name = net, name
        self.tm = TrafficManager(num_queues=8)
        channel = RuntimeChannel(switch, self.tm)
        for line in commands:
            ok, output = channel.execute(line)
            if not ok:
                raise ValueError(f"switch {name}: {line!r}: {output}")
        switch.mirroring_add(CNP_SESSION, CNP_RECIRCULATION_PORT)
        self.queued = QueuedSwitch(switch, self.tm)
        # the C packet path: the whole hop in C (the traffic manager only configured it)
        self.hop = NativeHop(switch, self.tm) if getattr(switch, "fastpath", None) == "c" \
            else None
        self._scheduled: float | None = None
        self._tick_token = 0
        self._forwarding_cnps: dict[tuple[bytes, bytes], int] = defaultdict(int)
        self.arrivals: dict[bytes, float] = {}   # packet identity -> arrival here
        self.received = 0

    def receive(self, port: int, data: bytes) -> None:
        self.received += 1
        if len(data) > BTH_OPCODE_OFFSET and data[BTH_OPCODE_OFFSET] == OPCODE_CNP:
            self._forwarding_cnps[data[30:34], data[46:50]] += 1
        elif len(data) > BTH_OPCODE_OFFSET + 12:
            self.arrivals[packet_identity(data)] = self.net.loop.now
        if self.hop is not None:
            now = self.net.loop.now
            self._after(self.hop.receive(port, data, now), now)
            return
        self.queued.receive(port, data, self.net.loop.now)
        self.service()

    def pause(self, port: int, priority: int, pause: bool) -> None:
        now = self.net.loop.now
        if self.hop is not None:
            self.hop.pause(port, priority, PAUSE_QUANTA if pause else 0, now)
        else:
            self.tm.port(port).pause(priority, PAUSE_QUANTA if pause else 0, now)
        key = (self.name, port, priority)
        if pause:
            self.net.obs.pfc.start(key, now)
        else:
            self.net.obs.pfc.end(key, now)
        self.service()

    def service(self) -> None:
        net = self.net
        now = net.loop.now
        if self.hop is not None:
            self._after(self.hop.service(now), now)
            return
        for out, done_us in self.queued.transmit_ready(now):
            net.on_switch_transmit(self, out.port, out.data, now, done_us)
        self._send_pfc(now)
        self._wake_at(self.tm.next_event_us(now))

    def _after(self, step: HopStep, now: float) -> None:
        """What :meth:`service` does after the traffic manager, for the C hop's step:
        the frames out, the PFC frames to send, the next wake-up."""
        outs, events, nxt = step
        net = self.net
        for port, data, done_us in outs:
            net.on_switch_transmit(self, port, data, now, done_us)
        if events is not None:
            for port, priority, pause in events:
                net.send_pfc(self.name, port, priority, pause)
                if pause:
                    self._schedule_refresh(port, priority)
        self._wake_at(nxt)

    def _wake_at(self, nxt: float | None) -> None:
        net = self.net
        if nxt is not None and (self._scheduled is None or nxt < self._scheduled):
            # one pending wake-up: a superseded one fires as a no-op (token), so an
            # earlier arrival does not start another polling chain
            self._scheduled = nxt
            self._tick_token += 1
            token = self._tick_token
            net.loop.at(nxt, lambda: self._tick(token))

    def _tick(self, token: int) -> None:
        if token == self._tick_token:
            self._scheduled = None
            self.service()

    def _send_pfc(self, now: float) -> None:
        if not self.tm.pfc.events:
            return
        for ev in self.tm.pfc.take_events():
            self.net.send_pfc(self.name, ev.port, ev.priority, ev.pause)
            if ev.pause:
                self._schedule_refresh(ev.port, ev.priority)

    def _schedule_refresh(self, port: int, priority: int) -> None:
        """Re-send XOFF at half the pause time while the priority stays congested."""
        rate = self.net.link_rate(self.name, port)
        half = PAUSE_QUANTA * 512 / rate * 1e6 / 2

        def refresh() -> None:
            if self.hop.paused(port, priority) if self.hop is not None \
                    else (port, priority) in self.tm.pfc.paused:
                self.net.send_pfc(self.name, port, priority, True)
                self._schedule_refresh(port, priority)
        self.net.loop.at(self.net.loop.now + half, refresh)

    def is_forwarded_cnp(self, data: bytes) -> bool:
        key = (data[30:34], data[46:50])
        if self._forwarding_cnps.get(key, 0) > 0:
            self._forwarding_cnps[key] -= 1
            return True
        return False

    def held_packets(self) -> int:
        if self.hop is not None:
            return self.hop.depth()
        return sum(ep.depth() for ep in self.tm.ports.values())

    def depth(self, port: int) -> int:
        """Packets queued for ``port``."""
        return self.hop.depth(port) if self.hop is not None else self.tm.depth(port)
