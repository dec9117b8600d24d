"""``tailcc load sN-runtime.json``: p4lang/tutorials runtime files through P4Runtime.

The tutorials describe each switch as ``{"target": "bmv2", "p4info", "bmv2_json",
"table_entries": [...], "multicast_group_entries": [...], "clone_session_entries":
[...]}``. Every form their loader (``utils/p4runtime_lib/simple_controller.py`` and
``helper.py``) accepts is accepted here:

- match values: a scalar for exact keys, also as a one-element list (``[1]``);
  ``[addr, prefix_len]`` for LPM, ``[value, mask]`` ternary, ``[low, high]`` range,
  each element again possibly a one-element list; ints (negative ones in two's
  complement), IPv4/IPv6 and MAC strings; action parameters the same way;
- ``"default_action": true`` entries, ``priority``; table and action names as full
  names, aliases or any unique suffix; ``multicast_group_entries`` and
  ``clone_session_entries`` (``replicas``, ``packet_length_bytes``).

``p4info`` and ``bmv2_json`` are found as the tutorials' ``make run`` finds them:
relative to the current directory (the exercise folder, where ``build/`` is), then to
the JSON's own folder, then to its parent (``pod-topo/`` or ``solution/`` beside the
exercise's ``build/``).

Every entry is built (and every problem reported, naming the entry) before anything
is written; then all entries go in one transaction (:mod:`controlplane.p4rt.rollback`),
atomic where the switch grants it and rolled back by the controller where it does not
(BMv2), so a refused entry never leaves a switch half-programmed. The pipeline, once
set, stays set.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from p4.config.v1 import p4info_pb2

from controlplane.commands.target import add_target_args, resolve_target
from controlplane.p4rt import EntityBuilder, P4InfoIndex
from controlplane.p4rt.client import update
from controlplane.p4rt.errors import P4RuntimeClientError
from controlplane.p4rt.p4info import load_p4info
from controlplane.p4rt.rollback import UNKNOWN, Transaction
from controlplane.reconcile.switch import load_pipeline

MF = p4info_pb2.MatchField
TARGETS = ("bmv2",)        # what the tutorials' loader knows


class RuntimeFileError(P4RuntimeClientError):
    """A runtime JSON file that cannot be loaded (names the file and the JSON path)."""


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("load", help="program a switch from a p4lang/tutorials runtime JSON",
                       description="Load sN-runtime.json (p4lang/tutorials format): set "
                       "the pipeline, then write every table, multicast and clone entry "
                       "all or nothing. p4info/bmv2_json are looked up relative to the "
                       "current directory, then the file's folder, then its parent.")
    p.add_argument("runtime", help="the runtime JSON file")
    p.add_argument("--pipeline", metavar="FILE", help="device config to load instead of the "
                   "file's bmv2_json (a .p4 program for softswitch)")
    p.add_argument("--no-pipeline", action="store_true",
                   help="do not set the pipeline; write entries only")
    p.add_argument("--self-rollback", action="store_true",
                   help="never ask the switch for atomic batches: the controller undoes "
                   "a failed load itself, as it must on BMv2")
    add_target_args(p)
    p.set_defaults(func=cmd_load)


def cmd_load(args: argparse.Namespace) -> int:
    path = Path(args.runtime)
    conf = read_runtime_file(path)
    p4info_path = args.p4info or find_file(conf, "p4info", path)
    p4info = load_p4info(p4info_path)
    builder = EntityBuilder(P4InfoIndex(p4info))
    tables, replication = build_updates(conf, builder, str(path))   # all, before writing
    device_config = None
    if not args.no_pipeline:
        device_config = _device_config(args, conf, path, p4info_path)
    target = resolve_target(args)
    client = target.client(args.timeout, False if args.self_rollback else None)
    try:
        client.connect()
        if device_config is not None:
            client.set_pipeline(p4info, device_config)
        # A pipeline just set holds no entries: INSERTs are known to hit absent keys.
        # Otherwise an INSERT that succeeds proves the same (UNKNOWN, never read).
        fresh = None if device_config is not None else UNKNOWN
        tx = Transaction(client, builder.index)
        tx.write(tables, [fresh if u.type == u.INSERT else UNKNOWN for u in tables])
        # Replication entries: no atomic batch (some targets cannot take them back in
        # one); the transaction still rolls everything back if one is refused.
        tx.write(replication, [fresh] * len(replication), atomic=False)
    finally:
        client.close()
    defaults = sum(u.type != u.INSERT for u in tables)
    groups = sum(u.entity.packet_replication_engine_entry.HasField("multicast_group_entry")
                 for u in replication)
    counts = ", ".join(_count(n, what) for n, what in (
        (len(tables) - defaults, "table entr"), (defaults, "default action"),
        (groups, "multicast group"), (len(replication) - groups, "clone session")))
    print(f"{target.name}: loaded {path.name}: {len(tables) + len(replication)} entries "
          f"({counts})")
    return 0


def _count(n: int, what: str) -> str:
    if what.endswith("entr"):
        return f"{n} {what}{'y' if n == 1 else 'ies'}"
    return f"{n} {what}{'' if n == 1 else 's'}"


def read_runtime_file(path: Path) -> dict[str, Any]:
    try:
        conf = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RuntimeFileError(f"{path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise RuntimeFileError(f"{path}: not UTF-8 text: {exc.reason}") from None
    except json.JSONDecodeError as exc:
        raise RuntimeFileError(f"{path}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") \
            from None
    if not isinstance(conf, dict):
        raise RuntimeFileError(f"{path}: expected a JSON object at the top")
    target = conf.get("target")
    if target is not None and target not in TARGETS:
        raise RuntimeFileError(f"{path}: target: unknown target {target!r} (the tutorials' "
                               f"runtime files name {', '.join(TARGETS)})")
    return conf


def candidate_paths(value: str, path: Path) -> list[Path]:
    """Where the tutorials' runs find a file named in a runtime JSON: the current
    directory (``make run`` in the exercise folder), the JSON's folder, its parent."""
    given = Path(value)
    if given.is_absolute():
        return [given]
    here = path.resolve().parent
    return list(dict.fromkeys([Path.cwd() / given, here / given, here.parent / given]))


def find_file(conf: dict[str, Any], key: str, path: Path) -> str:
    value = conf.get(key)
    if not isinstance(value, str) or not value:
        raise RuntimeFileError(f"{path}: {key}: missing or empty (or give "
                               f"--{key.replace('_', '-')})")
    candidates = candidate_paths(value, path)
    for candidate in candidates:
        if candidate.is_file():
            return os.path.relpath(candidate) if not Path(value).is_absolute() \
                else str(candidate)
    looked = ", ".join(str(c) for c in candidates)
    raise RuntimeFileError(f"{path}: {key}: {value} not found (looked in: {looked}); "
                           "build the exercise first (make build: p4c-bm2-ss writes "
                           "build/) or give --" + key.replace("_", "-"))


def _device_config(args: argparse.Namespace, conf: dict[str, Any], path: Path,
                   p4info_path: str) -> bytes:
    if args.pipeline:
        pipeline = load_pipeline(p4info_path, args.pipeline)
        return pipeline.device_config if pipeline else b""
    bmv2 = Path(find_file(conf, "bmv2_json", path))
    try:
        return bmv2.read_bytes()
    except OSError as exc:
        raise RuntimeFileError(f"{path}: bmv2_json: {bmv2}: {exc.strerror}") from None


def build_updates(conf: dict[str, Any], b: EntityBuilder, source: str = ""
                  ) -> tuple[list, list]:
    """(table entry updates, replication updates), every entry built and checked; the
    first problem raises :class:`RuntimeFileError` naming the file and the entry."""
    prefix = f"{source}: " if source else ""
    tables, replication = [], []
    try:
        for i, flow in enumerate(_list(conf, "table_entries")):
            tables.append(_table_update(flow, f"table_entries[{i}]", b))
        for i, group in enumerate(_list(conf, "multicast_group_entries")):
            where = f"multicast_group_entries[{i}]"
            replicas = _replicas(group, where)
            replication.append(update("INSERT", b.multicast_group(
                _int(group, "multicast_group_id", where), replicas)))
        for i, session in enumerate(_list(conf, "clone_session_entries")):
            where = f"clone_session_entries[{i}]"
            replicas = _replicas(session, where)
            length = session.get("packet_length_bytes", 0)
            if isinstance(length, bool) or not isinstance(length, int) or length < 0:
                raise RuntimeFileError(f"{where}.packet_length_bytes: expected an integer "
                                       ">= 0")
            entity = b.clone_session(_int(session, "clone_session_id", where),
                                     [port for port, _ in replicas],
                                     packet_length_bytes=length)
            for replica, (_, instance) in zip(entity.clone_session_entry.replicas,
                                              replicas, strict=True):
                replica.instance = instance
            replication.append(update("INSERT", entity))
    except RuntimeFileError as exc:
        raise RuntimeFileError(prefix + str(exc)) from None
    return tables, replication


def _replicas(obj: Any, where: str) -> list[tuple[int, int]]:
    out = []
    for j, r in enumerate(_list(obj, "replicas", where)):
        w = f"{where}.replicas[{j}]"
        port = _int(r, "egress_port", w)
        instance = r.get("instance", 0)
        if isinstance(instance, bool) or not isinstance(instance, int) or instance < 0:
            raise RuntimeFileError(f"{w}.instance: expected an integer >= 0")
        out.append((port, instance))
    return out


def _table_update(flow: Any, where: str, b: EntityBuilder):
    if not isinstance(flow, dict):
        raise RuntimeFileError(f"{where}: expected an object")
    try:
        table = b.index.table(_str(flow, "table", where))
        default = flow.get("default_action", False)
        if not isinstance(default, bool):
            raise RuntimeFileError(f"{where}.default_action: expected true or false")
        match = flow.get("match") or {}
        if not isinstance(match, dict):
            raise RuntimeFileError(f"{where}.match: expected an object of key: value")
        if default and match:
            raise RuntimeFileError(f"{where}: a default_action entry has no match")
        action = _str(flow, "action_name", where)
        info = b.index.table_action(table, action)
        params = flow.get("action_params") or {}
        if not isinstance(params, dict):
            raise RuntimeFileError(f"{where}.action_params: expected an object")
        widths = {p.name: p.bitwidth for p in info.params}
        params = {name: _scalar(value, widths.get(name, 0),
                                f"{where}.action_params.{name}")
                  for name, value in params.items()}
        priority = flow.get("priority")
        if priority is not None and (isinstance(priority, bool)
                                     or not isinstance(priority, int)):
            raise RuntimeFileError(f"{where}.priority: expected an integer")
        values = {}
        for name, value in match.items():
            mf = b.index.match_field(table, name)
            values[name] = _match_value(mf, value, f"{where}.match.{name}")
        entry = b.table_entry(table.preamble.name, match=values,
                              action=info.preamble.name, params=params,
                              priority=priority or None, default=default)
    except RuntimeFileError:
        raise
    except P4RuntimeClientError as exc:
        raise RuntimeFileError(f"{where}: {exc}") from None
    return update("MODIFY" if default else "INSERT", entry)


def _scalar(value: Any, width: int, where: str) -> int | str:
    """A scalar as the tutorials' ``convert.encode`` takes it: a one-element list is
    its element; negative ints are two's complement in ``width`` bits."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise RuntimeFileError(f"{where}: expected a number or an address string, got "
                               f"{json.dumps(value)}")
    if isinstance(value, int) and value < 0:
        if not width or value < -(1 << (width - 1)):
            raise RuntimeFileError(f"{where}: {value} does not fit in {width} bits")
        value += 1 << width
    return value


def _match_value(mf: p4info_pb2.MatchField, value: Any, where: str) -> Any:
    """JSON match values to the entity builder's forms."""
    kind, width = mf.match_type, mf.bitwidth
    if kind in (MF.EXACT, MF.OPTIONAL):
        return _scalar(value, width, where)
    if not isinstance(value, list) or len(value) != 2:
        shape = {MF.LPM: "[address, prefix length]", MF.TERNARY: "[value, mask]",
                 MF.RANGE: "[low, high]"}.get(kind, "a value")
        raise RuntimeFileError(f"{where}: expected {shape} for this "
                               f"{MF.MatchType.Name(kind).lower()} key, got "
                               f"{json.dumps(value)}")
    if kind == MF.LPM:
        length = value[1][0] if isinstance(value[1], list) and len(value[1]) == 1 \
            else value[1]
        if isinstance(length, bool) or not isinstance(length, int) \
                or not 0 <= length <= width:
            raise RuntimeFileError(f"{where}: prefix length {json.dumps(value[1])} is not "
                                   f"in 0..{width}")
        return (_scalar(value[0], width, where), length)
    if kind in (MF.TERNARY, MF.RANGE):
        return (_scalar(value[0], width, where), _scalar(value[1], width, where))
    raise RuntimeFileError(f"{where}: match kind {MF.MatchType.Name(kind)} is not "
                           "supported")


def _list(obj: Any, key: str, where: str = "") -> list:
    value = obj.get(key, []) if isinstance(obj, dict) else None
    if value is None and isinstance(obj, dict):
        value = []
    if not isinstance(value, list):
        raise RuntimeFileError(f"{where + '.' if where else ''}{key}: expected a list")
    return value


def _str(obj: dict[str, Any], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value:
        raise RuntimeFileError(f"{where}.{key}: expected a name")
    return value


def _int(obj: Any, key: str, where: str) -> int:
    if not isinstance(obj, dict) or isinstance(obj.get(key), bool) \
            or not isinstance(obj.get(key), int):
        raise RuntimeFileError(f"{where}.{key}: expected an integer")
    return int(obj[key])


__all__ = ["RuntimeFileError", "build_updates", "candidate_paths", "cmd_load", "find_file",
           "read_runtime_file"]
