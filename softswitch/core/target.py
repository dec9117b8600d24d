"""The control-plane side of a loaded program, whatever its architecture.

:class:`Target` is what the P4Runtime server, the STF runner and the runtime CLI drive
(:class:`~softswitch.core.control.SwitchControl`): tables, action profiles and
selectors, counters, registers, meters, clone sessions and multicast groups (the
packet replication engine), digests and parser value sets — all of them objects the
program builder made. Each architecture adds its packet path on top:
:class:`softswitch.v1model.switch.Switch` (BMv2 ``simple_switch``'s order of
operations) and :class:`softswitch.pna.nic.Nic` (PNA's main_parser … main_deparser
with host and network ports).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from softswitch.core.blocks import match_keys
from softswitch.core.build import ProgramBuilder
from softswitch.core.control import ActionInfo, EntryView, KeyInfo, KeyMatch, TableInfo
from softswitch.core.execution import ExitSignal
from softswitch.core.tables import ActionDef, CheckedOps, TableState
from softswitch.diagnostics import P4Error
from softswitch.frontend import elaborate as E
from softswitch.frontend import types as T


def resolve_name(name: str, names: Sequence[str], what: str) -> str:
    """Exact control-plane name or a unique dotted suffix of one."""
    if name in names:
        return name
    cands = [n for n in names if n.endswith("." + name)]
    if len(cands) == 1:
        return cands[0]
    if not cands:
        raise P4Error(f"no {what} named '{name}'")
    raise P4Error(f"{what} name '{name}' is ambiguous: {', '.join(sorted(cands))}")


B = TypeVar("B", bound=ProgramBuilder)


def build_program(checked: Any, package: str, target: str, roles: Sequence[str],
                  builder: type[B]) -> tuple[B, dict[str, Any]]:
    """Elaborate ``checked``, check its main is a ``package``, and compile the block
    passed for each of ``roles`` (the package's parameters) with ``builder``: the
    program builder, finished, and role -> compiled block."""
    program = getattr(checked, "program", checked)
    elab = E.elaborate(checked)
    where = elab.main.loc if elab.main is not None else None
    if elab.package is None or elab.package.name != package:
        raise P4Error(f"the {target} target runs programs whose main is a {package}", where)
    pb = builder(program, elab)
    blocks: dict[str, Any] = {}
    for role in roles:
        blk = elab.top_block(role)
        if blk is None:
            raise P4Error(f"{package} argument '{role}' is not a parser/control instance",
                          where)
        blocks[role] = pb.compile_block(blk)
    error_key_widths(pb)
    pb.finish()
    return pb, blocks


class Target:
    """A loaded program's control-plane objects and its top-level blocks."""

    def __init__(self, pb: ProgramBuilder, roles: dict[str, Any], types: dict[str, Any]) -> None:
        self.pb = pb
        self.rt = pb.runtime
        self.clock = pb.clock
        self.roles = roles
        self.hdr_cls = types["H"]
        self.meta_cls = types["M"]
        self.mirror: dict[int, tuple[str, int]] = {}
        # P4Runtime CloneSessionEntry.class_of_service per session: the queue (priority)
        # clones of that session use. BMv2 ignores it (clones get priority 0); softswitch
        # honours it so a switch-generated packet (a Fast CNP) can skip a congested queue.
        self.mirror_cos: dict[int, int] = {}
        self.mc_groups: dict[int, list[int]] = {}
        self.mc_nodes: dict[int, tuple[int, list[int]]] = {}
        self._next_node = 0
        self.digests = self.rt.digests
        self.logs = self.rt.logs
        for state in pb.tables.values():
            state.clock = self.clock

    def _run_control(self, role: str, *args: Any) -> Any:
        """Apply a top-level control; its copy-out values replace the arguments."""
        try:
            return self.roles[role](*args)
        except ExitSignal as e:
            return e.values if e.values is not None else args

    # ------------------------------------------------------------ inspection
    def tables(self) -> list[TableInfo]:
        return [self._info(n) for n in self.pb.tables]

    def table_info(self, name: str) -> TableInfo:
        return self._info(self._table_name(name))

    def _table_name(self, name: str) -> str:
        if name in self.pb.tables:        # the full name: one dict probe per write
            return name
        return resolve_name(name, list(self.pb.tables), "table")

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
                          args: list[int], priority: int | None = None,
                          unique: bool = False) -> int:
        """``table_add`` of an entry already validated (``TableState.add_checked``, and
        its ``unique``): P4Runtime's batched writes."""
        return self.pb.tables[self._table_name(table)].add_checked(match, action, args,
                                                                   priority, unique)

    def table_modify_checked(self, table: str, handle: int, action: ActionDef,
                             args: list[int]) -> None:
        """``table_modify`` with an action and arguments already validated."""
        self.pb.tables[self._table_name(table)].modify_checked(handle, action, args)

    def checked_ops(self, table: str) -> CheckedOps:
        """The table's ``add_checked``/``modify_checked``/``delete`` as bound operations
        (:class:`CheckedOps`): what P4Runtime's plain writes call per update,
        with the table resolved once."""
        st = self.pb.tables[self._table_name(table)]
        return CheckedOps(st.add_checked, st.modify_checked, st.delete)

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

    def table_entry(self, table: str, handle: int) -> EntryView:
        return self.pb.tables[self._table_name(table)].view(handle)

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

    def mc_node_update(self, node: int, ports: list[int]) -> None:
        """Give a replication node new ports (BMv2 ``mc_node_update``); its rid stays."""
        if node not in self.mc_nodes:
            raise P4Error(f"no multicast node with handle {node}")
        self.mc_nodes[node] = (self.mc_nodes[node][0], list(ports))

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
        return self.pb.counters[resolve_name(name, list(self.pb.counters), "counter")].read(index)

    def _direct(self, name: str) -> Any:
        names = list(self.pb.direct_counters)
        if name in names or any(n.endswith("." + name) for n in names):
            try:
                return self.pb.direct_counters[resolve_name(name, names, "direct counter")]
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
        c = self.pb.counters[resolve_name(name, list(self.pb.counters), "counter")]
        c.write(index, packets, bytes_)

    def counter_reset(self, name: str) -> None:
        direct = self._direct(name)
        if direct is not None:
            for e in direct.entries.values():
                e.packets = e.bytes = 0
            return
        self.pb.counters[resolve_name(name, list(self.pb.counters), "counter")].reset()

    def register_read(self, name: str, index: int) -> int:
        r = self.pb.registers[resolve_name(name, list(self.pb.registers), "register")]
        return r.cp_read(index)

    def register_write(self, name: str, index: int, value: int) -> None:
        r = self.pb.registers[resolve_name(name, list(self.pb.registers), "register")]
        r.cp_write(index, value)

    def register_reset(self, name: str) -> None:
        self.pb.registers[resolve_name(name, list(self.pb.registers), "register")].reset()

    def _meter_cells(self, name: str) -> list[Any]:
        """The meter cells behind a name: an indirect meter array, or the entries of
        the table a direct meter belongs to (indexed by entry handle)."""
        names = list(self.pb.meters) + list(self.pb.direct_meters)
        full = resolve_name(name, names, "meter")
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

    def meter_get_rates(self, name: str, index: int) -> list[tuple[float, int]]:
        """BMv2 ``meter_get_rates``: (rate per µs, burst) for committed then peak;
        none for a cell never configured."""
        return [(r.info_rate, r.burst_size) for r in reversed(self._meter_cell(name, index).rates)]

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
        vs = self.pb.value_sets[resolve_name(name, list(self.pb.value_sets), "value set")]
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


def error_key_widths(pb: ProgramBuilder) -> None:
    """Give ``error``-typed table keys BMv2's error width, so the control plane (STF,
    runtime CLI) can match any error code. Before ``pb.finish()``: const entries are
    installed there. P4Info keeps bitwidth 0 for them, as p4c's P4Info does (it treats
    ``error`` keys like strings)."""
    for name, state in pb.tables.items():
        keys = match_keys(pb.table_infos.get(name))
        for spec, key in zip(state.keys, keys, strict=False):
            if isinstance(T.strip_newtype(getattr(key.expr, "type", None)), T.ErrorType):
                spec.width = ERROR_WIDTH
