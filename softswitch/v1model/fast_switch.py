"""A v1model switch whose packets run through the compiled C pipeline.

:class:`FastSwitch` is a :class:`~softswitch.v1model.switch.Switch` (same control
interface, same ``ProgramBuilder``): the interpreter's table states stay authoritative —
P4Runtime, the runtime CLI and STF write them as on any switch — and every write is
mirrored into the C tables right after it succeeds. Their tables are ``lazy`` (those
without a direct meter): an entry written pre-checked (P4Runtime's plain writes) stays a
row until something needs the interpreter's Entry, and reaches C from the row
(``tbl_put_rows``), so a batched insert builds each entry once, in C. What packets
change lives in C: direct and indirect counters, registers, entry hit times; the control
interface reads and writes those there. Meters, digests, logs and ``random`` stay Python
objects the C code calls back. ``inject`` runs the whole packet (clones, resubmits,
recirculations, multicast) in C; ``_ingress``/``_egress`` are the same steps for
:class:`~softswitch.v1model.queueing.QueuedSwitch`, with work items as opaque capsules;
``forward`` runs a whole burst of ``softswitch run`` through both while the traffic
manager lets packets pass (``rt_loop.c``, driven by
:class:`~softswitch.daemon.forwarding.Forwarder`).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from softswitch.core.control import EntryView, PacketOut
from softswitch.core.tables import CheckedOps
from softswitch.core.target import resolve_name
from softswitch.diagnostics import P4Error
from softswitch.fastpath import mode
from softswitch.fastpath.build import BuildError, ToolMissing, load
from softswitch.fastpath.cprogram import CProgram
from softswitch.fastpath.ctypes_ import Unsupported
from softswitch.v1model.native_queues import NativeQueues
from softswitch.v1model.switch import Switch, _Work

STAGES = ("ingress", "egress")
log = logging.getLogger("softswitch.fastpath")
_WARNED: set[str] = set()    # the host's build problems (no gcc ...), said once each


def load_switch(checked: Any, fastpath: str | None = None) -> Switch:
    """The v1model switch of a checked program. ``fastpath`` (default:
    ``$SOFTSWITCH_FASTPATH``, else ``auto``) picks the packet path: ``off`` the
    interpreter, ``auto`` the compiled C pipeline where the program allows it,
    ``require`` C or an error."""
    return attach(Switch.from_program(checked), fastpath)


def load_switch_file(path: str | Path, include_dirs: Sequence[str] = (),
                     defines: dict[str, str] | None = None,
                     fastpath: str | None = None) -> Switch:
    """:func:`load_switch` of a P4 source file."""
    from softswitch.frontend.compiler import compile_program
    return load_switch(compile_program(str(path), include_dirs, defines), fastpath)


def attach(switch: Switch, fastpath: str | None = None) -> Switch:
    """``switch`` (an interpreter Switch) or a FastSwitch on the same program state."""
    m = mode(fastpath)
    if m == "off":
        switch.fastpath = "off"
        return switch
    try:
        cprog = CProgram(switch)
        source = cprog.generate()
        mod, key, _built = load(source)
        return FastSwitch(switch, mod, cprog, key)
    except (Unsupported, BuildError, MemoryError) as e:
        reason, loc, msg = str(e), getattr(e, "loc", None), getattr(e, "message", str(e))
        host_problem = isinstance(e, ToolMissing)
    except RecursionError:
        reason = msg = "program too deeply nested for the C back end"
        loc, host_problem = None, False
    except Exception as e:  # noqa: BLE001 - a C back-end bug: the interpreter still works
        if m == "require":
            raise
        reason = msg = f"internal error in the C back end: {type(e).__name__}: {e}"
        loc, host_problem = None, False
    if m == "require":
        raise P4Error(f"the C fast path cannot run this program: {msg}", loc)
    switch.fastpath = f"interpreter: {reason}"
    if host_problem and reason in _WARNED:
        log.debug("fast path: %s; running the interpreter", reason)
    else:
        if host_problem:
            _WARNED.add(reason)
        log.warning("fast path: %s; running the interpreter", reason)
    return switch


class _SM:
    """What the traffic manager reads of a C work item's standard metadata."""

    __slots__ = ("f_priority", "f_ingress_port")

    def __init__(self, priority: int, ingress_port: int) -> None:
        self.f_priority = priority
        self.f_ingress_port = ingress_port


class _Pending:
    """A table's C work deferred to the end of a synced_batch: handles to put (rows or
    built entries, in order) and handles to delete (applied first: handles are never
    reused, so deleting before putting is what the updates did in order)."""

    __slots__ = ("lay", "put", "deleted")

    def __init__(self, lay: Any) -> None:
        self.lay = lay
        self.put: list[int] = []
        self.deleted: list[int] = []


class _SyncedBatch:
    """FastSwitch.synced_batch's context (nested ones join the outermost)."""

    __slots__ = ("_switch", "_outer")

    def __init__(self, switch: FastSwitch) -> None:
        self._switch = switch
        self._outer = False

    def __enter__(self) -> None:
        if self._switch._pending is None:
            self._switch._pending = {}
            self._outer = True

    def __exit__(self, *exc: object) -> None:
        if self._outer:
            try:
                self._switch._settle()
            finally:
                self._switch._pending = None


class FastSwitch(Switch):
    fastpath = "c"

    def __init__(self, base: Switch, mod: Any, cprog: Any, key: str) -> None:
        self._mod = mod
        # Per layout, the handles whose C entry waits for the end of a synced_batch
        # (to put, or to delete: see checked_ops).
        self._pending: dict[int, _Pending] | None = None
        self.fastpath_key = key
        self._ctx = mod.new(tuple(cprog.objs), base.pb.clock, float(base.pb.clock._origin))
        types = {"H": base.hdr_cls, "M": base.meta_cls, "SM": base.sm_cls,
                 "field_lists": base.field_lists}
        super().__init__(base.pb, base.roles, types)
        self._layouts = {cprog.table_names[t]: lay for t, lay in cprog.layouts.items()}
        for name in cprog.table_names:
            if name not in self._layouts:
                self._layouts[name] = cprog.table_layout(cprog.table_id(name))
        self._by_state = {id(lay.state): lay for lay in self._layouts.values()}
        self._cids = {n: i for i, n in enumerate(cprog.counter_names)}
        self._rids = {n: i for i, n in enumerate(cprog.register_names)}
        for lay in self._layouts.values():
            # Entries written pre-checked are built in the interpreter only on demand:
            # packets run here (see TableState.add_checked).
            lay.state.lazy = lay.state.meter_factory is None
            self._sync_default(lay)
            for h in list(lay.state.entries):
                self._sync_entry(lay, h)
        self._sync_repl()

    # ------------------------------------------------------------ queues
    @property
    def priority_queues(self) -> int | None:
        return self._pq

    @priority_queues.setter
    def priority_queues(self, n: int | None) -> None:
        self._pq = n
        self._mod.queues(self._ctx, -1 if n is None else int(n), -1)

    @property
    def priority_drops(self) -> int:
        return int(self._mod.queues(self._ctx, -2, -1))

    @priority_drops.setter
    def priority_drops(self, n: int) -> None:
        self._mod.queues(self._ctx, -2, int(n))

    # ------------------------------------------------------------ packets
    def inject(self, port: int, data: bytes) -> list[PacketOut]:
        self._settle()
        return [PacketOut(p, d) for p, d in self._mod.inject(self._ctx, port, bytes(data))]

    def inject_raw(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """``inject`` without PacketOut objects: (port, bytes) per packet out."""
        self._settle()
        return self._mod.inject(self._ctx, port, data)

    def forward(self, port: int, frames: list[bytes], start: int, gate: bytearray,
                sinks: dict[int, list[bytes]], origin: float,
                quiet: float, queues: NativeQueues | None = None) -> tuple[Any, ...]:
        """Run ``frames[start:]`` from ``port`` through the native forwarding loop
        (``rt_loop.c``: what it does, where it stops and what it returns), with the
        native egress queues ``queues`` (``rt_queues.c``) for the ports they hold."""
        return self._mod.forward(self._ctx, port, frames, start, gate, sinks,  # type: ignore[no-any-return]
                                 origin, quiet, None if queues is None else queues.capsule)

    def native_queues(self, num_queues: int) -> NativeQueues:
        """Egress queues in C for this pipeline's packets (:class:`NativeQueues`)."""
        self._settle()
        return NativeQueues(self, num_queues)

    def work_of(self, items: list[tuple[Any, ...]]) -> deque[_Work]:
        """The work items the native loop handed back, as QueuedSwitch runs them."""
        work: deque[_Work] = deque()
        self._items(items, work)
        return work

    def _items(self, items: list[tuple[Any, ...]], work: deque[_Work]) -> None:
        for stage, port, length, prio, iport, cap in items:
            work.append(_Work(STAGES[stage], port, b"", hdr=cap, sm=_SM(prio, iport),
                              length=length))

    def _ingress(self, w: _Work, work: deque[_Work]) -> None:
        self._settle()
        cap = w.hdr if w.hdr is not None and w.meta is None else None
        self._items(self._mod.ingress(self._ctx, w.port, w.data, cap), work)

    def _egress(self, w: _Work, work: deque[_Work], out: list[PacketOut]) -> None:
        q = w.queue
        qinfo = None
        if q is not None:
            qinfo = (int(q.packet.enq_time_us) & 0xFFFFFFFF,
                     min(q.packet.enq_qdepth, (1 << 19) - 1),
                     min(q.deq_qdepth, (1 << 19) - 1),
                     int(q.deq_timedelta_us) & 0xFFFFFFFF)
        outs, items = self._mod.egress(self._ctx, w.hdr, qinfo)
        out.extend(PacketOut(p, d) for p, d in outs)
        self._items(items, work)

    # ------------------------------------------------------------ table mirroring
    def _sync_default(self, lay: Any) -> None:
        st = lay.state
        act = -1 if st.default_action is None else lay.index.get(id(st.default_action), -1)
        self._mod.tbl_default(self._ctx, lay.tid, act, list(st.default_cp_args))

    def _sync_entry(self, lay: Any, handle: int) -> None:
        if self._pending:
            self._flush_deletes(lay.tid)
        st = lay.state
        row = st.deferred(handle)
        if row is not None:
            self._mod.tbl_put_rows(self._ctx, lay.tid, [row], lay.index)
            return
        e = st.built(handle)
        if e is None:
            self._mod.tbl_del(self._ctx, lay.tid, handle)
            return
        vals, masks, plen = [], [], 0
        for m in e.match:
            if m[0] == "r":
                vals.append(m[1])
                masks.append(m[2])
            else:
                vals.append(m[0])
                masks.append(m[1])
                if len(m) > 2:
                    plen = m[2]
        group = None
        if e.group is not None:
            group = [(lay.index.get(id(a), -1), list(cp)) for a, cp, _rt in e.group]
        self._mod.tbl_put(self._ctx, lay.tid, handle, vals, masks, plen, e.priority, e.order,
                          lay.index.get(id(e.action), -1), list(e.args), group, e.packets,
                          e.bytes, e.last_hit, e, st.meter_factory is not None)

    def _lay(self, table: str) -> Any:
        lay = self._layouts.get(table)      # the full name (P4Runtime's): no resolving
        return lay if lay is not None else self._layouts[self._table_name(table)]

    def table_add(self, table: str, keys: Any, action: str, args: list[int],
                  priority: int | None = None) -> int:
        h = super().table_add(table, keys, action, args, priority)
        self._sync_entry(self._lay(table), h)
        return h

    def table_add_checked(self, table: str, match: tuple[Any, ...], action: Any,
                          args: list[int], priority: int | None = None,
                          unique: bool = False) -> int:
        lay = self._lay(table)
        h: int = lay.state.add_checked(match, action, args, priority, unique)
        self._sync_later(lay, h)
        return h

    def table_modify_checked(self, table: str, handle: int, action: Any,
                             args: list[int]) -> None:
        lay = self._lay(table)
        lay.state.modify_checked(handle, action, args)
        self._sync_later(lay, handle)

    # ------------------------------------------------------------ batched mirroring
    def synced_batch(self) -> _SyncedBatch:
        """A context in which checked adds and modifies reach the C tables at its
        end, one ``tbl_put_rows``/``tbl_put_entries`` call per table, and deletes made
        through ``checked_ops`` one ``tbl_del`` call per table before them (P4Runtime
        Write batches, which hold the device lock throughout: no packet sees the
        tables in between).
        Anything that reads or changes C table state on the way settles the pending
        ones first. (A plain object, not a generator: a batch of one update pays for
        it too.)"""
        return _SyncedBatch(self)

    def _sync_later(self, lay: Any, handle: int) -> None:
        if self._pending is None:
            self._sync_entry(lay, handle)
            return
        slot = self._pending.get(lay.tid)
        if slot is None:
            slot = self._pending[lay.tid] = _Pending(lay)
        slot.put.append(handle)

    def checked_ops(self, table: str) -> CheckedOps:
        """``table_add_checked`` / ``table_modify_checked`` / ``table_delete`` of one
        table as closures (P4Runtime's plain writes, see :class:`CheckedOps`). Inside a
        synced_batch a delete reaches the C table at the batch's end too, with the
        table's other deletes in one ``tbl_del`` call."""
        lay = self._lay(table)
        st, tid = lay.state, lay.tid
        add_checked, modify_checked, st_delete = st.add_checked, st.modify_checked, st.delete
        mod, ctx = self._mod, self._ctx

        def slot() -> _Pending | None:
            pending = self._pending
            if pending is None:
                return None
            got = pending.get(tid)
            if got is None:
                got = pending[tid] = _Pending(lay)
            return got

        def add(match: tuple[Any, ...], action: Any, args: list[int],
                priority: int | None) -> int:
            # P4Runtime has checked its records first: unique (TableState.add_checked)
            h: int = add_checked(match, action, args, priority, True)
            later = slot()
            if later is None:
                self._sync_entry(lay, h)
            else:
                later.put.append(h)
            return h

        def modify(handle: int, action: Any, args: list[int]) -> None:
            modify_checked(handle, action, args)
            later = slot()
            if later is None:
                self._sync_entry(lay, handle)
            else:
                later.put.append(handle)

        def delete(handle: int) -> None:
            st_delete(handle)
            later = slot()
            if later is None:
                mod.tbl_del(ctx, tid, handle)
            else:
                later.deleted.append(handle)

        def bulk() -> tuple[Any, ...] | None:
            later = slot()
            rows = st.bulk_rows() if later is not None else None
            return None if rows is None else (rows, later.put, later.deleted)

        return CheckedOps(add, modify, delete, bulk)

    def _flush_deletes(self, tid: int) -> None:
        """Apply a table's deferred deletes now (before anything else reaches its C
        table: an entry put at once may reuse a deleted entry's key)."""
        pending = self._pending
        slot = pending.get(tid) if pending else None
        if slot is not None and slot.deleted:
            deleted, slot.deleted = slot.deleted, []
            self._mod.tbl_del(self._ctx, tid, deleted)

    def _settle(self) -> None:
        """Mirror the pending entries into C (those deleted since are skipped)."""
        pending = self._pending
        if not pending:
            return
        self._pending = {}
        for slot in pending.values():
            lay = slot.lay
            st = lay.state
            if slot.deleted:
                self._mod.tbl_del(self._ctx, lay.tid, slot.deleted)
            rows, others = st.split_deferred(list(dict.fromkeys(slot.put)))
            entries = []
            for h in others:
                e = st.built(h)
                if e is None:
                    continue          # deleted since
                if e.group is not None:
                    self._sync_entry(lay, h)
                else:
                    entries.append(e)
            if rows:
                self._mod.tbl_put_rows(self._ctx, lay.tid, rows, lay.index)
            if entries:
                self._mod.tbl_put_entries(self._ctx, lay.tid, entries, lay.index,
                                          st.meter_factory is not None)

    def table_add_group(self, table: str, keys: Any, members: list[tuple[str, list[int]]],
                        priority: int | None = None) -> int:
        h = super().table_add_group(table, keys, members, priority)
        self._sync_entry(self._lay(table), h)
        return h

    def table_modify_group(self, table: str, handle: int,
                           members: list[tuple[str, list[int]]]) -> None:
        super().table_modify_group(table, handle, members)
        self._sync_entry(self._lay(table), handle)

    def table_modify(self, table: str, handle: int, action: str, args: list[int]) -> None:
        super().table_modify(table, handle, action, args)
        self._sync_entry(self._lay(table), handle)

    def table_delete(self, table: str, handle: int) -> None:
        lay = self._lay(table)
        lay.state.delete(handle)
        if self._pending:
            self._flush_deletes(lay.tid)
        self._mod.tbl_del(self._ctx, lay.tid, handle)

    def table_clear(self, table: str) -> None:
        self._settle()
        super().table_clear(table)
        lay = self._lay(table)
        self._mod.tbl_clear(self._ctx, lay.tid)
        for h in list(lay.state.entries):
            self._sync_entry(lay, h)

    def table_set_default(self, table: str, action: str, args: list[int]) -> None:
        super().table_set_default(table, action, args)
        self._sync_default(self._lay(table))

    def table_entries(self, table: str) -> list[EntryView]:
        self._settle()
        tid = self._lay(table).tid
        return [self._counted(tid, v) for v in super().table_entries(table)]

    def table_entry(self, table: str, handle: int) -> EntryView:
        self._settle()
        return self._counted(self._lay(table).tid, super().table_entry(table, handle))

    def _counted(self, tid: int, view: EntryView) -> EntryView:
        """The view with the hit counts the C table keeps for its entry."""
        s = self._mod.tbl_stats(self._ctx, tid, view.handle)
        if s is not None:
            view.packets, view.bytes = s[0], s[1]
        return view

    def entry_idle_us(self, table: str, handle: int) -> int:
        self._settle()
        lay = self._lay(table)
        if not lay.state.has(handle):
            raise P4Error(f"table '{lay.state.name}' has no entry with handle {handle}")
        s = self._mod.tbl_stats(self._ctx, lay.tid, handle)
        if s is None:
            return 0
        return max(0, lay.state.clock.now_us() - s[2])

    def idle_in_real_time(self) -> None:
        super().idle_in_real_time()
        self._mod.idle_real_time(self._ctx)

    # ------------------------------------------------------------ replication
    def _sync_repl(self) -> None:
        mirrors = [(s, 0 if kind == "port" else 1, target, self.mirror_cos.get(s, 0))
                   for s, (kind, target) in self.mirror.items()]
        groups = []
        for g, nodes in self.mc_groups.items():
            copies = []
            for node in nodes:
                rid, ports = self.mc_nodes[node]
                copies += [(rid, p) for p in sorted(ports)]
            groups.append((g, copies))
        self._mod.set_repl(self._ctx, mirrors, groups)

    def mirroring_add(self, session: int, port: int, class_of_service: int = 0) -> None:
        super().mirroring_add(session, port, class_of_service)
        self._sync_repl()

    def mirroring_add_mc(self, session: int, mgrp: int, class_of_service: int = 0) -> None:
        super().mirroring_add_mc(session, mgrp, class_of_service)
        self._sync_repl()

    def mirroring_delete(self, session: int) -> None:
        super().mirroring_delete(session)
        self._sync_repl()

    def mc_mgrp_create(self, mgrp: int) -> None:
        super().mc_mgrp_create(mgrp)
        self._sync_repl()

    def mc_node_create(self, rid: int, ports: list[int]) -> int:
        h = super().mc_node_create(rid, ports)
        self._sync_repl()
        return h

    def mc_node_update(self, node: int, ports: list[int]) -> None:
        super().mc_node_update(node, ports)
        self._sync_repl()

    def mc_node_associate(self, mgrp: int, node: int) -> None:
        super().mc_node_associate(mgrp, node)
        self._sync_repl()

    def mc_node_dissociate(self, mgrp: int, node: int) -> None:
        super().mc_node_dissociate(mgrp, node)
        self._sync_repl()

    def mc_node_destroy(self, node: int) -> None:
        super().mc_node_destroy(node)
        self._sync_repl()

    def mc_mgrp_destroy(self, mgrp: int) -> None:
        super().mc_mgrp_destroy(mgrp)
        self._sync_repl()

    # ------------------------------------------------------------ counters, registers
    def _direct_lay(self, name: str) -> Any:
        direct = self._direct(name)
        return None if direct is None else self._by_state[id(direct)]

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        self._settle()
        lay = self._direct_lay(name)
        if lay is not None:
            if not lay.state.has(index):
                raise P4Error(f"direct counter '{name}': no entry with handle {index}")
            s = self._mod.tbl_stats(self._ctx, lay.tid, index)
            return (s[0], s[1]) if s is not None else (0, 0)
        full = resolve_name(name, list(self.pb.counters), "counter")
        self._check(full, self.pb.counters[full].size, index)
        return tuple(self._mod.cnt_read(self._ctx, self._cids[full], index))  # type: ignore

    def counter_write(self, name: str, index: int, packets: int, bytes_: int) -> None:
        self._settle()
        lay = self._direct_lay(name)
        if lay is not None:
            if not lay.state.has(index):
                raise P4Error(f"direct counter '{name}': no entry with handle {index}")
            self._mod.tbl_set_stats(self._ctx, lay.tid, index, packets, bytes_)
            return
        full = resolve_name(name, list(self.pb.counters), "counter")
        self._check(full, self.pb.counters[full].size, index)
        self._mod.cnt_write(self._ctx, self._cids[full], index, packets, bytes_)

    def counter_reset(self, name: str) -> None:
        self._settle()
        lay = self._direct_lay(name)
        if lay is not None:
            for h in lay.state.handles():
                self._mod.tbl_set_stats(self._ctx, lay.tid, h, 0, 0)
            return
        full = resolve_name(name, list(self.pb.counters), "counter")
        self._mod.cnt_reset(self._ctx, self._cids[full])

    @staticmethod
    def _check(name: str, size: int, index: int) -> None:
        if not 0 <= index < size:
            raise P4Error(f"index {index} out of range for '{name}' (size {size})")

    def register_read(self, name: str, index: int) -> int:
        full = resolve_name(name, list(self.pb.registers), "register")
        self._check(full, self.pb.registers[full].size, index)
        return int(self._mod.reg_read(self._ctx, self._rids[full], index))

    def register_write(self, name: str, index: int, value: int) -> None:
        full = resolve_name(name, list(self.pb.registers), "register")
        self._check(full, self.pb.registers[full].size, index)
        self._mod.reg_write(self._ctx, self._rids[full], index, value)

    def register_reset(self, name: str) -> None:
        full = resolve_name(name, list(self.pb.registers), "register")
        self._mod.reg_reset(self._ctx, self._rids[full])

    # ------------------------------------------------------------ benchmarks
    def lookup_cost_ns(self, table: str, keys: list[tuple[int, ...]], rounds: int) -> float:
        """Mean ns per lookup of ``keys`` in the C table (benchmarks)."""
        ns, _hits = self._mod.lookup_bench(self._ctx, self._lay(table).tid, keys, rounds)
        return float(ns)
