"""The tagged-frame program and frames of the native loop and native queue tests.

Frames carry an Ethernet header of type ``TAG`` and a ``tag_t`` header whose first bytes
are ``op``, ``prio`` (the priority), ``dest`` (the egress port) and ``seq``; the rest of
``tag_t`` is what each test's egress writes. ``tagged_program`` builds the v1model
program around a test's ingress and egress, and op 6 recirculates a frame once (in
egress, preserving the ``again`` metadata that stops a second time); ``tagged_device``
runs it with the routes, clone session and multicast group the tests send to.
"""

from __future__ import annotations

from typing import Any

from programs import QUEUEING_NAMES, v1model_program

from softswitch.core.control import KeyMatch
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


def tagged_device(program: str, fastpath: str = "c", cpu_port: int = 255) -> Any:
    """A Device running ``program`` (a file of ``tagged_program``): ``dest`` 1-3 go out of
    ports 1-3, clone session 5 to port 3, multicast group 1 to ports 2 and 3 (rid 7)."""
    from p4.v1 import p4runtime_pb2

    from softswitch.daemon.device import Device
    from softswitch.p4runtime import pipeline

    compiled = pipeline.compile_file(program, {})
    assert compiled.switch.fastpath == fastpath
    sw = compiled.switch
    for out in (1, 2, 3):
        sw.table_add("route", [KeyMatch("h.tag.dest", "exact", out)], "to", [out])
    sw.mirroring_add(5, 3)
    sw.mc_mgrp_create(1)
    sw.mc_node_associate(1, sw.mc_node_create(7, [2, 3]))
    config = p4runtime_pb2.ForwardingPipelineConfig(
        p4_device_config=pipeline.make_artifact(program).to_bytes())
    device = Device(device_id=1, cpu_port=cpu_port)
    device.start_with(config, compiled)
    return device


def tagged_frame(seq: int, out: int, prio: int = 0, op: int = 0, *, rest: int) -> bytes:
    """Frame ``seq`` for port ``out``, with ``rest`` zero bytes of ``tag_t`` after seq."""
    head = bytes.fromhex("020000000002") + bytes([2, 0, 0, 0, 0, seq]) + TAG.to_bytes(2, "big")
    return (head + bytes([op, prio, out, seq]) + bytes(rest)).ljust(60, b"\0")


def pfc(prio: int, quanta: int) -> bytes:
    """A PFC pause of ``quanta`` for priority ``prio``."""
    return build_pfc_frame(bytes.fromhex("020000000009"), {prio: quanta})
