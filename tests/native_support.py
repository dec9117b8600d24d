"""The tagged-frame program and frames of the native loop and native queue tests.

Frames carry an Ethernet header of type ``TAG`` and a ``tag_t`` header whose first bytes
are ``op``, ``prio`` (the priority), ``dest`` (the egress port) and ``seq``; the rest of
``tag_t`` is what each test's egress writes. ``tagged_program`` builds the v1model
program around a test's ingress and egress, and op 6 recirculates a frame once (in
egress, preserving the ``again`` metadata that stops a second time).
"""

from __future__ import annotations

from programs import QUEUEING_NAMES, v1model_program

from softswitch.tm.pfc import build_pfc_frame

TAG = 0x88B5          # IEEE local experimental: nothing else on the veths uses it

_PARSER = """
    state start {
        pkt.extract(h.eth);
        transition select(h.eth.type) { 0x88B5: tag; default: accept; }
    }
    state tag { pkt.extract(h.tag); transition accept; }
"""
_RECIRCULATE_OP6 = """        if (h.tag.op == 6 && m.again == 0) {
            m.again = 1;
            recirculate_preserving_field_list(1);
        }
"""


def tagged_program(tag_fields: str, ingress: str, egress_locals: str, egress_body: str,
                   declarations: str = "") -> str:
    """The program: ``tag_t`` of ``tag_fields``, the test's ingress, and an egress of
    ``egress_locals`` then an apply block running ``egress_body`` then op 6's
    recirculation."""
    return v1model_program(
        types="\nheader eth_t { bit<48> dst; bit<48> src; bit<16> type; }\n"
              f"header tag_t {{ {tag_fields} }}\n",
        headers="eth_t eth; tag_t tag;", meta="@field_list(1) bit<8> again;",
        declarations=declarations, parser=_PARSER, ingress=ingress,
        egress=f"{egress_locals}    apply {{\n{egress_body}{_RECIRCULATE_OP6}    }}\n",
        emit=["h.eth", "h.tag"], names=QUEUEING_NAMES)


def tagged_frame(seq: int, out: int, prio: int, op: int, rest: int) -> bytes:
    """Frame ``seq`` for port ``out``, with ``rest`` zero bytes of ``tag_t`` after seq."""
    head = bytes.fromhex("020000000002") + bytes([2, 0, 0, 0, 0, seq]) + TAG.to_bytes(2, "big")
    return (head + bytes([op, prio, out, seq]) + bytes(rest)).ljust(60, b"\0")


def pfc(prio: int, quanta: int) -> bytes:
    """A PFC pause of ``quanta`` for priority ``prio``."""
    return build_pfc_frame(bytes.fromhex("020000000009"), {prio: quanta})
