"""One Thrift connection of the runtime port, and how a connection says which it is.

``--thrift-port`` serves two protocols on one port. Every client speaks first: BMv2's
Thrift clients (``TBinaryProtocol``, strict) open with the version word, first byte
``0x80``; ``softswitch cli``'s line protocol opens with ``{``. :func:`is_thrift` peeks
at that byte without taking it; :func:`serve_connection` then answers the Thrift calls
of one connection, in order, on the connection's own thread, until the client closes it;
a string longer than the line protocol's longest line, or a list longer than
``MAX_ITEMS``, ends the connection before anything is read into memory for it.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TException
from thrift.transport import TSocket, TTransport

from softswitch.daemon.cli_channel.framing import MAX_LINE

log = logging.getLogger("softswitch.thrift")
THRIFT_FIRST_BYTE = 0x80          # TBinaryProtocol's VERSION_1 (0x80010000), high byte
MAX_ITEMS = 1 << 16               # a longer list or map claimed ends the connection


def is_thrift(sock: socket.socket) -> bool:
    """Whether the client's first byte is a Thrift binary message's (waits for it)."""
    try:
        first = sock.recv(1, socket.MSG_PEEK)
    except OSError:
        return False
    return first[:1] == bytes([THRIFT_FIRST_BYTE])


class ThriftPort:
    """BMv2's Thrift services as the runtime channel's port serves them beside its line
    protocol (:class:`~softswitch.daemon.cli_channel.commands.PortProtocol`)."""

    def __init__(self, processor: Any) -> None:
        self.processor = processor

    def claims(self, sock: socket.socket) -> bool:
        return is_thrift(sock)

    def serve(self, sock: socket.socket) -> None:
        serve_connection(sock, self.processor)


def serve_connection(sock: socket.socket, processor: Any) -> None:
    """Answer the Thrift calls on ``sock`` until the client closes it (or it idles out)."""
    handle = TSocket.TSocket()
    handle.setHandle(sock)
    transport = TTransport.TBufferedTransport(handle)
    protocol = TBinaryProtocol.TBinaryProtocol(transport, string_length_limit=MAX_LINE,
                                               container_length_limit=MAX_ITEMS)
    try:
        while True:
            processor.process(protocol, protocol)
    except TTransport.TTransportException:
        pass                         # the client went away
    except (TException, OSError) as exc:
        log.warning("Thrift connection ended: %s", exc)
