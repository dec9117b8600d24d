"""Plain table-entry updates of a Write batch, decoded from the wire in one C call.

On protobuf's upb runtime a parsed Update is cheap, but reading its fields from Python
is not: each sub-message access builds a wrapper, and those reads are most of what a
batched insert costs. ``entrywire.c`` walks each Update's encoding once and
hands back plain values (:data:`Decoded`). It takes only the common shape — a
table_entry with a direct action, standard match kinds, no meter/counter data, no
default or const flag, no unknown field — and answers None for anything else, which the
server then parses with protobuf as before: every error it reports still comes from the
general path. Given the tables' native plans (``entryplan``), it also checks the
updates of those tables as ``matches.parse``/``actions.parse`` would, and hands back
the canonical key, the switch's match and the arguments (:data:`Checked`): what the
Python plan does, without its per-field Python work. An update it cannot check goes to
the Python plan. Where the decoder is not built (no C compiler, or
``SOFTSWITCH_FASTPATH=off``: ``fastpath.build.load_helper``) every update takes that
general path: same results, slower.
"""

from __future__ import annotations

import logging
from functools import cache
from pathlib import Path
from typing import Any

log = logging.getLogger("softswitch.p4runtime")
SOURCE = Path(__file__).with_name("entrywire.c")

# (field_id, kind, a, b): kind is the FieldMatch oneof name; a, b the byte strings
# (lpm: b is the prefix length; exact/optional: b is None).
Field = tuple[int, str, bytes, Any]
# (update type, table_id, priority, idle_timeout_ns, action_id, fields,
#  ((param_id, value), ...), the TableEntry's encoding, has controller_metadata/metadata)
Decoded = tuple[int, int, int, int, int, tuple[Field, ...], tuple[tuple[int, bytes], ...],
                bytes, int]
# An update of a table with a native plan (entryplan.TablePlan.native) that passed every
# check in C: (update type, table_id, canonical key, idle_timeout_ns, action_id, switch
# match (INSERT only, else None), args (None for a DELETE or without action), the
# TableEntry's encoding, has metadata, True).
# Positions 0, 1, 3, 4, 7 and 8 mean what they mean in Decoded.
Checked = tuple[int, int, Any, int, int, tuple[Any, ...] | None, list[int] | None, bytes,
                int, bool]
CHECKED_LEN = 10


@cache
def native() -> Any | None:
    """The compiled decoder, or None: with ``SOFTSWITCH_FASTPATH=off``, or where it cannot
    be built here (logged once; an error with ``require``)."""
    from softswitch.fastpath import build

    return build.load_helper(SOURCE, log, "P4Runtime entry decoder",
                             "parsing every update with protobuf")


def decode(data: bytes, spans: list[tuple[int, int]],
           plans: dict[int, tuple] | None = None) -> list[Decoded | Checked | None]:
    """Per span (an Update's encoding in ``data``), its checked form (its table has a
    native plan in ``plans`` and it passed), its plain decoding, or None."""
    mod = native()
    if mod is None:
        return [None] * len(spans)
    return mod.decode(data, spans, plans)
