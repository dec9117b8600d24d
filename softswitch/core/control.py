"""The control interface of a loaded v1model pipeline.

One interface for everything that programs a running softswitch: the STF runner, the
``simple_switch_CLI``-style runtime channel and the P4Runtime server all drive a switch
through :class:`SwitchControl`. Names are *control-plane names*, exactly as P4Info
spells them (``MyIngress.ipv4_lpm``, ``hdr.ipv4.dstAddr``, ``MyIngress.set_nhop``); the
switch also accepts any unique dotted suffix of a name (``ipv4_lpm``) as p4c's STF
driver and ``simple_switch_CLI`` users expect.

Match values are plain Python ints (already parsed); errors in user input raise
:class:`softswitch.diagnostics.P4Error` with a message naming what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class KeyMatch:
    """The match for one key field of a table entry.

    ``kind`` is the key's match kind: ``exact`` (value), ``lpm`` (value, prefix_len),
    ``ternary`` (value, mask), ``range`` (low=value, high), ``optional`` (value, or
    ``wildcard`` True). ``field`` is the key's control-plane name (may be empty when the
    keys are given in order).
    """

    field: str
    kind: str
    value: int = 0
    mask: int | None = None
    prefix_len: int | None = None
    high: int | None = None
    wildcard: bool = False


@dataclass(frozen=True)
class KeyInfo:
    name: str          # control-plane name, e.g. "hdr.ipv4.dstAddr" or "$valid$"-style
    match_kind: str    # exact | lpm | ternary | range | optional | selector | …
    width: int         # bits


@dataclass(frozen=True)
class ActionInfo:
    name: str                              # control-plane name, e.g. "MyIngress.drop"
    params: tuple[tuple[str, int], ...]    # (name, width in bits)


@dataclass(frozen=True)
class TableInfo:
    name: str
    keys: tuple[KeyInfo, ...]
    actions: tuple[ActionInfo, ...]
    size: int = 1024
    const_entries: bool = False
    has_default_const: bool = False


# BMv2 ranks ternary and range entries by a priority where the *lower* value wins: the
# initial entries of its JSON (1, 2, … in program order, or ``@priority``),
# simple_switch_CLI's ``table_add … PRIO`` and what p4c's STF driver hands it. SwitchControl
# priorities are the other way round (higher wins, as in P4Runtime); this one scale maps
# every BMv2 priority onto them, so entries from all three sources rank as on BMv2.
BMV2_PRIORITY_BASE = (1 << 31) - 1


def from_bmv2_priority(bmv2_priority: int) -> int:
    """The SwitchControl priority (higher wins) of a BMv2 priority (lower wins)."""
    return BMV2_PRIORITY_BASE - bmv2_priority


def bmv2_match_type(table: TableInfo) -> str:
    """The ``match_type`` p4c's BMv2 back end gives a table: ``range`` with a range key,
    else ``ternary`` with a ternary or optional key, else ``lpm`` with an lpm key, else
    ``exact`` (``selector`` keys do not count)."""
    kinds = {k.match_kind for k in table.keys} - {"selector"}
    if "range" in kinds:
        return "range"
    if kinds & {"ternary", "optional"}:
        return "ternary"
    return "lpm" if "lpm" in kinds else "exact"


@dataclass
class EntryView:
    """A table entry as read back from the switch."""

    handle: int
    keys: list[KeyMatch]
    action: str
    args: list[int]
    priority: int | None = None
    packets: int = 0
    bytes: int = 0


@dataclass
class PacketOut:
    """A packet the switch emitted: egress port and bytes (in emission order)."""

    port: int
    data: bytes
    meta: dict[str, int] = field(default_factory=dict)


class SwitchControl(Protocol):
    """What the STF runner, the runtime CLI channel and P4Runtime need from a switch."""

    # --- inspection -------------------------------------------------------------------
    def tables(self) -> list[TableInfo]: ...
    def table_info(self, name: str) -> TableInfo: ...

    # --- match-action tables -----------------------------------------------------------
    def table_add(self, table: str, keys: list[KeyMatch], action: str, args: list[int],
                  priority: int | None = None) -> int:
        """Insert an entry; returns its handle. ``priority``: higher value wins (P4Runtime
        and STF convention). Duplicate key → P4Error."""
        ...

    def table_add_group(self, table: str, keys: list[KeyMatch],
                        members: list[tuple[str, list[int]]],
                        priority: int | None = None) -> int:
        """Insert an entry of an action-selector table that runs, per packet, one of
        ``members`` (action, args): the ``hash % len(members)``-th, the hash being the
        selector's algorithm over the ``selector`` key fields (BMv2). An empty list
        makes hits run no action. Returns the handle."""
        ...

    def table_modify_group(self, table: str, handle: int,
                           members: list[tuple[str, list[int]]]) -> None:
        """Give an entry a new member list (also turns a one-action entry into a
        group entry; :meth:`table_modify` turns it back)."""
        ...

    def table_modify(self, table: str, handle: int, action: str, args: list[int]) -> None: ...
    def table_delete(self, table: str, handle: int) -> None: ...
    def table_clear(self, table: str) -> None: ...
    def table_set_default(self, table: str, action: str, args: list[int]) -> None: ...
    def table_entries(self, table: str) -> list[EntryView]: ...

    def table_entry(self, table: str, handle: int) -> EntryView:
        """The entry with this handle (no P4Error: there is none), found by handle, not
        by building every entry's view (commands that name a handle use it)."""
        ...

    # --- replication ------------------------------------------------------------------
    def mirroring_add(self, session: int, port: int, class_of_service: int = 0) -> None:
        """Clone session to a port. ``class_of_service`` (P4Runtime CloneSessionEntry) is
        the queue its clones use; BMv2 ignores it (priority 0), softswitch honours it."""
        ...

    def mirroring_add_mc(self, session: int, mgrp: int, class_of_service: int = 0) -> None: ...
    def mc_mgrp_create(self, mgrp: int) -> None: ...
    def mc_node_create(self, rid: int, ports: list[int]) -> int: ...
    def mc_node_update(self, node: int, ports: list[int]) -> None:
        """New ports for a node (BMv2 ``mc_node_update``)."""
        ...

    def mc_node_associate(self, mgrp: int, node: int) -> None: ...
    def mc_node_dissociate(self, mgrp: int, node: int) -> None:
        """Take a node out of a group (BMv2 ``mc_node_dissociate``)."""
        ...

    def mc_node_destroy(self, node: int) -> None:
        """Delete a node (leaving any group that holds it)."""
        ...

    def mc_mgrp_destroy(self, mgrp: int) -> None:
        """Delete a group; its nodes survive, dissociated."""
        ...

    def mirroring_delete(self, session: int) -> None:
        """Remove a clone session; clones to it are then dropped."""
        ...

    def entry_idle_us(self, table: str, handle: int) -> int:
        """µs (switch clock) since the entry was last hit or, never hit, inserted;
        P4Runtime idle timeouts and ``time_since_last_hit`` read it."""
        ...

    # --- stateful externs ---------------------------------------------------------------
    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of an indirect counter cell or of a direct counter's entry."""
        ...

    def counter_write(self, name: str, index: int, packets: int, bytes_: int) -> None: ...
    def counter_reset(self, name: str) -> None: ...
    def register_read(self, name: str, index: int) -> int: ...
    def register_write(self, name: str, index: int, value: int) -> None: ...
    def register_reset(self, name: str) -> None: ...

    # --- packets --------------------------------------------------------------------------
    def inject(self, port: int, data: bytes) -> list[PacketOut]:
        """Process one packet arriving on ``port`` to completion (including clones,
        resubmits, recirculations, multicast copies) and return what left the switch."""
        ...
