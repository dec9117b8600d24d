"""``tailcc table add|modify|delete|list``: single entries by name, p4runtime-shell style.

``tailcc table add ipv4_lpm hdr.ipv4.dst_addr=10.0.0.0/8 --action set_next_hop port=1
src_mac=00:aa:bb:cc:dd:ee dst_mac=00:00:00:00:00:02``
"""

from __future__ import annotations

import argparse

from p4.v1 import p4runtime_pb2

from controlplane.commands.target import (
    Session,
    UsageError,
    add_target_args,
    non_negative_int,
    open_session,
)
from controlplane.p4rt.client import update
from controlplane.p4rt.describe import entity_text
from controlplane.p4rt.entities import to_entity
from controlplane.p4rt.rollback import write_all_or_nothing


def add_parsers(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("table", help="add, modify, delete or list table entries",
                       description="Edit one table's entries by name. Values use "
                       "p4runtime-shell syntax: 10.0.0.0/8 (lpm), v&&&m (ternary), "
                       "lo..hi (range), MAC and IP strings, ints.")
    tsub = t.add_subparsers(dest="table_cmd", metavar="{add,modify,delete,list}")
    tsub.required = True
    for verb in ("add", "modify", "delete"):
        p = tsub.add_parser(verb, help=f"{verb} one entry")
        p.add_argument("table", help="table name (full, alias or unique suffix)")
        p.add_argument("match", nargs="*", metavar="KEY=VALUE", help="match fields")
        p.add_argument("--action", nargs="+", metavar=("NAME", "PARAM=VALUE"),
                       help="action and its parameters")
        p.add_argument("--priority", type=non_negative_int,
                       help="priority (ternary/range/optional)")
        p.add_argument("--default", action="store_true",
                       help="the table's default entry (modify only)")
        add_target_args(p)
        p.set_defaults(func=cmd_write, verb=verb)
    lst = tsub.add_parser("list", help="list a table's entries (or every table's)")
    lst.add_argument("table", nargs="?", help="table name (default: all tables)")
    lst.add_argument("--counters", action="store_true", help="with direct counter data")
    add_target_args(lst)
    lst.set_defaults(func=cmd_list)


def parse_pairs(items: list[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"{what} {item!r}: expected NAME=VALUE")
        if key in out:
            raise UsageError(f"{what} {key!r} given twice")
        out[key] = value
    return out


def cmd_write(args: argparse.Namespace) -> int:
    verb = {"add": "INSERT", "modify": "MODIFY", "delete": "DELETE"}[args.verb]
    if args.default and verb != "MODIFY":
        raise UsageError("a default entry can only be modified (table modify --default)")
    if verb != "DELETE" and not args.action:
        raise UsageError(f"table {args.verb} needs --action NAME [PARAM=VALUE ...]")
    match = parse_pairs(args.match, "match field")
    action, params = (args.action[0], parse_pairs(args.action[1:], "action parameter")) \
        if args.action else (None, {})
    with open_session(args, write=True) as s:
        if verb == "DELETE" and action is None:
            entry = s.builder.table_entry(args.table, match=match, priority=args.priority,
                                          action=_any_action(s, args.table))
        else:
            entry = s.builder.table_entry(args.table, match=match, action=action,
                                          params=params, priority=args.priority,
                                          default=args.default)
        # One update: all or nothing by itself on every target (CONTINUE_ON_ERROR,
        # never an atomic mode BMv2 would refuse); a refusal names the entry.
        write_all_or_nothing(s.client, [update(verb, entry)], s.index)
        text = entity_text(s.index, to_entity(entry))
        if verb == "DELETE":
            text = text.split(" -> ")[0]     # a delete names the key, not an action
        print(f"{s.target.name}: {args.verb} {text}")
    return 0


def _any_action(s: Session, table: str) -> str:
    """DELETE keys by match only; P4Runtime ignores the action, the builder wants one."""
    info = s.index.table(table)
    actions = [a for a in s.index.table_actions(info) if not a.params]
    if actions:
        return actions[0].preamble.name
    raise UsageError(f"table {info.preamble.name}: give --action for delete "
                     "(the table has no parameterless action)")


def cmd_list(args: argparse.Namespace) -> int:
    with open_session(args, write=False) as s:
        if args.table:
            tables = [s.index.table(args.table)]
        else:
            tables = s.index.all("tables")
        total = 0
        for info in tables:
            flt = p4runtime_pb2.TableEntry(table_id=info.preamble.id)
            if args.counters:
                flt.counter_data.SetInParent()
            entities = list(s.client.read([flt]))
            total += len(entities)
            if not entities and not args.table:
                continue
            print(f"{info.preamble.name}: {len(entities)} entries")
            for e in sorted(entities, key=lambda x: -x.table_entry.priority):
                extra = ""
                if args.counters and e.table_entry.HasField("counter_data"):
                    cd = e.table_entry.counter_data
                    extra = f"  [{cd.packet_count} pkts, {cd.byte_count} B]"
                print(f"  {entity_text(s.index, e)}{extra}")
        if not args.table:
            print(f"{total} entries in {len(tables)} tables")
    return 0
