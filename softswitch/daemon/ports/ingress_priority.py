"""Ingress priority for ``softswitch run`` (a softswitch extension; BMv2 has none).

A hardware switch runs its ingress pipeline at line rate, so packets only ever wait in
the egress queues, where strict priority serves the urgent classes first. A software
switch on a busy host can fall behind, and then frames wait *before* the pipeline, in
the kernel's socket buffer, in arrival order: a scheduling signal waits behind every
elephant frame that came before it, whatever its egress queue. A NIC with priority
receive queues (DCB) avoids that; this module does the same with the kernel's packet
filter. Each port gets two AF_PACKET sockets with complementary classic BPF filters:
frames of the urgent DSCPs (IPv4 or IPv6, with or without an 802.1Q tag) or no longer
than a size go to one, everything else to the other, and the port loop reads the urgent
socket first and between bursts of the other.

Order is kept within each of the two sets, so within any flow whose DSCP and size class
do not change; between them, an urgent frame may overtake bulk frames that arrived
before it — which is the point, and what a line-rate switch would have done anyway.
"""

from __future__ import annotations

import ctypes
import socket
import struct
from dataclasses import dataclass

from softswitch.diagnostics import P4Error

SO_ATTACH_FILTER = 26
ACCEPT, REJECT = 0x40000, 0         # bytes of the frame to keep: all, none
_ETH_8021Q, _ETH_IPV4, _ETH_IPV6 = 0x8100, 0x0800, 0x86DD
# classic BPF opcodes (linux/filter.h)
LD_ABS, LDH_ABS, LDB_ABS, LD_LEN = 0x20, 0x28, 0x30, 0x80
AND_K, RSH_K = 0x54, 0x74
JEQ_K, JGT_K = 0x15, 0x25
RET_K = 0x06
_FILTER = struct.Struct("HBBI")
_FPROG = struct.Struct("HxxxxxxP")


@dataclass(frozen=True)
class IngressPriority:
    """Which frames a port reads first: these DSCPs, or at most ``max_bytes`` long."""

    dscps: frozenset[int] = frozenset()
    max_bytes: int = 0

    def __bool__(self) -> bool:
        return bool(self.dscps) or self.max_bytes > 0

    def describe(self) -> str:
        parts = []
        if self.dscps:
            parts.append("DSCP " + ",".join(str(d) for d in sorted(self.dscps)))
        if self.max_bytes:
            parts.append(f"frames of at most {self.max_bytes} bytes")
        return " or ".join(parts)

    def program(self, urgent: bool) -> list[tuple[int, int, int, int]]:
        """The filter of the urgent socket (``urgent``) or of the other one: the same
        test, with its answers swapped, so every frame reaches exactly one of them."""
        yes, no = (ACCEPT, REJECT) if urgent else (REJECT, ACCEPT)
        return _assemble(self._test(), yes, no)

    def _test(self) -> list[tuple]:
        """The test as instructions with symbolic jump targets ('yes'/'no'/labels)."""
        code: list[tuple] = []
        if self.max_bytes:
            code += [(LD_LEN, 0), (JGT_K, self.max_bytes, "headers", "yes")]
        code += [("label", "headers")]
        if not self.dscps:
            return code + [("goto", "no")]
        # a load past the frame's end would make the filter answer 0 (drop) in *both*
        # sockets: frames too short for the headers read below are not urgent
        code += [(LD_LEN, 0), (JGT_K, 19, "long", "no"), ("label", "long"),
                 (LDH_ABS, 12),
                 (JEQ_K, _ETH_IPV4, "v4_14", "not_v4"), ("label", "not_v4"),
                 (JEQ_K, _ETH_IPV6, "v6_14", "not_v6"), ("label", "not_v6"),
                 (JEQ_K, _ETH_8021Q, "tagged", "no"), ("label", "tagged"),
                 (LDH_ABS, 16),
                 (JEQ_K, _ETH_IPV4, "v4_18", "not_v4t"), ("label", "not_v4t"),
                 (JEQ_K, _ETH_IPV6, "v6_18", "no")]
        for offset in (14, 18):
            code += [("label", f"v4_{offset}"), (LDB_ABS, offset + 1), (RSH_K, 2),
                     ("goto", "dscp"),
                     ("label", f"v6_{offset}"), (LDH_ABS, offset), (RSH_K, 6),
                     (AND_K, 0x3F), ("goto", "dscp")]
        code += [("label", "dscp")]
        for dscp in sorted(self.dscps):
            code.append((JEQ_K, dscp, "yes", f"after_{dscp}"))
            code.append(("label", f"after_{dscp}"))
        return code + [("goto", "no")]


def _assemble(code: list[tuple], yes: int, no: int) -> list[tuple[int, int, int, int]]:
    """Resolve labels into classic BPF's forward jump offsets; 'yes'/'no' end in the two
    return instructions. ``goto`` becomes a JEQ whose both branches jump."""
    code = code + [("label", "yes"), (RET_K, yes), ("label", "no"), (RET_K, no)]
    where: dict[str, int] = {}
    flat: list[tuple] = []
    for ins in code:
        if ins[0] == "label":
            where[ins[1]] = len(flat)
        else:
            flat.append(ins)
    out = []
    for at, ins in enumerate(flat):
        if ins[0] == "goto":
            off = where[ins[1]] - at - 1
            out.append((JEQ_K, off, off, 0))
        elif len(ins) == 4:
            op, k, jt, jf = ins
            out.append((op, where[jt] - at - 1, where[jf] - at - 1, k))
        else:
            out.append((ins[0], 0, 0, ins[1]))
    for op, jt, jf, _k in out:
        if not (0 <= jt <= 255 and 0 <= jf <= 255):
            raise AssertionError(f"BPF jump out of range in op {op:#x}")
    return out


def attach(sock: socket.socket, program: list[tuple[int, int, int, int]]) -> None:
    """Attach a classic BPF program to a socket (SO_ATTACH_FILTER)."""
    raw = b"".join(_FILTER.pack(op, jt, jf, k) for op, jt, jf, k in program)
    buf = ctypes.create_string_buffer(raw, len(raw))
    fprog = _FPROG.pack(len(program), ctypes.addressof(buf))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)


def parse(dscps: str | None, max_bytes: int | None) -> IngressPriority | None:
    """The command line's ``--ingress-priority-dscp LIST`` and
    ``--ingress-priority-max-bytes N``; None when neither is given."""
    values: set[int] = set()
    for word in (dscps or "").split(","):
        word = word.strip()
        if not word:
            continue
        if not word.isdigit() or not 0 <= int(word) <= 63:
            raise P4Error(f"--ingress-priority-dscp: '{word}' is not a DSCP (0..63)")
        values.add(int(word))
    if dscps is not None and not values:
        raise P4Error("--ingress-priority-dscp: no DSCP given (e.g. 46,48,56)")
    if max_bytes is not None and not 14 <= max_bytes <= 65535:
        raise P4Error(f"--ingress-priority-max-bytes: {max_bytes} is not a frame size "
                      "(14..65535)")
    spec = IngressPriority(frozenset(values), max_bytes or 0)
    return spec or None
