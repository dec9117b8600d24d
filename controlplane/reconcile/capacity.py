"""Will the plan fit? Table sizes from the P4Info, checked before anything is written.

A target refuses an insert into a full table only when it reaches it, half-way
through an apply (and reports it in its own words: BMv2 says ``UNKNOWN: Error when
adding match entry to target``). Counting first turns that into one clear refusal
that names every table that would overflow, with the numbers — for ``--dry-run`` too.
The count is exact for the tables the controller reads: their current entries (also
ones the intent does not own), minus the plan's deletes, plus its inserts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from p4.v1 import p4runtime_pb2

from controlplane.p4rt import P4InfoIndex
from controlplane.reconcile.diff import Plan


class CapacityError(Exception):
    """The intent needs more entries than a table holds."""


def _table_entries(entities: Iterable[p4runtime_pb2.Entity]) -> Counter[int]:
    counts: Counter[int] = Counter()
    for e in entities:
        if e.WhichOneof("entity") == "table_entry" and not e.table_entry.is_default_action:
            counts[e.table_entry.table_id] += 1
    return counts


def overflows(index: P4InfoIndex, current: list[p4runtime_pb2.Entity], plan: Plan
              ) -> list[str]:
    """One line per table the plan would overflow: name, entries after the plan, size."""
    after = _table_entries(current)
    for change in plan.changes:
        entity = change.entity
        if entity.WhichOneof("entity") != "table_entry" or entity.table_entry.is_default_action:
            continue
        if change.kind == "INSERT":
            after[entity.table_entry.table_id] += 1
        elif change.kind == "DELETE":
            after[entity.table_entry.table_id] -= 1
    out = []
    for table in index.all("tables"):
        size = table.size
        needed = after.get(table.preamble.id, 0)
        if size and needed > size:
            out.append(f"{table.preamble.name}: {needed} entries needed, the table holds "
                       f"{size}")
    return out


def check_capacity(index: P4InfoIndex, current: list[p4runtime_pb2.Entity],
                   plan: Plan) -> None:
    problems = overflows(index, current, plan)
    if problems:
        raise CapacityError("the intent does not fit the pipeline: " + "; ".join(problems)
                            + "; nothing was written")
