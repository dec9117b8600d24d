"""The port loop of ``softswitch run``: frames in from every port, frames out.

One thread waits on all port sockets and, per wake-up, reads every frame ready on a
port in one call and hands the burst to ``deliver`` (the egress scheduler, which runs
it through the switch under the device's lock); frames leaving the switch come back
through :meth:`DataPlane.transmit`. Frames the port loop's own thread transmits while
it handles a burst are held and sent in one call per port when the burst is done, after
the device lock is released, so no lock is held across socket I/O and a burst costs
one system call each way (``batchio``). Frames other threads transmit (PacketOut) go
out at once. Traces are written as BMv2's ``--pcap`` does, by a writer thread
(``pcap``). A wake-up pipe lets :meth:`stop` end the loop, and other threads make it
look at its timer again (:meth:`wake`).

The loop can also keep the egress scheduler's time (a :class:`Ticker`): it waits on the
sockets only until the next departure, and sends what is due after each burst, on the
same thread. A second thread for departures would take the GIL and the device lock away
from the port loop at each departure, and every frame behind it would wait. For the same
reason other threads' changes (the runtime channel's commands) are handed to the loop
(``calls``, :mod:`~softswitch.daemon.ports.loop_calls`), which runs one per turn.
"""

from __future__ import annotations

import logging
import os
import selectors
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from softswitch.daemon.ports import batchio
from softswitch.daemon.ports.afpacket import RawPort
from softswitch.daemon.ports.ingress_priority import IngressPriority
from softswitch.daemon.ports.loop_calls import LoopCalls
from softswitch.daemon.ports.pcap import PcapWriter, trace_paths

log = logging.getLogger("softswitch.daemon.ports")
Deliver = Callable[[int, bytes], None]
DeliverBatch = Callable[[int, list[bytes]], None]


class FrameSink(Protocol):
    """Where the layers above hand the frames that leave on a port (the port loop's
    :meth:`DataPlane.transmit`; a list or a test's collector elsewhere)."""

    def __call__(self, port: int, frame: bytes) -> None:
        """Send ``frame`` out of ``port``."""


class Checkpoints(Protocol):
    """The port loop's turns as the layers above see them (:class:`LoopCalls`): where a
    long piece of work may let urgent frames through."""

    def checkpoint(self) -> None:
        """Forward the urgent frames waiting now, if the loop runs this work."""

    def checkpointing(self) -> bool:
        """Whether :meth:`checkpoint` acts here (the port loop runs this work)."""


class PortLoop(Protocol):
    """What a server whose connections the port loop reads takes of it (the runtime
    CLI channel's, the gRPC process's link): :class:`DataPlane` is one."""

    calls: LoopCalls

    def watch(self, fd: int, ready: Callable[[], None], lost: Callable[[], None]) -> bool:
        """Have the loop call ``ready`` when ``fd`` can be read, ``lost`` if it cannot
        watch it any longer; False if this loop cannot watch sockets."""

    def unwatch(self, fd: int) -> None:
        """Stop watching ``fd``."""


class Ticker(Protocol):
    """What the port loop asks of the forwarder when it keeps its time."""

    def wait_s(self) -> float | None:
        """Seconds until something queued may leave (<= 0: now), None if nothing waits."""

    def tick(self) -> None:
        """Send what may leave now (from the port loop's thread: frames are held and
        flushed as a burst's are)."""


# the loop looks at its timer at least this often: a rate changed from another thread
# may bring a departure forward
IDLE_WAIT_S = 0.5
# with ingress priority, frames of the other socket read per burst: a short burst of
# work, what an urgent frame arriving meanwhile waits at most before it is read
REST_BATCH = 32
# frames through the pipeline between two sends: the first frame of a full read
# (batchio.MAX_BATCH) would wait for the pipeline and the kernel to finish all of it; a
# slice costs one more Python call and system call each
SEND_EVERY = 64
# each port's receive ring (afpacket.RawPort). The urgent socket (ingress priority)
# takes only the urgent class, and as much: a loop the host stops for a few
# milliseconds must delay urgent frames, not drop them.
RING_BYTES = 8 << 20
URGENT_RING_BYTES = 8 << 20


@dataclass
class Port:
    number: int
    raw: RawPort
    pcap_in: PcapWriter | None = None
    pcap_out: PcapWriter | None = None
    pending: list[bytes] = field(default_factory=list)   # held during a burst
    urgent: RawPort | None = None        # its frames read first (ingress_priority)


@dataclass(frozen=True)
class PortStatus:
    """One port as ``show_ports`` gives it."""

    number: int
    iface: str
    up: bool                        # the interface's operational state
    kernel_drops: int               # frames the kernel dropped: its receive ring was full
    urgent_kernel_drops: int | None  # the same for the urgent socket (ingress priority)


class DataPlane:
    """All front-panel ports of one switch."""

    def __init__(self, interfaces: dict[int, str], pcap_dir: str | None = None,
                 priority: IngressPriority | None = None, busy_poll_s: float = 0.0) -> None:
        """``priority``: which frames each port reads first (``ingress_priority``).
        ``busy_poll_s``: how long the loop polls its sockets before it sleeps
        (``softswitch run --busy-poll-us``)."""
        self.ports: dict[int, Port] = {}
        self.busy_poll_s = busy_poll_s
        self._wake_r, self._wake_w = os.pipe()
        self._stopping = False
        self.received = 0
        self.sent = 0
        self.bursts = 0                         # wake-ups that read frames
        self._loop_thread: int | None = None   # set while the loop handles a burst
        self._runner: int | None = None         # the thread in run_batches
        self._held: dict[int, list[bytes]] = {}  # port number -> its pending list
        self.calls = LoopCalls()                # other threads' changes, run between bursts
        # (batchio, urgent ports, their sockets, deliver) while the ppoll loop runs
        self._serving_urgent: tuple[Any, list[Port], list[int], DeliverBatch] | None = None
        # Other sockets the loop reads for their owners (watch): fd -> (ready, lost)
        self._watched: dict[int, tuple[Callable[[], None], Callable[[], None]]] = {}
        self._watch_version = 0
        self._watching = False                  # the ppoll loop runs and takes watches
        try:
            for number, iface in interfaces.items():
                port = Port(number, RawPort(iface, priority.program(urgent=False)
                                            if priority else None, RING_BYTES))
                self.ports[number] = port               # closed by close() if what follows fails
                if priority:
                    port.urgent = RawPort(iface, priority.program(urgent=True),
                                          URGENT_RING_BYTES)
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

    def run_batches(self, deliver: DeliverBatch, ticker: Ticker | None = None) -> None:
        """Feed each port's ready frames, as one list per wake-up, to ``deliver`` until
        :meth:`stop`; with a ``ticker``, also send what it holds when it is due."""
        self._runner = threading.get_ident()
        self.calls.open(self.wake)
        try:
            mod = batchio.native()
            if mod is not None:
                self._run_ppoll(mod, deliver, ticker)
            else:
                if self.busy_poll_s:
                    log.warning("the port loop cannot poll its ports (--busy-poll-us) "
                                "without batchio: it sleeps between frames")
                self._run_selector(deliver, ticker)
        finally:
            self._watching = False
            self._lose_watches()
            self.calls.close()
            self._serving_urgent = None
            self._runner = None

    def _run_ppoll(self, mod: Any, deliver: DeliverBatch, ticker: Ticker | None) -> None:
        """The loop on ``batchio.wait_ready`` (ppoll: departures timed to the µs)."""
        ports = list(self.ports.values())
        urgent = [port for port in ports if port.urgent is not None]
        fds = [port.urgent.fileno() for port in urgent if port.urgent is not None] \
            + [port.raw.fileno() for port in ports] + [self._wake_r]
        first, wake = len(urgent), len(urgent) + len(ports)
        if urgent:
            self._serving_urgent = (mod, urgent, fds[:first], deliver)
            self.calls.open(self.wake, self._forward_urgent)
        self._watching = True
        version, watched, polled = -1, [], fds
        while not self._stopping:
            if version != self._watch_version:
                version, watched = self._watch_version, list(self._watched)
                polled = fds + watched
            timeout = -1.0 if ticker is None else self._timeout(ticker)
            for index in mod.wait_ready(polled, 0.0 if self.calls.pending() else timeout,
                                        self.busy_poll_s):
                if index < first:                          # urgent sockets come first
                    self._drain_urgent(urgent[index], deliver)
                elif index < wake:
                    self._drain_rest(ports[index - first], urgent, deliver)
                elif index == wake:
                    os.read(self._wake_r, 64)
                else:
                    self._watched_ready(watched[index - wake - 1])
            self.calls.run_one()

    # ------------------------------------------------------------------ other sockets
    def watch(self, fd: int, ready: Callable[[], None], lost: Callable[[], None]) -> bool:
        """On the loop's thread (in a call): call ``ready()`` there each turn ``fd`` is
        readable, until :meth:`unwatch`; ``lost()`` if the loop ends first. False (and
        nothing watched) when the loop is not running or this is not its thread. The
        runtime channel's connections are read so (``softswitch.daemon.cli_channel.connection``):
        no other thread then takes the GIL per command."""
        if not self._watching or threading.get_ident() != self._runner:
            return False
        self._watched[fd] = (ready, lost)
        self._watch_version += 1
        return True

    def unwatch(self, fd: int) -> None:
        """Stop reading ``fd`` for its owner (on the loop's thread)."""
        if self._watched.pop(fd, None) is not None:
            self._watch_version += 1

    def _watched_ready(self, fd: int) -> None:
        watcher = self._watched.get(fd)
        if watcher is None:                 # unwatched earlier in this turn
            return
        try:
            watcher[0]()
        except Exception as exc:  # noqa: BLE001 - the ports must keep running
            log.error("socket %d: reading it failed: %s: %s", fd, type(exc).__name__, exc)
            self.unwatch(fd)
            watcher[1]()

    def _lose_watches(self) -> None:
        watched, self._watched = self._watched, {}
        self._watch_version += 1
        for _, lost in watched.values():
            try:
                lost()
            except Exception as exc:  # noqa: BLE001 - every owner is told
                log.error("socket watcher failed: %s: %s", type(exc).__name__, exc)

    def _forward_urgent(self) -> None:
        """The urgent frames waiting now, forwarded (a call's checkpoint: see
        :meth:`LoopCalls.checkpoint`); one poll of the urgent sockets when none wait."""
        serving = self._serving_urgent
        if serving is None:
            return
        mod, urgent, fds, deliver = serving
        for index in mod.wait_ready(fds, 0.0):
            self._drain_urgent(urgent[index], deliver)

    def _run_selector(self, deliver: DeliverBatch, ticker: Ticker | None) -> None:
        """The same loop on ``select`` where batchio cannot be built: not epoll, which
        counts in milliseconds, where a link rate's frames are microseconds apart."""
        urgent = [port for port in self.ports.values() if port.urgent is not None]
        with selectors.SelectSelector() as sel:
            for port in urgent:
                sel.register(port.urgent, selectors.EVENT_READ, (True, port))
            for port in self.ports.values():
                sel.register(port.raw, selectors.EVENT_READ, (False, port))
            sel.register(self._wake_r, selectors.EVENT_READ, None)
            self._watching = True
            version, registered = -1, set[int]()
            while not self._stopping:
                if version != self._watch_version:    # watched sockets: data is the fd
                    version, watched = self._watch_version, set(self._watched)
                    for fd in registered - watched:
                        sel.unregister(fd)
                    for fd in watched - registered:
                        sel.register(fd, selectors.EVENT_READ, fd)
                    registered = watched
                timeout = None if ticker is None else self._timeout(ticker)
                ready = [key.data for key, _ in
                         sel.select(0.0 if self.calls.pending() else timeout)]
                if None in ready:
                    os.read(self._wake_r, 64)
                for is_urgent, port in sorted((d for d in ready if type(d) is tuple),
                                              key=lambda d: not d[0]):
                    if is_urgent:
                        self._drain_urgent(port, deliver)
                    else:
                        self._drain_rest(port, urgent, deliver)
                for fd in ready:
                    if type(fd) is int:
                        self._watched_ready(fd)
                self.calls.run_one()

    def _drain_urgent(self, port: Port, deliver: DeliverBatch) -> None:
        assert port.urgent is not None
        self._drain(port, port.urgent.receive_batch(), deliver)

    def _drain_rest(self, port: Port, urgent: list[Port], deliver: DeliverBatch) -> None:
        """One burst of a port's other frames; with ingress priority a smaller one, and
        the urgent sockets read again after it, so urgent frames wait for one short
        burst at most."""
        if not urgent:
            self._drain(port, port.raw.receive_batch(), deliver)
            return
        self._drain(port, port.raw.receive_batch(REST_BATCH), deliver)
        for other in urgent:
            self._drain_urgent(other, deliver)

    def _timeout(self, ticker: Ticker) -> float:
        """Send what is due, then how long the sockets may be waited on."""
        wait = ticker.wait_s()
        if wait is not None and wait <= 0:
            self._holding_sends(ticker.tick, "egress scheduler")
            wait = ticker.wait_s()
        if wait is None:
            return IDLE_WAIT_S
        return min(max(wait, 0.0), IDLE_WAIT_S)

    def wake(self) -> None:
        """Make the loop look at its timer now (something queued from another thread may
        leave sooner than it planned); nothing to do on the loop's own thread."""
        if self._runner is not None and threading.get_ident() != self._runner:
            try:
                os.write(self._wake_w, b"t")
            except OSError:
                pass

    def _drain(self, port: Port, frames: list[bytes], deliver: DeliverBatch) -> None:
        """Hand a burst read from ``port`` (bounded: one busy port cannot starve the
        others) to ``deliver`` in slices of ``SEND_EVERY`` frames, sending what each
        slice held before the next one runs: a frame waits for the rest of its slice,
        not of the whole burst, before it leaves."""
        if not frames:
            return
        self.received += len(frames)
        self.bursts += 1
        if port.pcap_in is not None:
            for frame in frames:
                port.pcap_in.write(frame)
        for at in range(0, len(frames), SEND_EVERY):
            part = frames if len(frames) <= SEND_EVERY else frames[at:at + SEND_EVERY]
            self._holding_sends(lambda part=part: deliver(port.number, part),
                                f"port {port.number}: frames dropped")

    def _holding_sends(self, work: Callable[[], None], what: str) -> None:
        """Run ``work`` as the port loop, holding what it transmits, then send it in one
        call per port; an exception is logged (``what`` says what was lost), and the
        ports go on."""
        self._loop_thread = threading.get_ident()
        try:
            work()
        except Exception as exc:  # noqa: BLE001 - the ports must keep running
            log.error("%s, internal error: %s: %s", what, type(exc).__name__, exc)
        finally:
            self._loop_thread = None
            self._flush()

    def stop(self) -> None:
        self._stopping = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    def truncated(self) -> int:
        """Frames the receive rings dropped for not fitting a slot, when the kernel
        could not queue their full copy either (its socket buffer was full)."""
        return sum(sock.truncated for port in self.ports.values()
                   for sock in (port.raw, port.urgent) if sock is not None)

    def port_status(self) -> list[PortStatus]:
        """Every port, by number: its interface, state and kernel drops."""
        return [PortStatus(port.number, port.raw.iface, _operstate_up(port.raw.iface),
                           port.raw.kernel_drops(),
                           port.urgent.kernel_drops() if port.urgent is not None else None)
                for _, port in sorted(self.ports.items())]

    def close(self) -> None:
        for port in self.ports.values():
            port.raw.close()
            if port.urgent is not None:
                port.urgent.close()
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


def _operstate_up(iface: str) -> bool:
    """Whether the interface can carry frames (``unknown``: drivers that do not say,
    such as tun devices, are taken as up, as ``ip link`` shows them)."""
    try:
        with open(f"/sys/class/net/{iface}/operstate") as state:
            return state.read().strip() in ("up", "unknown")
    except OSError:
        return False
