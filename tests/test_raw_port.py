"""A port's raw socket sees its own interface's frames only, from the first one.

A packet socket opened for every protocol receives every interface's frames until it is
bound to one; loopback traffic (a P4Runtime client's gRPC) then reached the pipeline as
if it had arrived on the port (a CI run failed on such a frame). The socket is opened
for no protocol and bound with it."""

from __future__ import annotations

import os
import socket
import threading
import time

import pytest

from softswitch.ports.afpacket import RawPort
from softswitch.ports.veth import veth_pairs

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for veth/AF_PACKET")


def test_no_frame_of_another_interface_slips_in_before_bind():
    stop = threading.Event()

    def loopback_traffic() -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            while not stop.is_set():
                s.sendto(b"x" * 50, ("127.0.0.1", 9))

    noise = threading.Thread(target=loopback_traffic, daemon=True)
    noise.start()
    stray = 0
    try:
        with veth_pairs(1, "rp") as pairs:
            for _ in range(200):
                port = RawPort(pairs[0][1])     # nothing is sent on this veth
                time.sleep(0.0005)
                while port.receive() is not None:
                    stray += 1
                port.close()
    finally:
        stop.set()
        noise.join(2)
    assert stray == 0, f"{stray} frames of other interfaces reached the port"
