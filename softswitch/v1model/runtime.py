"""What v1model programs' lowered code calls at run time (``_RT`` in a switch's blocks).

v1model's forwarding externs (``clone``, ``resubmit``, ``recirculate``, ``truncate``)
and ``verify_checksum`` do not act on their arguments but on the packet being
processed: they leave requests in its :class:`V1ModelPacket`, which the switch reads
after ingress or egress, in BMv2's order (softswitch.v1model.switch).
"""

from __future__ import annotations

from dataclasses import dataclass

from softswitch.core.execution import PacketState, Runtime


@dataclass(slots=True)
class V1ModelPacket(PacketState):
    """One pass of one packet: what v1model's externs asked of the traffic manager."""

    clone_session: int = 0
    clone_field_list: int | None = None
    clone_type: int = 0
    checksum_error: int = 0
    resubmit_field_list: int | None = None
    recirculate_field_list: int | None = None
    truncate_len: int | None = None


class V1ModelRuntime(Runtime):
    """:class:`~softswitch.core.execution.Runtime` plus v1model's forwarding requests."""

    pkt: V1ModelPacket

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.pkt = V1ModelPacket()

    def clone(self, kind: str, session: int, field_list: int | None) -> None:
        p = self.pkt
        p.clone_session = session
        p.clone_type = 2 if kind == "E2E" else 1
        p.clone_field_list = field_list

    def resubmit(self, field_list: int) -> None:
        self.pkt.resubmit_field_list = field_list

    def recirculate(self, field_list: int) -> None:
        self.pkt.recirculate_field_list = field_list

    def truncate(self, length: int) -> None:
        self.pkt.truncate_len = length
