"""Entities back into the syntax people type, and a stable identity for diffing.

``show``, ``diff`` and ``table list`` print entries as
``ipv4_lpm hdr.ipv4.dst_addr=10.0.0.0/8 -> set_next_hop(port=1, ...)`` so output can
be pasted back into ``tailcc table add``. Reconciliation compares entries by
:func:`entry_key` (what identifies an entry on the switch) and :func:`entry_value`
(what the entry does), with byte strings made canonical so a server's padded or
canonical answers compare equal to what we built.
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controlplane.p4rt import values
from controlplane.p4rt.p4info import P4InfoIndex

MF = p4info_pb2.MatchField


def match_text(index: P4InfoIndex, table: p4info_pb2.Table,
               fm: p4runtime_pb2.FieldMatch) -> str:
    mf = next((m for m in table.match_fields if m.id == fm.field_id), None)
    name = mf.name if mf else f"field{fm.field_id}"
    width = mf.bitwidth if mf else 0
    kind = fm.WhichOneof("field_match_type")

    def fmt(data: bytes) -> str:
        return values.format_value(values.decode(data), width, name)

    if kind == "exact":
        text = fmt(fm.exact.value)
    elif kind == "lpm":
        text = f"{fmt(fm.lpm.value)}/{fm.lpm.prefix_len}"
    elif kind == "ternary":
        text = f"{fmt(fm.ternary.value)}&&&{hex(values.decode(fm.ternary.mask))}"
    elif kind == "range":
        text = f"{fmt(fm.range.low)}..{fmt(fm.range.high)}"
    elif kind == "optional":
        text = fmt(fm.optional.value)
    else:
        text = "?"
    return f"{name}={text}"


def action_text(index: P4InfoIndex, action: p4runtime_pb2.Action) -> str:
    info = index.by_id("actions", action.action_id)
    widths = {p.id: (p.name, p.bitwidth) for p in info.params}
    args = []
    for p in action.params:
        name, width = widths.get(p.param_id, (f"param{p.param_id}", 0))
        args.append(f"{name}={values.format_value(values.decode(p.value), width, name)}")
    return f"{info.preamble.name}({', '.join(args)})"


def table_entry_text(index: P4InfoIndex, entry: p4runtime_pb2.TableEntry) -> str:
    table = index.by_id("tables", entry.table_id)
    parts = [table.preamble.name]
    if entry.is_default_action:
        parts.append("default")
    parts += [match_text(index, table, fm) for fm in sorted(entry.match,
                                                              key=lambda f: f.field_id)]
    if entry.priority:
        parts.append(f"priority={entry.priority}")
    kind = entry.action.WhichOneof("type")
    if kind == "action":
        parts.append("-> " + action_text(index, entry.action.action))
    elif kind == "action_profile_member_id":
        parts.append(f"-> member {entry.action.action_profile_member_id}")
    elif kind == "action_profile_group_id":
        parts.append(f"-> group {entry.action.action_profile_group_id}")
    return " ".join(parts)


def entity_text(index: P4InfoIndex, entity: p4runtime_pb2.Entity) -> str:
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        return table_entry_text(index, entity.table_entry)
    if kind == "action_profile_member":
        m = entity.action_profile_member
        prof = index.by_id("action_profiles", m.action_profile_id).preamble.name
        return f"{prof} member {m.member_id} -> {action_text(index, m.action)}"
    if kind == "action_profile_group":
        g = entity.action_profile_group
        prof = index.by_id("action_profiles", g.action_profile_id).preamble.name
        members = ", ".join(str(x.member_id) for x in g.members)
        return f"{prof} group {g.group_id} members [{members}]"
    if kind == "packet_replication_engine_entry":
        pre = entity.packet_replication_engine_entry
        if pre.HasField("clone_session_entry"):
            cs = pre.clone_session_entry
            ports = ", ".join(str(r.egress_port) for r in cs.replicas)
            return f"clone session {cs.session_id} -> [{ports}] cos={cs.class_of_service}"
        mg = pre.multicast_group_entry
        ports = ", ".join(f"{r.egress_port}" for r in mg.replicas)
        return f"multicast group {mg.multicast_group_id} -> [{ports}]"
    if kind == "register_entry":
        r = entity.register_entry
        name = index.by_id("registers", r.register_id).preamble.name
        return f"{name}[{r.index.index}] = {values.decode(r.data.bitstring)}"
    return str(entity).replace("\n", " ")


# --- identity and value for reconciliation ----------------------------------------------
def _canon_match(fm: p4runtime_pb2.FieldMatch) -> tuple:
    kind = fm.WhichOneof("field_match_type")
    c = values.canonical
    if kind == "exact":
        return (fm.field_id, kind, c(fm.exact.value))
    if kind == "lpm":
        return (fm.field_id, kind, c(fm.lpm.value), fm.lpm.prefix_len)
    if kind == "ternary":
        return (fm.field_id, kind, c(fm.ternary.value), c(fm.ternary.mask))
    if kind == "range":
        return (fm.field_id, kind, c(fm.range.low), c(fm.range.high))
    if kind == "optional":
        return (fm.field_id, kind, c(fm.optional.value))
    return (fm.field_id, kind)


def entry_key(entity: p4runtime_pb2.Entity) -> tuple:
    """What identifies an entity on the switch (two with one key cannot coexist)."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        e = entity.table_entry
        return (kind, e.table_id, e.is_default_action, e.priority,
                tuple(sorted(_canon_match(fm) for fm in e.match)))
    if kind == "action_profile_member":
        m = entity.action_profile_member
        return (kind, m.action_profile_id, m.member_id)
    if kind == "action_profile_group":
        g = entity.action_profile_group
        return (kind, g.action_profile_id, g.group_id)
    if kind == "packet_replication_engine_entry":
        pre = entity.packet_replication_engine_entry
        if pre.HasField("clone_session_entry"):
            return (kind, "clone", pre.clone_session_entry.session_id)
        return (kind, "mcast", pre.multicast_group_entry.multicast_group_id)
    if kind == "register_entry":
        r = entity.register_entry
        return (kind, r.register_id, r.index.index)
    if kind == "meter_entry":
        m = entity.meter_entry
        return (kind, m.meter_id, m.index.index)
    return (kind, entity.SerializeToString(deterministic=True))


def _canon_action(action: p4runtime_pb2.Action) -> tuple:
    return (action.action_id, tuple(sorted((p.param_id, values.canonical(p.value))
                                           for p in action.params)))


def entry_value(entity: p4runtime_pb2.Entity) -> tuple:
    """What an entity does: equal values mean no write is needed."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        a = entity.table_entry.action
        which = a.WhichOneof("type")
        if which == "action":
            return ("action", _canon_action(a.action))
        return (which, getattr(a, which) if which else None)
    if kind == "action_profile_member":
        return _canon_action(entity.action_profile_member.action)
    if kind == "action_profile_group":
        return tuple(sorted((m.member_id, m.weight or 1)
                            for m in entity.action_profile_group.members))
    if kind == "packet_replication_engine_entry":
        pre = entity.packet_replication_engine_entry
        if pre.HasField("clone_session_entry"):
            cs = pre.clone_session_entry
            return (tuple(sorted((r.egress_port, r.instance) for r in cs.replicas)),
                    cs.class_of_service, cs.packet_length_bytes)
        mg = pre.multicast_group_entry
        return tuple(sorted((r.egress_port, r.instance) for r in mg.replicas))
    if kind == "register_entry":
        return (values.canonical(entity.register_entry.data.bitstring),)
    if kind == "meter_entry":
        c = entity.meter_entry.config
        return (c.cir, c.cburst, c.pir, c.pburst)
    return ()
