"""PacketOut/PacketIn ⇄ frames on the CPU port, via the ``@controller_header``s.

As in BMv2 with PI, a controller's PacketOut enters the pipeline on the CPU port with
the program's ``packet_out`` header (its metadata fields, in P4Info order, packed
most-significant bit first) in front of the payload, and a frame the pipeline sends
to the CPU port becomes a PacketIn whose metadata is read from the leading
``packet_in`` header. A program without such a header gets the bare payload.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from softswitch.p4runtime import bytestrings, errors
from softswitch.p4runtime.p4index import P4InfoIndex


class PacketIO:
    """The controller-header layouts of one pipeline."""

    def __init__(self, index: P4InfoIndex) -> None:
        self.out_header = index.packet_metadata("packet_out")
        self.in_header = index.packet_metadata("packet_in")

    def frame_of(self, packet: p4runtime_pb2.PacketOut) -> bytes:
        """The frame a PacketOut injects on the CPU port (header + payload)."""
        header = self.out_header
        if header is None:
            if packet.metadata:
                raise errors.invalid("the P4 program has no packet_out controller header: "
                                     "PacketOut cannot carry metadata")
            return bytes(packet.payload)
        fields = {m.id: m for m in header.metadata}
        values: dict[int, int] = {}
        for md in packet.metadata:
            info = fields.get(md.metadata_id)
            if info is None:
                raise errors.invalid(f"packet_out has no metadata id {md.metadata_id}")
            if md.metadata_id in values:
                raise errors.invalid(f"packet_out metadata '{info.name}' given twice")
            values[md.metadata_id] = bytestrings.decode(md.value, info.bitwidth,
                                                        f"packet_out metadata '{info.name}'")
        bits, total = 0, 0
        for info in header.metadata:
            bits = (bits << info.bitwidth) | values.get(info.id, 0)
            total += info.bitwidth
        pad = (-total) % 8
        return (bits << pad).to_bytes((total + pad) // 8, "big") + bytes(packet.payload)

    def packet_in_of(self, frame: bytes) -> p4runtime_pb2.PacketIn:
        """The PacketIn for a frame the pipeline sent to the CPU port."""
        header = self.in_header
        if header is None:
            return p4runtime_pb2.PacketIn(payload=frame)
        total = sum(m.bitwidth for m in header.metadata)
        size = (total + 7) // 8
        if len(frame) < size:
            return p4runtime_pb2.PacketIn(payload=frame)
        bits = int.from_bytes(frame[:size], "big") >> (size * 8 - total)
        out = p4runtime_pb2.PacketIn(payload=frame[size:])
        shift = total
        for info in header.metadata:
            shift -= info.bitwidth
            value = (bits >> shift) & ((1 << info.bitwidth) - 1)
            out.metadata.add(metadata_id=info.id, value=bytestrings.encode(value))
        return out
