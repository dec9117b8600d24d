"""``tailcc load sN-runtime.json``: p4lang/tutorials runtime files through P4Runtime.

The tutorials describe each switch as ``{"target", "p4info", "bmv2_json",
"table_entries": [...], "multicast_group_entries": [...], "clone_session_entries":
[...]}`` with match values as JSON (``["10.0.1.1", 32]`` for LPM, ``[v, mask]`` ternary,
``[lo, hi]`` range). Every entry is built before anything is written, and all go in
one ROLLBACK_ON_ERROR batch (replication entries in a second one), so a bad file
never leaves a switch half-programmed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from p4.config.v1 import p4info_pb2

from controlplane.commands.target import add_target_args, resolve_target
from controlplane.p4rt import Client, EntityBuilder, P4InfoIndex
from controlplane.p4rt.client import update
from controlplane.p4rt.errors import P4RuntimeClientError
from controlplane.p4rt.p4info import load_p4info
from controlplane.reconcile.switch import load_pipeline

MF = p4info_pb2.MatchField


class RuntimeFileError(P4RuntimeClientError):
    """A runtime JSON file that cannot be loaded (names the JSON path)."""


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("load", help="program a switch from a p4lang/tutorials runtime JSON",
                       description="Load sN-runtime.json (p4lang/tutorials format): set "
                       "the pipeline, then write every table, multicast and clone entry "
                       "in one all-or-nothing batch.")
    p.add_argument("runtime", help="the runtime JSON file")
    p.add_argument("--pipeline", metavar="FILE", help="device config to load instead of the "
                   "file's bmv2_json (a .p4 program for softswitch)")
    p.add_argument("--no-pipeline", action="store_true",
                   help="do not set the pipeline; write entries only")
    add_target_args(p)
    p.set_defaults(func=cmd_load)


def cmd_load(args: argparse.Namespace) -> int:
    path = Path(args.runtime)
    conf = _read_json(path)
    p4info_path = args.p4info or _file_key(conf, "p4info", path)
    p4info = load_p4info(p4info_path)
    builder = EntityBuilder(P4InfoIndex(p4info))
    updates = build_updates(conf, builder)        # every entry, before any write
    target = resolve_target(args)
    client = Client(target.address, target.device_id, election_id=target.election_id,
                    timeout=args.timeout)
    try:
        client.connect()
        if not args.no_pipeline:
            client.set_pipeline(p4info, _device_config(args, conf, path, p4info_path))
        tables = [u for u in updates if u.entity.HasField("table_entry")]
        replication = [u for u in updates if not u.entity.HasField("table_entry")]
        client.write(tables, "ROLLBACK_ON_ERROR")
        # Replication entries cannot be rolled back on every target: their own batch.
        client.write(replication, "CONTINUE_ON_ERROR")
    finally:
        client.close()
    print(f"{target.name}: loaded {path.name}: {len(updates)} entries")
    return 0


def _read_json(path: Path) -> dict[str, Any]:
    try:
        conf = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RuntimeFileError(f"{path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise RuntimeFileError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") \
            from None
    if not isinstance(conf, dict):
        raise RuntimeFileError(f"{path}: expected a JSON object at the top")
    return conf


def _file_key(conf: dict[str, Any], key: str, path: Path) -> str:
    value = conf.get(key)
    if not isinstance(value, str) or not value:
        raise RuntimeFileError(f"{path}: {key}: missing (or give --{key.replace('_', '-')})")
    return str(path.parent / value)


def _device_config(args: argparse.Namespace, conf: dict[str, Any], path: Path,
                   p4info_path: str) -> bytes:
    if args.pipeline:
        pipeline = load_pipeline(p4info_path, args.pipeline)
        return pipeline.device_config if pipeline else b""
    bmv2 = Path(_file_key(conf, "bmv2_json", path))
    try:
        return bmv2.read_bytes()
    except OSError as exc:
        raise RuntimeFileError(f"{path}: bmv2_json: {bmv2}: {exc.strerror}") from None


def build_updates(conf: dict[str, Any], b: EntityBuilder) -> list:
    out = []
    for i, flow in enumerate(_list(conf, "table_entries")):
        out.append(_table_update(flow, f"table_entries[{i}]", b))
    for i, group in enumerate(_list(conf, "multicast_group_entries")):
        where = f"multicast_group_entries[{i}]"
        ports = [(_int(r, "egress_port", where), r.get("instance", 0))
                 for r in _list(group, "replicas", where)]
        out.append(update("INSERT", b.multicast_group(
            _int(group, "multicast_group_id", where), ports)))
    for i, session in enumerate(_list(conf, "clone_session_entries")):
        where = f"clone_session_entries[{i}]"
        ports = [_int(r, "egress_port", where) for r in _list(session, "replicas", where)]
        out.append(update("INSERT", b.clone_session(
            _int(session, "clone_session_id", where), ports,
            packet_length_bytes=session.get("packet_length_bytes", 0))))
    return out


def _table_update(flow: Any, where: str, b: EntityBuilder):
    if not isinstance(flow, dict):
        raise RuntimeFileError(f"{where}: expected an object")
    try:
        table = b.index.table(str(flow.get("table", "")))
        match = {name: _match_value(b, table, name, value)
                 for name, value in (flow.get("match") or {}).items()}
        default = bool(flow.get("default_action", False))
        entry = b.table_entry(table.preamble.name, match=match,
                              action=flow.get("action_name"),
                              params=flow.get("action_params") or {},
                              priority=flow.get("priority"), default=default)
    except P4RuntimeClientError as exc:
        raise RuntimeFileError(f"{where}: {exc}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise RuntimeFileError(f"{where}: malformed entry: {exc}") from None
    return update("MODIFY" if default else "INSERT", entry)


def _match_value(b: EntityBuilder, table, name: str, value: Any):
    """JSON lists ([addr, len], [value, mask], [lo, hi]) become the builder's tuples."""
    if not isinstance(value, list):
        return value
    if len(value) != 2:
        raise RuntimeFileError(f"match {name}: expected [value, prefix/mask/high]")
    mf = b.index.match_field(table, name)
    if mf.match_type == MF.LPM:
        return (value[0], int(value[1]))
    if mf.match_type in (MF.TERNARY, MF.RANGE):
        return (value[0], value[1])
    raise RuntimeFileError(f"match {name}: a list value needs an lpm/ternary/range key")


def _list(obj: dict[str, Any], key: str, where: str = "") -> list:
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise RuntimeFileError(f"{where + '.' if where else ''}{key}: expected a list")
    return value


def _int(obj: Any, key: str, where: str) -> int:
    if not isinstance(obj, dict) or not isinstance(obj.get(key), int):
        raise RuntimeFileError(f"{where}.{key}: expected an integer")
    return int(obj[key])


__all__ = ["RuntimeFileError", "build_updates", "cmd_load"]
