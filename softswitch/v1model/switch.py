"""A loaded v1model pipeline with BMv2 ``simple_switch`` semantics.

:class:`Switch` runs parser → verifyChecksum → ingress → traffic manager → egress →
computeChecksum → deparser in the order of BMv2's ``simple_switch.cpp``: ingress
cloning re-parses the original packet, resubmit restarts ingress with the original
bytes, multicast replicates per replication node, ``egress_spec`` 511 drops, egress
cloning copies the headers after egress, recirculation re-injects the deparsed bytes.
Preserved metadata follows ``@field_list(N)`` annotations. It implements
:class:`~softswitch.v1model.control.SwitchControl`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from softswitch.diagnostics import P4Error
from softswitch.frontend import ast
from softswitch.frontend import elaborate as E
from softswitch.frontend import types as T
from softswitch.v1model.bits import BitWriter, PacketReader
from softswitch.v1model.blocks import REJECT_CODE, match_keys
from softswitch.v1model.build import ProgramBuilder
from softswitch.v1model.control import (
    ActionInfo,
    EntryView,
    KeyInfo,
    KeyMatch,
    PacketOut,
    TableInfo,
)
from softswitch.v1model.execution import ExitSignal, PacketState, ParserError, SwitchAbort
from softswitch.v1model.tables import ActionDef, TableState
from softswitch.v1model.values import attr, copy_value

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


def _resolve(name: str, names: Sequence[str], what: str) -> str:
    """Exact control-plane name or a unique dotted suffix of one."""
    if name in names:
        return name
    cands = [n for n in names if n.endswith("." + name)]
    if len(cands) == 1:
        return cands[0]
    if not cands:
        raise P4Error(f"no {what} named '{name}'")
    raise P4Error(f"{what} name '{name}' is ambiguous: {', '.join(sorted(cands))}")


class Switch:
    """One v1model pipeline; all packet processing is synchronous in :meth:`inject`."""

    def __init__(self, pb: ProgramBuilder, roles: dict[str, Any], types: dict[str, Any]) -> None:
        self.pb = pb
        self.rt = pb.runtime
        self.clock = pb.clock
        self.roles = roles
        self.hdr_cls = types["H"]
        self.meta_cls = types["M"]
        self.sm_cls = types["SM"]
        self.field_lists = types["field_lists"]
        self.mirror: dict[int, tuple[str, int]] = {}
        # P4Runtime CloneSessionEntry.class_of_service per session: the queue (priority)
        # clones of that session use. BMv2 ignores it (clones get priority 0); softswitch
        # honours it so a switch-generated packet (a Fast CNP) can skip a congested queue.
        self.mirror_cos: dict[int, int] = {}
        self.mc_groups: dict[int, list[int]] = {}
        self.mc_nodes: dict[int, tuple[int, list[int]]] = {}
        self._next_node = 0
        # simple_switch's queues per egress port (--priority-queues) as inject() sees them:
        # like BMv2, a packet instance whose standard_metadata.priority names no queue is
        # dropped on its way to egress ("Priority out of range, dropping packet"). None:
        # no check (a QueuedSwitch's traffic manager does it instead).
        self.priority_queues: int | None = None
        self.priority_drops = 0
        self.digests = self.rt.digests
        self.logs = self.rt.logs
        for state in pb.tables.values():
            state.clock = self.clock

    # ------------------------------------------------------------ loading
    @classmethod
    def from_file(cls, path: str | Path, include_dirs: Sequence[str] = (),
                  defines: dict[str, str] | None = None,
                  fastpath: str | None = None) -> Switch:
        from softswitch.frontend.compiler import compile_program
        return cls.from_program(compile_program(str(path), include_dirs, defines),
                                fastpath=fastpath)

    @classmethod
    def from_program(cls, checked: Any, fastpath: str | None = None) -> Switch:
        """The loaded pipeline. ``fastpath`` (default: ``$SOFTSWITCH_FASTPATH``, else
        ``auto``) picks the packet path: ``off`` this interpreter, ``auto`` the compiled
        C pipeline where the program allows it (softswitch.fastpath), ``require`` C or
        an error."""
        sw = cls._interpreter(checked)
        if cls is not Switch:
            return sw
        from softswitch import fastpath as fp
        return fp.attach(sw, fastpath)

    @classmethod
    def _interpreter(cls, checked: Any) -> Switch:
        program = getattr(checked, "program", checked)
        elab = E.elaborate(checked)
        if elab.package is None or elab.package.name != "V1Switch":
            where = elab.main.loc if elab.main is not None else None
            raise P4Error("the v1model target runs programs whose main is a V1Switch", where)
        pb = ProgramBuilder(program, elab)
        roles: dict[str, Any] = {}
        for role in ROLES:
            blk = elab.top_block(role)
            if blk is None:
                raise P4Error(f"V1Switch argument '{role}' is not a parser/control instance",
                              elab.main.loc if elab.main else None)
            roles[role] = pb.compile_block(blk)
        _error_key_widths(pb)
        pb.finish()
        types = cls._pipeline_types(elab, pb)
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
        pkt = PacketState(length=len(w.data))
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

    def _run_control(self, role: str, *args: Any) -> Any:
        """Apply a top-level control; its copy-out values replace the arguments."""
        try:
            return self.roles[role](*args)
        except ExitSignal as e:
            return e.values if e.values is not None else args

    def _ingress_clone(self, w: _Work, pkt: PacketState, meta: Any,
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
        pkt = PacketState(length=w.length, recirculate_field_list=w.recirculate,
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

    # ------------------------------------------------------------ inspection
    def tables(self) -> list[TableInfo]:
        return [self._info(n) for n in self.pb.tables]

    def table_info(self, name: str) -> TableInfo:
        return self._info(self._table_name(name))

    def _table_name(self, name: str) -> str:
        if name in self.pb.tables:        # the full name: one dict probe per write
            return name
        return _resolve(name, list(self.pb.tables), "table")

    def _info(self, name: str) -> TableInfo:
        st = self.pb.tables[name]
        return TableInfo(name, tuple(KeyInfo(k.name, k.kind, k.width) for k in st.keys),
                         tuple(ActionInfo(a.name, a.params) for a in st.actions.values()),
                         st.size, st.entries_const, st.default_const)

    # ------------------------------------------------------------ tables
    def table_add(self, table: str, keys: list[KeyMatch], action: str, args: list[int],
                  priority: int | None = None) -> int:
        return self.pb.tables[self._table_name(table)].add(keys, action, args, priority)

    def table_state(self, table: str) -> TableState:
        """A table's runtime state, for writers that validate entries themselves and
        then use :meth:`table_add_checked` / :meth:`table_modify_checked`."""
        return self.pb.tables[self._table_name(table)]

    def table_add_checked(self, table: str, match: tuple[Any, ...], action: ActionDef,
                          args: list[int], priority: int | None = None) -> int:
        """``table_add`` of an entry already validated (``TableState.add_checked``):
        P4Runtime's batched writes."""
        return self.pb.tables[self._table_name(table)].add_checked(match, action, args, priority)

    def table_modify_checked(self, table: str, handle: int, action: ActionDef,
                             args: list[int]) -> None:
        """``table_modify`` with an action and arguments already validated."""
        self.pb.tables[self._table_name(table)].modify_checked(handle, action, args)

    def table_add_group(self, table: str, keys: list[KeyMatch],
                        members: list[tuple[str, list[int]]],
                        priority: int | None = None) -> int:
        """An entry of an action-selector table pointing to a group: each packet runs
        one member (action, args), picked by the selector's hash of the ``selector``
        key fields (BMv2 order: member ``hash % len(members)``). P4Runtime group and
        one-shot entries use it."""
        return self.pb.tables[self._table_name(table)].add_group(keys, members, priority)

    def table_modify_group(self, table: str, handle: int,
                           members: list[tuple[str, list[int]]]) -> None:
        self.pb.tables[self._table_name(table)].modify_group(handle, members)

    def table_modify(self, table: str, handle: int, action: str, args: list[int]) -> None:
        self.pb.tables[self._table_name(table)].modify(handle, action, args)

    def table_delete(self, table: str, handle: int) -> None:
        self.pb.tables[self._table_name(table)].delete(handle)

    def table_clear(self, table: str) -> None:
        self.pb.tables[self._table_name(table)].clear()

    def table_set_default(self, table: str, action: str, args: list[int]) -> None:
        self.pb.tables[self._table_name(table)].set_default(action, args)

    def table_entries(self, table: str) -> list[EntryView]:
        return self.pb.tables[self._table_name(table)].views()

    def entry_idle_us(self, table: str, handle: int) -> int:
        """µs on the switch clock since the entry last matched a packet (or, never
        matched, was inserted): P4Runtime idle timeouts and ``time_since_last_hit``."""
        return self.pb.tables[self._table_name(table)].idle_us(handle)

    # ------------------------------------------------------------ replication
    def mirroring_add(self, session: int, port: int, class_of_service: int = 0) -> None:
        self.mirror[session] = ("port", port)
        self.mirror_cos[session] = class_of_service

    def mirroring_add_mc(self, session: int, mgrp: int, class_of_service: int = 0) -> None:
        self.mirror[session] = ("mc", mgrp)
        self.mirror_cos[session] = class_of_service

    def mc_mgrp_create(self, mgrp: int) -> None:
        if mgrp in self.mc_groups:
            raise P4Error(f"multicast group {mgrp} already exists")
        self.mc_groups[mgrp] = []

    def mc_node_create(self, rid: int, ports: list[int]) -> int:
        h = self._next_node
        self._next_node += 1
        self.mc_nodes[h] = (rid, list(ports))
        return h

    def mc_node_associate(self, mgrp: int, node: int) -> None:
        if mgrp not in self.mc_groups:
            raise P4Error(f"no multicast group {mgrp}")
        if node not in self.mc_nodes:
            raise P4Error(f"no multicast node with handle {node}")
        if node in self.mc_groups[mgrp]:
            raise P4Error(f"multicast node {node} is already in group {mgrp}")
        self.mc_groups[mgrp].append(node)

    # BMv2 runtime-CLI names; the P4Runtime server takes groups and sessions apart with
    # them on MODIFY/DELETE and to roll a failed batch back.
    def mc_node_dissociate(self, mgrp: int, node: int) -> None:
        """Take a replication node out of a multicast group (the node survives)."""
        nodes = self.mc_groups.get(mgrp)
        if nodes is None:
            raise P4Error(f"no multicast group {mgrp}")
        if node not in nodes:
            raise P4Error(f"multicast node {node} is not in group {mgrp}")
        nodes.remove(node)

    def mc_node_destroy(self, node: int) -> None:
        """Delete a replication node; like BMv2 it also leaves any group holding it,
        so no group is left pointing to a node that no longer exists."""
        if node not in self.mc_nodes:
            raise P4Error(f"no multicast node with handle {node}")
        del self.mc_nodes[node]
        for nodes in self.mc_groups.values():
            if node in nodes:
                nodes.remove(node)

    def mc_mgrp_destroy(self, mgrp: int) -> None:
        """Delete a multicast group; its nodes are dissociated, not destroyed (BMv2)."""
        if mgrp not in self.mc_groups:
            raise P4Error(f"no multicast group {mgrp}")
        del self.mc_groups[mgrp]

    def mirroring_delete(self, session: int) -> None:
        """Remove a clone session: later clones to it are dropped, as for an unknown one."""
        if session not in self.mirror:
            raise P4Error(f"no clone session {session}")
        del self.mirror[session]
        self.mirror_cos.pop(session, None)

    # ------------------------------------------------------------ stateful externs
    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        direct = self._direct(name)
        if direct is not None:
            e = direct.entries.get(index)
            if e is None:
                raise P4Error(f"direct counter '{name}': no entry with handle {index}")
            return e.packets, e.bytes
        return self.pb.counters[_resolve(name, list(self.pb.counters), "counter")].read(index)

    def _direct(self, name: str) -> Any:
        names = list(self.pb.direct_counters)
        if name in names or any(n.endswith("." + name) for n in names):
            try:
                return self.pb.direct_counters[_resolve(name, names, "direct counter")]
            except P4Error:
                return None
        return None

    def counter_write(self, name: str, index: int, packets: int, bytes_: int) -> None:
        direct = self._direct(name)
        if direct is not None:
            e = direct.entries.get(index)
            if e is None:
                raise P4Error(f"direct counter '{name}': no entry with handle {index}")
            e.packets, e.bytes = packets, bytes_
            return
        c = self.pb.counters[_resolve(name, list(self.pb.counters), "counter")]
        c.write(index, packets, bytes_)

    def counter_reset(self, name: str) -> None:
        direct = self._direct(name)
        if direct is not None:
            for e in direct.entries.values():
                e.packets = e.bytes = 0
            return
        self.pb.counters[_resolve(name, list(self.pb.counters), "counter")].reset()

    def register_read(self, name: str, index: int) -> int:
        r = self.pb.registers[_resolve(name, list(self.pb.registers), "register")]
        return r.cp_read(index)

    def register_write(self, name: str, index: int, value: int) -> None:
        r = self.pb.registers[_resolve(name, list(self.pb.registers), "register")]
        r.cp_write(index, value)

    def register_reset(self, name: str) -> None:
        self.pb.registers[_resolve(name, list(self.pb.registers), "register")].reset()

    def _meter_cells(self, name: str) -> list[Any]:
        """The meter cells behind a name: an indirect meter array, or the entries of
        the table a direct meter belongs to (indexed by entry handle)."""
        names = list(self.pb.meters) + list(self.pb.direct_meters)
        full = _resolve(name, names, "meter")
        if full in self.pb.meters:
            return self.pb.meters[full].cells
        table = self.pb.direct_meters[full]
        cells: list[Any] = [None] * (max(table.entries, default=-1) + 1)
        for h, e in table.entries.items():
            cells[h] = e.meter
        return cells

    def _meter_cell(self, name: str, index: int) -> Any:
        cells = self._meter_cells(name)
        if not 0 <= index < len(cells) or cells[index] is None:
            raise P4Error(f"meter '{name}' has no cell {index}")
        return cells[index]

    def meter_set_rates(self, name: str, index: int, rates: list[tuple[float, int]]) -> None:
        """BMv2 ``meter_set_rates``: (rate per µs, burst) for committed then peak."""
        self._meter_cell(name, index).configure(list(rates))

    def meter_array_set_rates(self, name: str, rates: list[tuple[float, int]]) -> None:
        for cell in self._meter_cells(name):
            if cell is not None:
                cell.configure(list(rates))

    def meter_reset_rates(self, name: str, index: int) -> None:
        self._meter_cell(name, index).rates = []

    # ------------------------------------------------------------ digests, value sets
    def drain_digests(self) -> list[tuple[str, list[int]]]:
        """Digests produced since the last call: (digest type name, field values)."""
        out = [(name, [int(v) for v in values]) for _recv, name, values in self.digests]
        self.digests.clear()
        return out

    def value_set_set(self, name: str, members: list[list[KeyMatch]]) -> None:
        """Replace the members of a parser value set (each a list of field matches)."""
        vs = self.pb.value_sets[_resolve(name, list(self.pb.value_sets), "value set")]
        vs.members = []
        for keys in members:
            if len(keys) != len(vs.widths):
                raise P4Error(f"value set '{vs.name}' members have {len(vs.widths)} "
                              f"field(s), {len(keys)} given")
            values, masks = [], []
            for km, w in zip(keys, vs.widths, strict=True):
                full = (1 << w) - 1
                if km.wildcard:
                    mask = 0
                elif km.mask is not None:
                    mask = km.mask & full
                elif km.prefix_len is not None:
                    mask = full ^ ((1 << (w - km.prefix_len)) - 1)
                else:
                    mask = full
                values.append(km.value)
                masks.append(mask)
            vs.add(values, masks)


# ---------------------------------------------------------------- table keys
#: Width of ``error`` values in BMv2 (p4c's BMv2 back end lays ``error`` fields out as
#: 32 bits, and ``standard_metadata.parser_error`` is bit<32> there).
ERROR_WIDTH = 32


def _error_key_widths(pb: ProgramBuilder) -> None:
    """Give ``error``-typed table keys BMv2's error width, so the control plane (STF,
    runtime CLI) can match any error code. Before ``pb.finish()``: const entries are
    installed there. P4Info keeps bitwidth 0 for them, as p4c's P4Info does (it treats
    ``error`` keys like strings)."""
    for name, state in pb.tables.items():
        keys = match_keys(pb.table_infos.get(name))
        for spec, key in zip(state.keys, keys, strict=False):
            if isinstance(T.strip_newtype(getattr(key.expr, "type", None)), T.ErrorType):
                spec.width = ERROR_WIDTH


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
