"""Build P4Runtime entities by name, and print them back the way they were typed.

``EntityBuilder(index).table_entry("MyIngress.ipv4_lpm", match={"hdr.ipv4.dstAddr":
"10.0.0.0/8"}, action="set_nhop", params={...})`` is what both the controller and the
PTF suites write; all ids, widths and byte encodings come from the P4Info, so names
are the only thing a caller needs to know about the program.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controlplane.p4rt import values
from controlplane.p4rt.errors import BadValueError
from controlplane.p4rt.p4info import P4InfoIndex

MF = p4info_pb2.MatchField
NEEDS_PRIORITY = {MF.TERNARY, MF.RANGE, MF.OPTIONAL}
MatchValue = int | str | tuple[int, int]


class EntityBuilder:
    """Entities of one P4Info, built from names and p4runtime-shell style values."""

    def __init__(self, index: P4InfoIndex) -> None:
        self.index = index
        # Per table id: whether its entries need a priority; per action id: its
        # parameters as (name, id, bitwidth). Read once from the P4Info: every entry
        # asks again, and protobuf's repeated fields build a wrapper per element read.
        self._needs_priority: dict[int, bool] = {}
        self._params: dict[int, tuple[tuple[str, int, int], ...]] = {}

    # --- tables ------------------------------------------------------------------------
    def table_entry(self, table: str, match: Mapping[str, MatchValue] | None = None,
                    action: str | None = None, params: Mapping[str, Any] | None = None,
                    priority: int | None = None, default: bool = False,
                    member_id: int | None = None, group_id: int | None = None,
                    into: p4runtime_pb2.TableEntry | None = None,
                    ) -> p4runtime_pb2.TableEntry:
        """One table entry; ``default=True`` builds the table's default entry.
        ``into`` fills an existing (empty) message in place, e.g. ``Entity().table_entry``."""
        info = self.index.table(table)
        entry = into if into is not None else p4runtime_pb2.TableEntry()
        entry.table_id = info.preamble.id
        if default:
            if match:
                raise BadValueError(f"{info.preamble.name}: a default entry has no match")
            entry.is_default_action = True
        else:
            for name, value in (match or {}).items():
                self._add_match(entry, info, name, value)
            self._set_priority(entry, info, priority)
        if member_id is not None:
            entry.action.action_profile_member_id = member_id
        elif group_id is not None:
            entry.action.action_profile_group_id = group_id
        elif action is not None:
            self.action(action, params or {}, table=info, into=entry.action.action)
        elif not default:
            raise BadValueError(f"{info.preamble.name}: an entry needs an action")
        return entry

    def table_entity(self, table: str, **kwargs: Any) -> p4runtime_pb2.Entity:
        """:meth:`table_entry` built directly inside an ``Entity`` (no copy)."""
        entity = p4runtime_pb2.Entity()
        self.table_entry(table, into=entity.table_entry, **kwargs)
        return entity

    def table_wildcard(self, table: str | None = None) -> p4runtime_pb2.TableEntry:
        """A Read filter: every entry of ``table`` (or of every table when None)."""
        return p4runtime_pb2.TableEntry(
            table_id=self.index.table(table).preamble.id if table else 0)

    def _add_match(self, entry: p4runtime_pb2.TableEntry, info: p4info_pb2.Table,
                   name: str, value: MatchValue) -> None:
        mf = self.index.match_field(info, name)
        what = f"{info.preamble.name} key {mf.name}"
        width = mf.bitwidth
        kind = mf.match_type
        # Parse first, then add in place: a don't-care value adds nothing, and building a
        # FieldMatch to copy in would build every message twice.
        if kind == MF.EXACT:
            entry.match.add(field_id=mf.id).exact.value = values.encode(
                values.parse_scalar(value, width, what))
        elif kind == MF.LPM:
            number, plen = values.parse_lpm(value, width, what)
            if plen:            # /0 is "don't care": P4Runtime omits the field
                lpm = entry.match.add(field_id=mf.id).lpm
                lpm.value, lpm.prefix_len = values.encode(number), plen
        elif kind == MF.TERNARY:
            number, mask = values.parse_ternary(value, width, what)
            if mask:
                t = entry.match.add(field_id=mf.id).ternary
                t.value, t.mask = values.encode(number), values.encode(mask)
        elif kind == MF.RANGE:
            low, high = values.parse_range(value, width, what)
            if (low, high) != (0, (1 << width) - 1):
                r = entry.match.add(field_id=mf.id).range
                r.low, r.high = values.encode(low), values.encode(high)
        elif kind == MF.OPTIONAL:
            entry.match.add(field_id=mf.id).optional.value = values.encode(
                values.parse_scalar(value, width, what))
        else:
            raise BadValueError(f"{what}: match kind {MF.MatchType.Name(kind)} "
                                "is not supported")

    def _set_priority(self, entry: p4runtime_pb2.TableEntry, info: p4info_pb2.Table,
                      priority: int | None) -> None:
        needs = self._needs_priority.get(info.preamble.id)
        if needs is None:
            needs = self._needs_priority[info.preamble.id] = any(
                mf.match_type in NEEDS_PRIORITY for mf in info.match_fields)
        if needs and not priority:
            raise BadValueError(f"{info.preamble.name} has ternary/range/optional keys: "
                                "an entry needs a priority >= 1")
        if not needs and priority:
            raise BadValueError(f"{info.preamble.name} has only exact/lpm keys: "
                                "entries take no priority")
        if priority:
            if not 1 <= priority < 2**31:
                raise BadValueError(f"{info.preamble.name}: priority {priority} is not in "
                                    "1..2147483647")
            entry.priority = priority

    def action(self, name: str, params: Mapping[str, Any],
               table: p4info_pb2.Table | None = None,
               into: p4runtime_pb2.Action | None = None) -> p4runtime_pb2.Action:
        """An action call; every parameter of the action must be given, no others.
        ``into`` fills an existing message (the caller's, without building one to copy)."""
        info = self.index.table_action(table, name) if table else self.index.action(name)
        act = into if into is not None else p4runtime_pb2.Action()
        act.action_id = action_id = info.preamble.id
        spec = self._params.get(action_id)
        if spec is None:
            spec = self._params[action_id] = tuple((p.name, p.id, p.bitwidth)
                                                   for p in info.params)
        if len(params) != len(spec) or any(key not in params for key, _, _ in spec):
            for key in params:
                self.index.param(info, key)      # unknown parameter -> clear error
        for name, param_id, width in spec:
            if name not in params:
                raise BadValueError(f"action {info.preamble.name}: parameter {name!r} "
                                    "is missing")
            number = values.parse_scalar(params[name], width,
                                         f"action {info.preamble.name} parameter {name}")
            act.params.add(param_id=param_id, value=values.encode(number))
        return act

    # --- action profiles ---------------------------------------------------------------
    def profile_member(self, profile: str, member_id: int, action: str,
                       params: Mapping[str, Any]) -> p4runtime_pb2.ActionProfileMember:
        info = self.index.action_profile(profile)
        member = p4runtime_pb2.ActionProfileMember(action_profile_id=info.preamble.id,
                                                   member_id=member_id)
        self.action(action, params, into=member.action)
        return member

    def profile_group(self, profile: str, group_id: int, members: list[int],
                      max_size: int = 0) -> p4runtime_pb2.ActionProfileGroup:
        info = self.index.action_profile(profile)
        group = p4runtime_pb2.ActionProfileGroup(
            action_profile_id=info.preamble.id, group_id=group_id, max_size=max_size)
        for member in members:
            group.members.add(member_id=member, weight=1)
        return group

    # --- counters, meters, registers ---------------------------------------------------
    def counter_entry(self, name: str, index: int | None = None) -> p4runtime_pb2.CounterEntry:
        info = self.index.counter(name)
        return _at_index(p4runtime_pb2.CounterEntry(counter_id=info.preamble.id), name,
                         index, info.size)

    def register_entry(self, name: str, index: int | None = None
                       ) -> p4runtime_pb2.RegisterEntry:
        info = self.index.register(name)
        return _at_index(p4runtime_pb2.RegisterEntry(register_id=info.preamble.id), name,
                         index, info.size)

    def register_write(self, name: str, index: int, value: int | str
                       ) -> p4runtime_pb2.RegisterEntry:
        info = self.index.register(name)
        entry = self.register_entry(name, index)
        width = info.type_spec.bitstring.bit.bitwidth or info.type_spec.bitstring.int.bitwidth
        entry.data.bitstring = values.encode(values.parse_scalar(value, width, name))
        return entry

    def meter_entry(self, name: str, index: int, cir: int, cburst: int, pir: int,
                    pburst: int) -> p4runtime_pb2.MeterEntry:
        info = self.index.meter(name)
        _check_index(name, index, info.size)
        entry = p4runtime_pb2.MeterEntry(meter_id=info.preamble.id)
        entry.index.index = index
        entry.config.cir, entry.config.cburst = cir, cburst
        entry.config.pir, entry.config.pburst = pir, pburst
        return entry

    # --- packet replication ------------------------------------------------------------
    @staticmethod
    def multicast_group(group_id: int, ports: list[int | tuple[int, int]]
                        ) -> p4runtime_pb2.PacketReplicationEngineEntry:
        pre = p4runtime_pb2.PacketReplicationEngineEntry()
        pre.multicast_group_entry.multicast_group_id = group_id
        for port in ports:
            egress, instance = port if isinstance(port, tuple) else (port, 0)
            pre.multicast_group_entry.replicas.add(egress_port=egress, instance=instance)
        return pre

    @staticmethod
    def clone_session(session_id: int, ports: list[int], class_of_service: int = 0,
                      packet_length_bytes: int = 0) -> p4runtime_pb2.PacketReplicationEngineEntry:
        pre = p4runtime_pb2.PacketReplicationEngineEntry()
        cs = pre.clone_session_entry
        cs.session_id, cs.class_of_service = session_id, class_of_service
        cs.packet_length_bytes = packet_length_bytes
        for port in ports:
            cs.replicas.add(egress_port=port, instance=0)
        return pre


_Indexed = TypeVar("_Indexed", p4runtime_pb2.CounterEntry, p4runtime_pb2.RegisterEntry)


def _at_index(entry: _Indexed, name: str, index: int | None, size: int) -> _Indexed:
    """``entry`` for cell ``index`` of ``name`` (checked against ``size``), or every cell."""
    if index is not None:
        _check_index(name, index, size)
        entry.index.index = index
    return entry


def _check_index(name: str, index: int, size: int) -> None:
    if size and not 0 <= index < size:
        raise BadValueError(f"{name}: index {index} is not in 0..{size - 1}")


def to_entity(message: Any) -> p4runtime_pb2.Entity:
    """Wrap a table entry, counter entry, ... into the ``Entity`` oneof."""
    entity = p4runtime_pb2.Entity()
    field_name = {
        p4runtime_pb2.TableEntry: "table_entry",
        p4runtime_pb2.CounterEntry: "counter_entry",
        p4runtime_pb2.DirectCounterEntry: "direct_counter_entry",
        p4runtime_pb2.RegisterEntry: "register_entry",
        p4runtime_pb2.MeterEntry: "meter_entry",
        p4runtime_pb2.ActionProfileMember: "action_profile_member",
        p4runtime_pb2.ActionProfileGroup: "action_profile_group",
        p4runtime_pb2.PacketReplicationEngineEntry: "packet_replication_engine_entry",
        p4runtime_pb2.DigestEntry: "digest_entry",
    }.get(type(message))
    if field_name is None:
        if isinstance(message, p4runtime_pb2.Entity):
            return message
        raise TypeError(f"not a P4Runtime entity: {type(message).__name__}")
    getattr(entity, field_name).CopyFrom(message)
    return entity
