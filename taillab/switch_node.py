"""A fabric switch of the lab: tailcc.p4 on softswitch -> traffic manager -> egress, with
per-port link rates, per-queue depth, PFC thresholds per ingress port and lossless
priority. On the C packet path the whole hop is C (``NativeHop``; in a network of such
switches the fabric runs their events, taillab.network); on the interpreter it is
``QueuedSwitch`` with softswitch's traffic manager; both make the same decisions. The
traffic manager decides XOFF/XON; this module carries the pause to the upstream
neighbour after the link's propagation delay, and refreshes an XOFF before its 65535
quanta run out while the priority is still congested.
"""

from __future__ import annotations

from collections import defaultdict
from functools import partial
from typing import TYPE_CHECKING, Any

from softswitch.daemon.cli_channel.commands import RuntimeChannel
from softswitch.tm import TrafficManager
from softswitch.v1model.native_queues import NativeHop
from softswitch.v1model.queueing import QueuedSwitch
from softswitch.v1model.switch import Switch
from taillab.leafspine import (
    CNP_RECIRCULATION_PORT,
    CNP_SESSION,
)
from taillab.observations import IP_PAIR, QP_PSN
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
        self.forwarding_cnps: dict[tuple[bytes, bytes], int] = defaultdict(int)
        self.arrivals: dict[bytes, float] = {}   # packet identity -> arrival here
        self._received = 0
        self.loop = net.loop
        # in a native fabric (Network: every switch a C hop), C runs this switch's
        # arrivals and wake-ups (fab_receive, fab_tick): (functions, fabric, index)
        self._fabric: tuple[dict[str, Any], Any, int] | None = None

    def attach_fabric(self, functions: dict[str, Any], fabric: Any, index: int) -> None:
        """From now on the native fabric ``fabric`` (switch ``index`` of it) runs this
        switch's events; :meth:`receive` is no longer called, :meth:`service` asks C."""
        self._fabric = (functions, fabric, index)

    @property
    def received(self) -> int:
        """Packets this switch received."""
        if self._fabric is not None:
            fns, fabric, index = self._fabric
            return int(fns["fab_received"](fabric, index)) + self._received
        return self._received

    def receive(self, port: int, data: bytes) -> None:
        self._received += 1
        now = self.loop.now
        if len(data) > BTH_OPCODE_OFFSET and data[BTH_OPCODE_OFFSET] == OPCODE_CNP:
            self.forwarding_cnps[data[30:34], data[46:50]] += 1
        elif len(data) > BTH_OPCODE_OFFSET + 12:
            self.arrivals[data[IP_PAIR] + data[QP_PSN]] = now   # packet_identity
        hop = self.hop
        if hop is None:
            self.queued.receive(port, data, now)
            self.service()
            return
        outs, events, nxt = hop.receive_fn(hop.ctx, hop.capsule, port, data, now)
        if outs:
            self.net.switch_sent(self, outs, now)
        if events is not None:
            self.send_pfc_frames(events)
        if nxt is not None and (self._scheduled is None or nxt < self._scheduled):
            self._scheduled = nxt                    # _wake_at, inline
            self._tick_token += 1
            self.loop.at(nxt, partial(self._tick, self._tick_token))

    def pause(self, port: int, priority: int, pause: bool) -> None:
        now = self.loop.now
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
        """Every packet whose turn has come leaves; the PFC frames the traffic manager
        decided go out; the next wake-up is set."""
        if self._fabric is not None:
            fns, fabric, index = self._fabric
            fns["fab_service"](fabric, index)
            return
        now = self.loop.now
        hop = self.hop
        if hop is None:
            outs = [(out.port, out.data, done_us)
                    for out, done_us in self.queued.transmit_ready(now)]
            pfc = self.tm.pfc
            events = [(ev.port, ev.priority, ev.pause) for ev in pfc.take_events()] \
                if pfc.events else None
            nxt = self.tm.next_event_us(now)
        else:
            outs, events, nxt = hop.service_fn(hop.ctx, hop.capsule, now)
        if outs:
            self.net.switch_sent(self, outs, now)
        if events is not None:
            self.send_pfc_frames(events)
        if nxt is not None and (self._scheduled is None or nxt < self._scheduled):
            self._wake_at(nxt)

    def _wake_at(self, nxt: float) -> None:
        # one pending wake-up: a superseded one fires as a no-op (token), so an earlier
        # arrival does not start another polling chain
        self._scheduled = nxt
        self._tick_token += 1
        self.loop.at(nxt, partial(self._tick, self._tick_token))

    def _tick(self, token: int) -> None:
        if token == self._tick_token:
            self._scheduled = None
            self.service()

    def send_pfc_frames(self, events: list[tuple[int, int, bool]]) -> None:
        """XOFF/XON frames to the upstream neighbours: (ingress port, priority, pause?)."""
        for port, priority, pause in events:
            self.net.send_pfc(self.name, port, priority, pause)
            if pause:
                self._schedule_refresh(port, priority)

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
        if self.forwarding_cnps.get(key, 0) > 0:
            self.forwarding_cnps[key] -= 1
            return True
        return False

    def held_packets(self) -> int:
        if self.hop is not None:
            return self.hop.depth()
        return sum(ep.depth() for ep in self.tm.ports.values())

    def depth(self, port: int) -> int:
        """Packets queued for ``port``."""
        return self.hop.depth(port) if self.hop is not None else self.tm.depth(port)
