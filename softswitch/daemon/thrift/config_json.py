"""The BMv2 JSON ``bm_get_config`` gives: what ``simple_switch_CLI`` learns names from.

The CLI reads the program's tables (keys, their match kinds and widths, actions),
actions (parameters and widths), counters, meters and registers from the JSON the switch
hands it. A pipeline loaded from p4c's BMv2 JSON (bare or in PI's wrapper) gives that
document as it came. Any other pipeline (P4 source, a softswitch artifact) gives a
document made from its P4Info with what the CLI reads: names and ids as in P4Info (p4c's
BMv2 JSON uses the same names), each key field a field of a header named as p4c names it
(:func:`_target`).
"""

from __future__ import annotations

import json
from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from softswitch.p4runtime import p4config
from softswitch.p4runtime.errors import P4RuntimeError

_MATCH = {p4info_pb2.MatchField.EXACT: "exact", p4info_pb2.MatchField.LPM: "lpm",
          p4info_pb2.MatchField.TERNARY: "ternary", p4info_pb2.MatchField.RANGE: "range",
          p4info_pb2.MatchField.OPTIONAL: "optional"}
_METER_UNIT = {p4info_pb2.MeterSpec.BYTES: "bytes"}


def config_json(config: p4runtime_pb2.ForwardingPipelineConfig) -> str:
    """The BMv2 JSON of a loaded pipeline."""
    given = _bmv2_document(config.p4_device_config)
    return given if given is not None else json.dumps(from_p4info(config.p4info))


def _bmv2_document(device_config: bytes) -> str | None:
    """The BMv2 JSON a device config carries (bare, or in PI's ``p4.tmp.P4DeviceConfig``
    wrapper); None for any other config."""
    try:
        wrapper = p4config.unwrap(device_config)
    except P4RuntimeError:
        wrapper = None
    if wrapper is not None:
        device_config = wrapper.device_data
    try:
        doc = json.loads(device_config)
    except (ValueError, UnicodeDecodeError):
        return None
    if isinstance(doc, dict) and "pipelines" in doc and "header_types" in doc:
        return device_config.decode()
    return None


def table_match_type(kinds: set[str]) -> str:
    """The ``match_type`` p4c's BMv2 back end gives a table with these key kinds."""
    if "range" in kinds:
        return "range"
    if kinds & {"ternary", "optional"}:
        return "ternary"
    return "lpm" if "lpm" in kinds else "exact"


def _target(name: str, table: str) -> tuple[str, str]:
    """The (header, field) of a key's P4Info name: ``hdr.ipv4.dst_addr`` → ``ipv4``,
    ``dst_addr`` (p4c names the header instance without its struct); a name without a
    dot (an ``@name``) is a field of the table's own header, so two tables' ``@name``
    keys of other widths stay apart."""
    parts = name.split(".")
    if len(parts) >= 3:
        return ".".join(parts[1:-1]), parts[-1]
    return (parts[0], parts[1]) if len(parts) == 2 else (table, name)


def from_p4info(info: p4info_pb2.P4Info) -> dict[str, Any]:
    """A BMv2 JSON document with what simple_switch_CLI reads, made from P4Info."""
    actions = {a.preamble.id: a.preamble.name for a in info.actions}
    fields: dict[str, dict[str, int]] = {}
    tables = []
    for t in info.tables:
        keys = []
        for m in t.match_fields:
            header, field = _target(m.name, t.preamble.name)
            fields.setdefault(header, {})[field] = m.bitwidth
            keys.append({"match_type": _MATCH.get(m.match_type, "exact"),
                         "target": [header, field], "name": m.name, "mask": None})
        tables.append({
            "name": t.preamble.name, "id": t.preamble.id, "key": keys,
            "match_type": table_match_type({k["match_type"] for k in keys}),
            "type": "simple", "max_size": t.size,
            "support_timeout": t.idle_timeout_behavior != p4info_pb2.Table.NO_TIMEOUT,
            "actions": [actions[r.id] for r in t.action_refs if r.id in actions]})
    headers = sorted(fields)
    return {
        "header_types": [{"name": f"{h}_t", "id": i, "fields": [[f, w, False] for f, w in
                                                                fields[h].items()]}
                         for i, h in enumerate(headers)],
        "headers": [{"name": h, "id": i, "header_type": f"{h}_t", "metadata": True}
                    for i, h in enumerate(headers)],
        "actions": [{"name": a.preamble.name, "id": a.preamble.id, "primitives": [],
                     "runtime_data": [{"name": p.name, "bitwidth": p.bitwidth}
                                      for p in a.params]} for a in info.actions],
        "pipelines": [{"name": "ingress", "id": 0, "tables": tables, "action_profiles": []}],
        "counter_arrays": _counters(info),
        "meter_arrays": _meters(info),
        "register_arrays": [{"name": r.preamble.name, "id": r.preamble.id, "size": r.size,
                             "bitwidth": r.type_spec.bitstring.bit.bitwidth
                             or r.type_spec.bitstring.int.bitwidth}
                            for r in info.registers],
    }


def _counters(info: p4info_pb2.P4Info) -> list[dict[str, Any]]:
    tables = {t.preamble.id: t.preamble.name for t in info.tables}
    out: list[dict[str, Any]] = [{"name": c.preamble.name, "id": c.preamble.id,
                                  "is_direct": False, "size": c.size} for c in info.counters]
    out += [{"name": c.preamble.name, "id": c.preamble.id, "is_direct": True,
             "binding": tables.get(c.direct_table_id, "")} for c in info.direct_counters]
    return out


def _meters(info: p4info_pb2.P4Info) -> list[dict[str, Any]]:
    tables = {t.preamble.id: t.preamble.name for t in info.tables}
    out: list[dict[str, Any]] = [
        {"name": m.preamble.name, "id": m.preamble.id, "is_direct": False, "size": m.size,
         "type": _METER_UNIT.get(m.spec.unit, "packets"), "rate_count": 2}
        for m in info.meters]
    out += [{"name": m.preamble.name, "id": m.preamble.id, "is_direct": True,
             "binding": tables.get(m.direct_table_id, ""),
             "type": _METER_UNIT.get(m.spec.unit, "packets"), "rate_count": 2}
            for m in info.direct_meters]
    return out
