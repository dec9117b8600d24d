"""``tailcc show | counters | registers``: what a switch holds and counts."""

from __future__ import annotations

import argparse

from p4.v1 import p4runtime_pb2

from controlplane.commands.target import (
    Session,
    add_target_args,
    non_negative_int,
    open_session,
)
from controlplane.intent import load_intent
from controlplane.p4rt import values
from controlplane.p4rt.client import update
from controlplane.p4rt.errors import P4RuntimeClientError

PORT_QUEUE_SLOTS = 4096   # defines.p4: arrays indexed by port * 8 + queue


def add_parsers(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("show", help="a switch's pipeline, entry counts and counters",
                       description="Summarise one switch: program, entries per table, "
                       "clone sessions and every non-zero counter.")
    add_target_args(s)
    s.set_defaults(func=cmd_show)

    c = sub.add_parser("counters", help="read a counter array",
                       description="Read an indirect counter (all indices, or one). "
                       "Arrays of 4096 cells are shown as port/queue (index = port*8+queue).")
    c.add_argument("name", nargs="?", help="counter name (default: list counters)")
    c.add_argument("--index", type=non_negative_int, help="one cell only")
    c.add_argument("--all", action="store_true", help="include cells that are zero")
    add_target_args(c)
    c.set_defaults(func=cmd_counters)

    r = sub.add_parser("registers", help="read (or write) a register array",
                       description="Read a register array, one cell, or write one cell.")
    r.add_argument("name", nargs="?", help="register name (default: list registers)")
    r.add_argument("--index", type=non_negative_int, help="one cell only")
    r.add_argument("--write", metavar="VALUE", help="write VALUE to --index")
    r.add_argument("--all", action="store_true", help="include cells that are zero")
    add_target_args(r)
    r.set_defaults(func=cmd_registers)


def slot_name(index: int, size: int) -> str:
    if size == PORT_QUEUE_SLOTS:
        return f"port {index >> 3} queue {index & 7}"
    return f"[{index}]"


def read_counter(session, name: str, index: int | None = None
                 ) -> list[tuple[int, int, int]]:
    """(index, packets, bytes) of every cell (or of one)."""
    entry = session.builder.counter_entry(name, index)
    out = []
    for e in session.client.read([entry]):
        ce = e.counter_entry
        out.append((ce.index.index, ce.data.packet_count, ce.data.byte_count))
    return sorted(out)


def _list_sizes(s: Session, kind: str) -> int:
    """Print each ``kind`` (counters, registers) of the pipeline with its size."""
    for o in s.index.all(kind):
        print(f"{o.preamble.name}  size {o.size}")
    return 0


def cmd_counters(args: argparse.Namespace) -> int:
    with open_session(args, write=False) as s:
        if not args.name:
            return _list_sizes(s, "counters")
        info = s.index.counter(args.name)
        cells = read_counter(s, args.name, args.index)
        shown = [c for c in cells if args.all or args.index is not None or c[1] or c[2]]
        print(f"{info.preamble.name}: {len(shown)} of {len(cells)} cells")
        for idx, pkts, nbytes in shown:
            print(f"  {slot_name(idx, info.size):>20}  {pkts:>12} pkts  {nbytes:>14} B")
    return 0


def cmd_registers(args: argparse.Namespace) -> int:
    write = args.write is not None
    if write and args.index is None:
        print("tailcc: error: --write needs --index")
        return 2
    with open_session(args, write=write) as s:
        if not args.name:
            return _list_sizes(s, "registers")
        info = s.index.register(args.name)
        if write:
            entry = s.builder.register_write(args.name, args.index, args.write)
            s.client.write([update("MODIFY", entry)])
        cells = []
        for e in s.client.read([s.builder.register_entry(args.name, args.index)]):
            re_ = e.register_entry
            cells.append((re_.index.index, values.decode(re_.data.bitstring or b"\0")))
        cells.sort()
        shown = [c for c in cells if args.all or args.index is not None or c[1]]
        print(f"{info.preamble.name}: {len(shown)} of {len(cells)} cells")
        for idx, value in shown:
            print(f"  {slot_name(idx, info.size):>20}  {value}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    """One switch, or with ``--intent`` and no ``--switch`` every switch of the intent
    (an unreachable one is reported and the others are still shown)."""
    if args.intent and not args.switch and not args.address:
        failed = 0
        for sw in load_intent(args.intent).switches:
            try:
                _show_one(argparse.Namespace(**{**vars(args), "switch": sw.name}))
            except P4RuntimeClientError as exc:
                print(f"{sw.name}: error: {exc}")
                failed += 1
        return 1 if failed else 0
    _show_one(args)
    return 0


def _show_one(args: argparse.Namespace) -> None:
    with open_session(args, write=False) as s:
        arb = s.client.arbitration
        print(f"{s.target.name}: {s.target.address} device {s.target.device_id} "
              f"(primary election id {arb.election_id if arb else '?'})")
        print(f"  pipeline: {len(s.index.all('tables'))} tables, "
              f"{len(s.index.all('counters'))} counters, "
              f"{len(s.index.all('registers'))} registers")
        entries = list(s.client.read([p4runtime_pb2.TableEntry()]))
        per_table: dict[int, int] = {}
        for e in entries:
            per_table[e.table_entry.table_id] = per_table.get(e.table_entry.table_id, 0) + 1
        for info in s.index.all("tables"):
            print(f"  {info.preamble.name:<48} {per_table.get(info.preamble.id, 0):>6} "
                  f"entries (size {info.size})")
        pre = p4runtime_pb2.PacketReplicationEngineEntry()
        pre.clone_session_entry.session_id = 0
        sessions = list(s.client.read([pre]))
        print(f"  clone sessions: {len(sessions)}")
        for c in s.index.all("counters"):
            for idx, pkts, nbytes in read_counter(s, c.preamble.name):
                if pkts or nbytes:
                    print(f"  {c.preamble.name}{slot_name(idx, c.size)}: {pkts} pkts, "
                          f"{nbytes} B")
