"""A loaded v1model pipeline with BMv2 ``simple_switch`` semantics.

:class:`Switch` runs parser → verifyChecksum → ingress → traffic manager → egress →
computeChecksum → deparser in the order of BMv2's ``simple_switch.cpp``: ingress
cloning re-parses the original packet, resubmit restarts ingress with the original
bytes, multicast replicates per replication node, ``egress_spec`` 511 drops, egress
cloning copies the headers after egress, recirculation re-injects the deparsed bytes.
Preserved metadata follows ``@field_list(N)`` annotations. It implements
:class:`~softswitch.core.control.SwitchControl`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from softswitch.core.bits import BitWriter, PacketReader
from softswitch.core.blocks import REJECT_CODE
from softswitch.core.build import ProgramBuilder
from softswitch.core.control import (
    PacketOut,
)
from softswitch.core.execution import ParserError, SwitchAbort
from softswitch.core.tables import idle_in_real_time
from softswitch.core.target import Target, build_program
from softswitch.core.values import attr, copy_value
from softswitch.diagnostics import P4Error
from softswitch.frontend import ast
from softswitch.frontend import elaborate as E
from softswitch.frontend import types as T
from softswitch.v1model.build import V1ModelProgramBuilder
from softswitch.v1model.runtime import V1ModelPacket

DROP_PORT = 511
NORMAL, INGRESS_CLONE, EGRESS_CLONE, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 4, 5, 6
MAX_PASSES = 256
ROLES = ("p", "vr", "ig", "eg", "ck", "dep")


@dataclass(slots=True)
class _Work:
    """A packet instance waiting for a pipeline stage."""

    stage: str                  # "ingress" | "egress"
    port: int
    data: bytes = b""
    instance_type: int = NORMAL
    preserved: dict[str, Any] | None = None
    hdr: Any = None
    meta: Any = None
    sm: Any = None
    payload: bytes = b""
    length: int = 0
    queue: Any = None           # softswitch.tm Dequeued when a traffic manager queued it
    # BMv2 keeps a unicast packet's registers from ingress to egress: a recirculate or
    # truncate requested in ingress still takes effect after egress.
    recirculate: int | None = None
    truncate: int | None = None


class Switch(Target):
    """One v1model pipeline; all packet processing is synchronous in :meth:`inject`."""

    def __init__(self, pb: ProgramBuilder, roles: dict[str, Any], types: dict[str, Any]) -> None:
        super().__init__(pb, roles, types)
        self.sm_cls = types["SM"]
        self.field_lists = types["field_lists"]
        # simple_switch's queues per egress port (--priority-queues) as inject() sees them:
        # like BMv2, a packet instance whose standard_metadata.priority names no queue is
        # dropped on its way to egress ("Priority out of range, dropping packet"). None:
        # no check (a QueuedSwitch's traffic manager does it instead).
        self.priority_queues: int | None = None
        self.priority_drops = 0

    def idle_in_real_time(self) -> None:
        """Measure entries' idle times on the wall clock (``softswitch run``, as BMv2):
        the switch clock, which stands still at each packet's arrival, keeps packet
        timestamps; insertions, hits and idle times read the wall clock from its origin."""
        idle_in_real_time(self.pb.tables.values(), self.clock._origin)

    # ------------------------------------------------------------ loading
    @classmethod
    def from_file(cls, path: str | Path, include_dirs: Sequence[str] = (),
                  defines: dict[str, str] | None = None) -> Switch:
        """The interpreter of a P4 source file (see :meth:`from_program`)."""
        from softswitch.frontend.compiler import compile_program
        return cls.from_program(compile_program(str(path), include_dirs, defines))

    @classmethod
    def from_program(cls, checked: Any) -> Switch:
        """The loaded pipeline on this interpreter. The compiled C pipeline where the
        program allows it: :func:`softswitch.v1model.fast_switch.load_switch`."""
        pb, roles = build_program(checked, "V1Switch", "v1model", ROLES,
                                  V1ModelProgramBuilder)
        types = cls._pipeline_types(pb.elab, pb)
        return cls(pb, roles, types)

    @staticmethod
    def _pipeline_types(elab: E.Elaboration, pb: ProgramBuilder) -> dict[str, Any]:
        parser = elab.top_block("p")
        assert parser is not None
        params = parser.decl.params
        if len(params) != 4:
            raise P4Error("the V1Switch parser must take (packet_in, out H, inout M, inout "
                          "standard_metadata_t)", parser.decl.loc)
        ht, mt, smt = (T.strip_newtype(p.type_ref.resolved) for p in params[1:])
        lay = pb.layouts
        return {"H": lay.cls(ht), "M": lay.cls(mt), "SM": lay.cls(smt),
                "field_lists": _field_lists(mt)}

    # ------------------------------------------------------------ packets
    def inject(self, port: int, data: bytes) -> list[PacketOut]:
        out: list[PacketOut] = []
        work: deque[_Work] = deque([_Work("ingress", port, bytes(data))])
        passes = 0
        while work:
            passes += 1
            if passes > MAX_PASSES:
                break
            w = work.popleft()
            try:
                if w.stage == "ingress":
                    self._ingress(w, work)
                elif self._queue_missing(w):
                    self.priority_drops += 1
                else:
                    self._egress(w, work, out)
            except SwitchAbort:
                raise
            except ParserError:
                continue  # a stack/parse fault outside the parser: BMv2 drops the packet
        return out

    def _queue_missing(self, w: _Work) -> bool:
        """BMv2 ``SimpleSwitch::enqueue``: priority >= the number of queues is a drop."""
        return (self.priority_queues is not None and w.queue is None
                and int(getattr(w.sm, "f_priority", 0)) >= self.priority_queues)

    def _fresh(self) -> tuple[Any, Any, Any]:
        return self.hdr_cls(), self.meta_cls(), self.sm_cls()

    def _parse(self, data: bytes, port: int, hdr: Any, meta: Any,
               sm: Any) -> tuple[int, Any, Any, Any]:
        """Run the parser (errors land in parser_error): bytes consumed, hdr, meta, sm."""
        reader = PacketReader(data)
        sm.f_ingress_port = port
        try:
            hdr, meta, sm = self.roles["p"](reader, hdr, meta, sm)
        except ParserError as e:
            if e.values is not None:
                hdr, meta, sm = e.values
            if e.code != REJECT_CODE:
                sm.f_parser_error = e.code
        return reader.bit_pos >> 3, hdr, meta, sm

    def _ingress(self, w: _Work, work: deque[_Work]) -> None:
        hdr, meta, sm = self._fresh()
        sm.f_instance_type = w.instance_type
        sm.f_packet_length = len(w.data)
        sm.f_ingress_global_timestamp = self.clock.now_us() & ((1 << 48) - 1)
        if w.preserved:
            _apply_preserved(meta, w.preserved)
        pkt = V1ModelPacket(length=len(w.data))
        self.rt.pkt = pkt
        consumed, hdr, meta, sm = self._parse(w.data, w.port, hdr, meta, sm)
        payload = w.data[consumed:]
        self.rt.payload = payload
        hdr, meta = self._run_control("vr", hdr, meta)
        sm.f_checksum_error = pkt.checksum_error
        hdr, meta, sm = self._run_control("ig", hdr, meta, sm)
        # BMv2 keeps one clone register: whatever CloneType was named, a clone
        # requested during ingress is an ingress clone (and during egress an egress one).
        if pkt.clone_type:
            self._ingress_clone(w, pkt, meta, work)
        if pkt.resubmit_field_list is not None:
            # BMv2 resets all metadata for the new pass: ingress_port too (it is only
            # set for packets arriving from a port) unless a field list keeps it.
            work.append(_Work("ingress", 0, w.data, RESUBMIT,
                              self._preserve(meta, pkt.resubmit_field_list)))
            return
        length = len(w.data)
        if sm.f_mcast_grp:
            sm.f_instance_type = REPLICATION
            self._multicast(sm.f_mcast_grp, hdr, meta, sm, payload, length, work)
            return
        if sm.f_egress_spec == DROP_PORT:
            return
        sm.f_instance_type = NORMAL
        work.append(_Work("egress", sm.f_egress_spec, hdr=hdr, meta=meta, sm=sm,
                          payload=payload, length=length,
                          recirculate=pkt.recirculate_field_list, truncate=pkt.truncate_len))

    def _ingress_clone(self, w: _Work, pkt: V1ModelPacket, meta: Any,
                       work: deque[_Work]) -> None:
        session = self.mirror.get(pkt.clone_session)
        if session is None:
            return
        hdr2, meta2, sm2 = self._fresh()
        consumed, hdr2, meta2, sm2 = self._parse(w.data, w.port, hdr2, meta2, sm2)
        meta2, sm2 = self.meta_cls(), self.sm_cls()
        if pkt.clone_field_list is not None:
            _apply_preserved(meta2, self._preserve(meta, pkt.clone_field_list))
        sm2.f_instance_type = INGRESS_CLONE
        sm2.f_priority = self.mirror_cos.get(pkt.clone_session, 0)
        self._to_session(session, hdr2, meta2, sm2, w.data[consumed:], len(w.data), work)

    def _to_session(self, session: tuple[str, int], hdr: Any, meta: Any, sm: Any,
                    payload: bytes, length: int, work: deque[_Work]) -> None:
        kind, target = session
        if kind == "mc":
            self._multicast(target, hdr, meta, sm, payload, length, work)
        else:
            work.append(_Work("egress", target, hdr=hdr, meta=meta, sm=sm, payload=payload,
                              length=length))

    def _multicast(self, mgrp: int, hdr: Any, meta: Any, sm: Any, payload: bytes,
                   length: int, work: deque[_Work]) -> None:
        for node in self.mc_groups.get(mgrp, []):
            rid, ports = self.mc_nodes[node]
            for port in sorted(ports):
                sm2 = sm.copy()
                sm2.f_egress_rid = rid
                work.append(_Work("egress", port, hdr=hdr.copy(), meta=meta.copy(), sm=sm2,
                                  payload=payload, length=length))

    def _egress(self, w: _Work, work: deque[_Work], out: list[PacketOut]) -> None:
        hdr, meta, sm = w.hdr, w.meta, w.sm
        now = self.clock.now_us()
        sm.f_egress_port = w.port
        sm.f_egress_spec = 0
        sm.f_packet_length = w.length
        sm.f_egress_global_timestamp = now & ((1 << 48) - 1)
        if w.queue is None:  # not queued (inject): it left the instant it arrived
            sm.f_enq_timestamp = now & 0xFFFFFFFF
            sm.f_deq_timedelta = 0
        else:
            q = w.queue
            sm.f_enq_timestamp = int(q.packet.enq_time_us) & 0xFFFFFFFF
            sm.f_enq_qdepth = min(q.packet.enq_qdepth, (1 << 19) - 1)
            sm.f_deq_qdepth = min(q.deq_qdepth, (1 << 19) - 1)
            sm.f_deq_timedelta = int(q.deq_timedelta_us) & 0xFFFFFFFF
        pkt = V1ModelPacket(length=w.length, recirculate_field_list=w.recirculate,
                          truncate_len=w.truncate)
        self.rt.pkt = pkt
        self.rt.payload = w.payload
        hdr, meta, sm = self._run_control("eg", hdr, meta, sm)
        if pkt.clone_type:
            session = self.mirror.get(pkt.clone_session)
            if session is not None:
                meta2, sm2 = self.meta_cls(), self.sm_cls()
                if pkt.clone_field_list is not None:
                    _apply_preserved(meta2, self._preserve(meta, pkt.clone_field_list))
                sm2.f_instance_type = EGRESS_CLONE
                sm2.f_priority = self.mirror_cos.get(pkt.clone_session, 0)
                self._to_session(session, hdr.copy(), meta2, sm2, w.payload, w.length, work)
        if sm.f_egress_spec == DROP_PORT:
            return
        hdr, meta = self._run_control("ck", hdr, meta)
        writer = BitWriter()
        self._run_control("dep", writer, hdr)
        data = writer.to_bytes() + w.payload
        if pkt.recirculate_field_list is not None:
            # BMv2 recirculates the whole deparsed packet: a truncate() takes effect
            # only when a packet leaves by a port (Packet::get_data_size at transmit).
            work.append(_Work("ingress", 0, data, RECIRC,
                              self._preserve(meta, pkt.recirculate_field_list)))
            return
        if pkt.truncate_len is not None:
            data = data[:pkt.truncate_len]
        out.append(PacketOut(w.port, data))

    def _preserve(self, meta: Any, index: int) -> dict[str, Any]:
        """Values of the metadata fields in field list ``index`` (``-1``: none)."""
        return {path: copy_value(_get_path(meta, path))
                for path in self.field_lists.get(index, [])}

# ---------------------------------------------------------------- field lists
def _field_lists(t: Any, prefix: str = "") -> dict[int, list[str]]:
    """``@field_list(N)`` index → attribute paths of the metadata fields in it."""
    out: dict[int, list[str]] = {}
    if not isinstance(t, T.StructLikeType):
        return out
    for f in t.fields:
        path = f"{prefix}.{attr(f.name)}" if prefix else attr(f.name)
        for a in f.annotations:
            if getattr(a, "name", "") != "field_list":
                continue
            for idx in _annotation_ints(a):
                out.setdefault(idx, []).append(path)
        ft = T.strip_newtype(f.type)
        if isinstance(ft, T.StructType):
            for k, v in _field_lists(ft, path).items():
                out.setdefault(k, []).extend(v)
    return out


def _annotation_ints(a: ast.Annotation) -> list[int]:
    vals = []
    for e in a.exprs or []:
        c = e.const
        if isinstance(c, int) and not isinstance(c, bool):
            vals.append(c)
        elif isinstance(e, ast.IntLiteral):
            vals.append(e.value)
    if not vals and a.body.strip():
        for part in a.body.split(","):
            try:
                vals.append(int(part.strip(), 0))
            except ValueError:
                continue
    return vals


def _get_path(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _apply_preserved(meta: Any, values: dict[str, Any]) -> None:
    for path, v in values.items():
        parts = path.split(".")
        obj = meta
        for p in parts[:-1]:
            obj = getattr(obj, p)
        setattr(obj, parts[-1], copy_value(v))
