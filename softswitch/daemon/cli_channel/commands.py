"""The runtime control channel: what P4Runtime cannot do, in ``simple_switch_CLI`` words.

BMv2 exposes queue rates/depths, mirroring and table commands over Thrift to
``simple_switch_CLI``. softswitch serves the same command language (the one module
:mod:`softswitch.stf.commands` shared with the STF runner) over a small line protocol on
TCP (``softswitch run … --thrift-port P``), and ``softswitch cli --port P`` is the client:
commands from ``-c``, a file or standard input, like ``simple_switch_CLI < cmds.txt``.
The same port serves BMv2's Thrift API to BMv2's own CLI (:mod:`softswitch.daemon.thrift`):
a client whose first byte is Thrift's gets that instead.

The traffic-manager commands it adds are listed on :class:`RuntimeChannel`. Wire format
(:mod:`softswitch.daemon.cli_channel.framing`): one JSON object per line each way —
``{"cmd": "..."}`` → ``{"ok": true|false, "output": "..."}``.

Security (``softswitch run``): the channel listens on 127.0.0.1 unless
``--runtime-bind`` says otherwise, and/or on a Unix socket (``--runtime-socket PATH``,
mode 0600). With ``--runtime-token-file FILE`` a connection's first message must be
``{"token": "<the file's contents>"}`` (answered ``{"ok": true}``), or the connection
is closed; ``softswitch cli --token-file FILE`` sends it. On a P4Runtime switch the
channel changes tables only through P4Runtime's own state (see
:mod:`softswitch.daemon.cli_channel.control`).
"""

from __future__ import annotations

import hmac
import json
import os
import queue
import socket
import socketserver
import sys
import threading
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from softswitch.core.control import SwitchControl
from softswitch.daemon.cli_channel.framing import (
    IDLE_SECONDS,
    NOT_A_COMMAND,
    TOO_LONG,
    command_of,
    encode_replies,
    take_lines,
)
from softswitch.daemon.ports.dataplane import PortLoop
from softswitch.diagnostics import P4Error
from softswitch.stf.commands import parse_command
from softswitch.stf.session import CommandSession
from softswitch.tm import PfcThresholds, TrafficManager

if TYPE_CHECKING:
    from softswitch.daemon.ports.dataplane import PortStatus

T = TypeVar("T")


def _ints(words: list[str], usage: str, least: int, most: int) -> list[int]:
    if not least <= len(words) <= most:
        raise P4Error(f"usage: {usage}")
    try:
        return [int(w, 0) for w in words]
    except ValueError:
        raise P4Error(f"usage: {usage} (numbers expected, got {' '.join(words)!r})") from None


class RuntimeChannel:
    """Executes one command line against a switch and its traffic manager.

    Traffic-manager commands handled here (BMv2 syntax, then softswitch extensions):
    ``set_queue_rate PPS [PORT [PRIORITY]]``, ``set_queue_depth PACKETS [PORT [PRIORITY]]``,
    ``set_queue_weight WEIGHT PORT [PRIORITY]`` (DWRR), ``set_link_rate BITS_PER_S PORT``,
    ``set_pfc INGRESS_PORT PRIORITY XOFF XON`` / ``clear_pfc INGRESS_PORT PRIORITY``,
    ``show_queues PORT``, ``show_pfc``; and ``show_ports`` (BMv2's table; its ``extra info``
    gives the frames the kernel dropped on each port because the port loop fell behind and
    its receive ring filled, ``kernel_drops``, and ``urgent_kernel_drops`` for the urgent
    class's own socket with ``--ingress-priority-dscp``).
    """

    def __init__(self, control: SwitchControl | Callable[[], SwitchControl | None],
                 tm: TrafficManager | None, lock: Any = None,
                 run_each: Callable[[list[Callable[[], Any]]], list[Any]] | None = None,
                 checkpoint: Callable[[], None] | None = None,
                 ports: Callable[[], list[PortStatus]] | None = None) -> None:
        """``run_each(fns)``: where commands run, returning each ``fn()`` in order.
        ``softswitch run`` gives the port loop's
        (:meth:`softswitch.daemon.ports.loop_calls.LoopCalls.call_each`): the loop takes the
        commands one at a time between bursts, so a stream of them never keeps the GIL
        from it. Default: the calling thread. ``checkpoint()``: called once a table
        command is parsed, before it runs (the loop's
        :meth:`~softswitch.daemon.ports.loop_calls.LoopCalls.checkpoint`). ``ports()``: the
        switch's ports for ``show_ports`` (:meth:`DataPlane.port_status`)."""
        # A callable gives the switch of the moment: a running switch may be handed a new
        # pipeline over P4Runtime, and commands must go to the one that is loaded now.
        self._control_of = control if callable(control) else (lambda: control)
        self._session: CommandSession | None = None
        self.tm = tm
        self._ports = ports
        self.lock = lock if lock is not None else nullcontext()
        self._run_each = run_each if run_each is not None else (
            lambda fns: [fn() for fn in fns])
        self._checkpoint = checkpoint if checkpoint is not None else (lambda: None)
        self._own_commands: dict[str, Callable[[list[str]], str]] = {
            "set_queue_rate": self._set_queue_rate,
            "set_queue_depth": self._set_queue_depth,
            "set_queue_weight": self._set_queue_weight,
            "set_link_rate": self._set_link_rate,
            "set_pfc": self._set_pfc,
            "clear_pfc": self._clear_pfc,
            "show_queues": self._show_queues,
            "show_pfc": self._show_pfc,
            "show_ports": self._show_ports,
        }

    def execute(self, line: str) -> tuple[bool, str]:
        """(ok, output) of one command; errors are messages, never exceptions."""
        return self.execute_all([line])[0]

    def execute_all(self, lines: list[str]) -> list[tuple[bool, str]]:
        """:meth:`execute` of each line, in order (handed over together)."""
        return self._run_each([lambda line=line: self._execute(line) for line in lines])

    def _execute(self, line: str) -> tuple[bool, str]:
        text = line.strip()
        if not text or text.startswith("#"):
            return True, ""
        keyword, *words = text.split()
        try:
            handler = self._own_commands.get(keyword.lower())
            if handler is not None:
                with self.lock:
                    return True, handler(words)
            # a table command is parsed before the lock is taken: a port loop on
            # another thread, which needs the lock for every burst, waits only for the
            # change itself
            command = parse_command(text)
            self._checkpoint()
            with self.lock:
                outcome = self._current_session().execute(command)
        except (P4Error, ValueError) as err:
            return False, f"Error: {getattr(err, 'message', err)}"
        if outcome.failure:
            return False, outcome.failure
        return True, outcome.text

    def call(self, fn: Callable[[SwitchControl], T]) -> T:
        """``fn(the switch of the moment)`` where commands run (the port loop), under the
        lock, as a table command runs; what ``fn`` raises is raised here (a
        :class:`P4Error` where no pipeline is loaded). The Thrift runtime API's entry
        point (:mod:`softswitch.daemon.thrift`)."""
        def job() -> T:
            control = self._control_of()
            if control is None:
                raise P4Error("no pipeline is loaded")
            with self.lock:
                return fn(control)
        self._checkpoint()
        return self._run_each([job])[0]

    def port_status(self) -> list[PortStatus]:
        """The switch's ports (``show_ports``); P4Error where it has none."""
        if self._ports is None:
            raise P4Error("this switch has no ports (run it with softswitch run)")
        return self._ports()

    def _current_session(self) -> CommandSession:
        control = self._control_of()
        if control is None:
            raise P4Error("no pipeline is loaded")
        if self._session is None or self._session.control is not control:
            self._session = CommandSession(control)
        return self._session

    # --- traffic manager --------------------------------------------------------------
    def _require_tm(self) -> TrafficManager:
        if self.tm is None:
            raise P4Error("this switch has no traffic manager (run it with softswitch run)")
        return self.tm

    def _port_prio(self, rest: list[int]) -> dict[str, int | None]:
        return {"port": rest[0] if rest else None, "priority": rest[1] if len(rest) > 1 else None}

    def _set_queue_rate(self, words: list[str]) -> str:
        v = _ints(words, "set_queue_rate PPS [PORT [PRIORITY]]", 1, 3)
        self._require_tm().set_queue_rate(v[0], **self._port_prio(v[1:]))
        return ""

    def _set_queue_depth(self, words: list[str]) -> str:
        v = _ints(words, "set_queue_depth PACKETS [PORT [PRIORITY]]", 1, 3)
        self._require_tm().set_queue_depth(v[0], **self._port_prio(v[1:]))
        return ""

    def _set_queue_weight(self, words: list[str]) -> str:
        v = _ints(words, "set_queue_weight WEIGHT PORT [PRIORITY]", 2, 3)
        self._require_tm().set_queue_weight(v[0], **self._port_prio(v[1:]))
        return ""

    def _set_link_rate(self, words: list[str]) -> str:
        v = _ints(words, "set_link_rate BITS_PER_S PORT", 2, 2)
        self._require_tm().set_link_rate(v[0], v[1])
        return ""

    def _set_pfc(self, words: list[str]) -> str:
        port, prio, xoff, xon = _ints(words, "set_pfc INGRESS_PORT PRIORITY XOFF XON", 4, 4)
        self._require_tm().set_pfc(port, prio, PfcThresholds(xoff=xoff, xon=xon))
        return ""

    def _clear_pfc(self, words: list[str]) -> str:
        port, prio = _ints(words, "clear_pfc INGRESS_PORT PRIORITY", 2, 2)
        self._require_tm().set_pfc(port, prio, None)
        return ""

    def _show_queues(self, words: list[str]) -> str:
        (port,) = _ints(words, "show_queues PORT", 1, 1)
        tm = self._require_tm()
        ep = tm.port(port)
        tm.sync_native()            # counters of queues C holds (native queues)
        lines = [f"port {port}: link {ep.link_rate_bps or 'unlimited'} b/s"]
        for prio in range(tm.num_queues - 1, -1, -1):
            cfg, st = ep.queue_config(prio), ep.stats(prio)
            lines.append(f"  queue {prio}: depth {tm.depth(port, prio)}/{cfg.capacity_pkts} "
                         f"rate {cfg.rate_pps or 'unlimited'} pps weight {cfg.weight} "
                         f"enqueued {st.enqueued} dropped {st.dropped}")
        return "\n".join(lines)


    def _show_pfc(self, words: list[str]) -> str:
        _ints(words, "show_pfc", 0, 0)
        tm = self._require_tm()
        tm.sync_native()            # held counts of queues C holds (native queues)
        keys = sorted(set(tm.pfc.thresholds) | set(tm.pfc.pauses_sent) | set(tm.pfc_received))
        lines = ["port prio  xoff  xon  held  paused  xoff_sent  pfc_received"]
        for port, prio in keys:
            th = tm.pfc.thresholds.get((port, prio))
            lines.append(
                f"{port:>4} {prio:>4} {th.xoff if th else '-':>5} {th.xon if th else '-':>4} "
                f"{tm.pfc.held.get((port, prio), 0):>5} "
                f"{'yes' if (port, prio) in tm.pfc.paused else 'no':>7} "
                f"{tm.pfc.pauses_sent.get((port, prio), 0):>10} "
                f"{tm.pfc_received.get((port, prio), 0):>13}")
        return "\n".join(lines)

    # --- ports ----------------------------------------------------------------------------
    def _show_ports(self, words: list[str]) -> str:
        _ints(words, "show_ports", 0, 0)
        lines = [f"{'port #':^10}{'iface name':^20}{'status':^10}extra info", "=" * 50]
        for port in self.port_status():
            extra = f"kernel_drops={port.kernel_drops}"
            if port.urgent_kernel_drops is not None:
                extra += f"; urgent_kernel_drops={port.urgent_kernel_drops}"
            lines.append(f"{port.number:^10}{port.iface:^20}"
                         f"{'UP' if port.up else 'DOWN':^10}{extra}")
        return "\n".join(lines)


class PortProtocol(Protocol):
    """Another protocol served on the channel's port (BMv2's Thrift API:
    :class:`softswitch.daemon.thrift.server.ThriftPort`): a connection whose client
    opens with this protocol's first bytes is its to serve."""

    def claims(self, sock: socket.socket) -> bool:
        """Whether the client's first bytes are this protocol's (without taking them)."""

    def serve(self, sock: socket.socket) -> None:
        """Answer the connection until its client closes it."""


class _Handler(socketserver.StreamRequestHandler):
    channel: RuntimeChannel
    token: bytes | None = None
    loop: PortLoop | None = None   # serves the connection where it can (LoopConnection)
    other: PortProtocol | None = None   # another protocol on the same port (Thrift)
    timeout = IDLE_SECONDS

    def handle(self) -> None:
        """Commands are answered in order; all the complete lines one read brings (a
        client pipelining its commands) are answered with one send. A client that
        opens with another protocol's bytes (Thrift's) is that protocol's; with a
        token, nobody's (a Thrift client cannot send it)."""
        if self.other is not None and self._served_other(self.other):
            return
        if self.token is not None and not self._authenticate():
            return
        if self.loop is not None and self._served_by_loop(self.loop):
            return
        pending = bytearray()
        while True:
            try:
                data = self.rfile.read1(1 << 16)   # what is buffered, or one read
            except OSError:            # the idle timeout, or the client went away
                return
            lines, too_long = take_lines(pending, data)
            replies = self._replies(lines)
            if too_long:
                replies.append(TOO_LONG)
            try:
                if replies:
                    self.wfile.write(encode_replies(replies))
            except OSError:
                return
            if too_long or not data:
                return                 # the rest of a too long line cannot be trusted

    def _served_other(self, other: PortProtocol) -> bool:
        """Serve a client of the other protocol (True, whether served or refused);
        False for the line protocol's."""
        if not other.claims(self.connection):
            return False
        if self.token is None:
            other.serve(self.connection)
        return True

    def _served_by_loop(self, loop: PortLoop) -> bool:
        """Hand the connection to the port loop, and wait here until it ends; False
        (nothing read) where the loop does not take it."""
        from softswitch.daemon.cli_channel.connection import LoopConnection

        self.connection.setblocking(False)
        try:
            # what came with the token is buffered here (peek: still there if the loop
            # does not take the connection and this thread serves it)
            early = bytes(self.rfile.peek(1 << 16))
        except OSError:            # the client went away already
            return True
        conn = LoopConnection(self.connection, self.channel, loop)
        if not conn.start(early):
            self.connection.settimeout(self.timeout)
            return False
        conn.serve(IDLE_SECONDS)
        return True

    def _replies(self, lines: list[bytes]) -> list[dict[str, Any]]:
        """The reply to each line, in order; the commands run together (one hand-over
        to the port loop for all of them)."""
        commands: list[str | None] = [command_of(raw) for raw in lines]
        outcomes = iter(self.channel.execute_all([c for c in commands if c is not None]))
        return [NOT_A_COMMAND if c is None else
                dict(zip(("ok", "output"), next(outcomes), strict=True)) for c in commands]

    def _authenticate(self) -> bool:
        """The first message must carry the token; anything else closes the channel."""
        try:
            raw = self.rfile.readline(4096)
            given = json.loads(raw).get("token", "")
        except (OSError, ValueError, AttributeError):
            given = ""
        ok = isinstance(given, str) and hmac.compare_digest(given.encode(), self.token or b"")
        reply = {"ok": ok, "output": "" if ok else
                 "Error: this runtime channel needs a token (softswitch cli --token-file)"}
        try:
            self.wfile.write((json.dumps(reply) + "\n").encode())
        except OSError:
            return False
        return ok


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False


class _UnixServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    block_on_close = False


def read_token(path: str) -> bytes:
    """The token in a token file (surrounding whitespace ignored); OSError/ValueError."""
    with open(path, "rb") as f:
        token = f.read(4096).strip()
    if not token:
        raise ValueError(f"{path} is empty")
    return token


class RuntimeChannelServer:
    """Serves a :class:`RuntimeChannel` on ``host:port`` (or the Unix socket
    ``unix_path``) in a background thread; ``token``: required first message.
    With a ``loop`` (``softswitch run``'s port loop) each connection is read and
    answered on the loop itself once accepted (and authenticated), so a stream of
    commands never has another thread take the GIL from it
    (:mod:`softswitch.daemon.cli_channel.connection`); where the loop does not take it, the
    connection's thread serves it. ``other``: another protocol on the same port, for
    the clients that speak it (BMv2's Thrift API)."""

    def __init__(self, channel: RuntimeChannel, host: str = "127.0.0.1", port: int = 9090,
                 token: bytes | None = None, unix_path: str | None = None,
                 loop: PortLoop | None = None, other: PortProtocol | None = None) -> None:
        handler = type("Handler", (_Handler,), {"channel": channel, "token": token,
                                                "loop": loop, "other": other})
        self._unix_path = unix_path
        if unix_path is not None:
            if os.path.exists(unix_path) and not os.path.isdir(unix_path):
                os.unlink(unix_path)          # a stale socket of an earlier run
            old = os.umask(0o177)              # the socket file is created mode 0600
            try:
                self._server: socketserver.BaseServer = _UnixServer(unix_path, handler)
            finally:
                os.umask(old)
            self.address: Any = unix_path
        else:
            self._server = _Server((host, port), handler)
            self.address = self._server.server_address
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True,
                                        kwargs={"poll_interval": 0.1},
                                        name="runtime-channel")

    def start(self) -> RuntimeChannelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._unix_path is not None:
            try:
                os.unlink(self._unix_path)
            except OSError:
                pass


def run_commands(host: str, port: int, commands: Iterable[str],
                 out: Any = sys.stdout, token: bytes | None = None,
                 unix_path: str | None = None) -> int:
    """Client: send each command, print its output; exit code 1 if any failed.

    Commands are sent as ``commands`` yields them (a pipe's lines as they arrive)
    without waiting for the replies of those before, which are read and printed in
    order: a controller piping a stream of changes is not held to one round trip per
    change."""
    where = unix_path if unix_path is not None else f"{host}:{port}"
    try:
        if unix_path is not None:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.settimeout(30)
            sock.connect(unix_path)
        else:
            sock = socket.create_connection((host, port), timeout=30)
        with sock:
            reader, writer = sock.makefile("rb"), sock.makefile("wb")
            if token is not None and not _authenticate(reader, writer, token):
                return 1
            return _pipelined(reader, writer, commands, out)
    except (OSError, ValueError) as err:
        print(f"Error: cannot reach the switch's runtime channel at {where}: {err}",
              file=sys.stderr)
        return 1


def _authenticate(reader: Any, writer: Any, token: bytes) -> bool:
    writer.write((json.dumps({"token": token.decode("utf-8", "replace")}) + "\n").encode())
    writer.flush()
    answer = json.loads(reader.readline() or b"{}")
    if not answer.get("ok"):
        print(answer.get("output") or "Error: the switch refused the token", file=sys.stderr)
        return False
    return True


def _pipelined(reader: Any, writer: Any, commands: Iterable[str], out: Any) -> int:
    """Send ``commands`` from a thread; read and print one reply per command sent, in
    order, here. The sender tells what it sent through a queue: True per command, an
    exception if reading the commands or sending failed, None at the end."""
    sent: queue.SimpleQueue[bool | BaseException | None] = queue.SimpleQueue()

    def send() -> None:
        try:
            for cmd in commands:
                if not cmd.strip() or cmd.strip().startswith("#"):
                    continue
                writer.write((json.dumps({"cmd": cmd.rstrip("\n")}) + "\n").encode())
                writer.flush()
                sent.put(True)
        except (OSError, ValueError) as err:
            sent.put(err)
        finally:
            sent.put(None)

    threading.Thread(target=send, name="cli-send", daemon=True).start()
    failed = 0
    while (item := sent.get()) is not None:
        if isinstance(item, UnicodeDecodeError):
            print(f"Error: the commands are not UTF-8 text: {item}", file=sys.stderr)
            return 1
        if isinstance(item, BaseException):
            raise item
        line = reader.readline()
        if not line:
            print("Error: the switch closed the connection", file=sys.stderr)
            return 1
        reply = json.loads(line)
        if reply.get("output"):
            print(reply["output"], file=out if reply.get("ok") else sys.stderr)
        failed += not reply.get("ok")
    return 1 if failed else 0
