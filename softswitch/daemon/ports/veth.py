"""Veth pairs for tests and benchmarks that run a switch on real interfaces.

One pair per switch port: the switch side goes to ``softswitch run -i``, the host side
is where a test sends and receives. IPv6 is turned off on both ends so the kernel's
router solicitations do not show up as stray frames. Pairs are always deleted again,
also when the block raises.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def veth_pairs(count: int, prefix: str = "v") -> Iterator[list[tuple[str, str]]]:
    """``count`` pairs ``(switch_side, host_side)`` named ``{prefix}s{i}{tag}`` /
    ``{prefix}h{i}{tag}`` (unique, at most 15 characters), up for the ``with`` block."""
    tag = uuid.uuid4().hex[:5]
    pairs = [(f"{prefix}s{i}{tag}", f"{prefix}h{i}{tag}") for i in range(count)]
    if any(len(name) > 15 for pair in pairs for name in pair):
        raise ValueError(f"veth prefix {prefix!r} too long for 15-character interface names")
    created: list[str] = []
    try:
        for sw, host in pairs:
            subprocess.run(["ip", "link", "add", sw, "type", "veth", "peer", "name", host],
                           check=True, capture_output=True)
            created.append(sw)
            for name in (sw, host):
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1"],
                               capture_output=True)
                subprocess.run(["ip", "link", "set", name, "up"], check=True,
                               capture_output=True)
        yield pairs
    finally:
        for sw in created:
            subprocess.run(["ip", "link", "del", sw], capture_output=True)
