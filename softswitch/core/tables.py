"""Match-action tables with BMv2's lookup rules.

Three lookup strategies, chosen from the key kinds when the table is built, because a
dict probe per packet is much cheaper than scanning entries:

* all keys ``exact`` (or no keys): one dict keyed by the key tuple;
* one ``lpm`` key, the rest ``exact``: one dict per prefix length, probed longest first
  (BMv2 ``MatchUnitLPM``: longest prefix wins, no priorities);
* anything with ``ternary``/``range``/``optional``: entries kept sorted by priority
  (higher value wins, as P4Runtime and STF specify; equal priorities keep insertion
  order) and scanned.

Entries carry the per-entry direct counter (packets, bytes) and direct meter state,
and the time of their last hit on the table's ``clock``: the switch clock, or a
:class:`RealTimeClock` where idle timeouts run in real time (``softswitch run``).
"""

from __future__ import annotations

import bisect
import functools
import itertools
import operator
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from softswitch.core.control import EntryView, KeyMatch
from softswitch.diagnostics import P4Error


@dataclass
class ActionDef:
    """A callable action as a table sees it: control-plane name, parameter widths, body.

    ``fn(args)`` runs the action with a list of already-masked integer arguments.
    """

    name: str
    params: tuple[tuple[str, int], ...]
    fn: Callable[[list[int]], None]
    default_only: bool = False
    table_only: bool = False
    kinds: tuple[str, ...] = ()   # per param: "u" (bit<W>), "s" (int<W>), "b" (bool)

    @functools.cached_property
    def unsigned(self) -> bool:
        """Every parameter is a bit<W>: the action takes control-plane ints as they are."""
        return all(k == "u" for k in self.kinds)

    @functools.cached_property
    def limits(self) -> tuple[int, ...]:
        """The largest control-plane value of each parameter."""
        return tuple((1 << w) - 1 for _, w in self.params)

    def runtime_args(self, args: list[int]) -> list[Any]:
        """Control-plane integers in the representation the action body uses."""
        if self.unsigned:
            return args
        out: list[Any] = []
        for (_, w), k, v in zip(self.params, self.kinds, args, strict=True):
            if k == "s" and v >> (w - 1):
                v -= 1 << w
            elif k == "b":
                v = bool(v)
            out.append(v)
        return out


@dataclass(slots=True, eq=False)
class Entry:
    handle: int
    keys: list[KeyMatch] | None   # None: derived from ``match`` (see add_checked)
    action: ActionDef
    args: list[int]               # as the control plane gave them (unsigned)
    priority: int
    order: int
    # Normalised match: per key (value, mask) or ("range", lo, hi)
    match: tuple[Any, ...] = ()
    run_args: list[Any] = field(default_factory=list)   # what the action body receives
    # Action selector group: (action, control-plane args, runtime args) per member; one
    # is picked per packet by the selector hash. None for a direct action.
    group: list[tuple[ActionDef, list[int], list[Any]]] | None = None
    packets: int = 0
    bytes: int = 0
    meter: Any = None
    last_hit: int = 0             # switch clock (µs) of the last hit, or of the insert


# An entry the interpreter has not built yet (see TableState.add_checked): handle, match,
# action, control-plane args, priority (as the Entry's), insertion order, last_hit.
Row = tuple[int, tuple[Any, ...], ActionDef, list[int], int, int, int]


class CheckedOps:
    """One table's add/modify/delete of pre-checked entries (``checked_ops`` of the
    switches: ``TableState.add_checked``/``modify_checked``/``delete``, or FastSwitch's
    closures that also reach its C table), bound once so that a P4Runtime batch pays no
    name resolution per update."""

    __slots__ = ("add", "modify", "delete", "bulk")

    def __init__(self, add: Any, modify: Any, delete: Any, bulk: Any = None) -> None:
        self.add = add          # (match, action, args, priority) -> handle
        self.modify = modify    # (handle, action, args) -> None
        self.delete = delete    # (handle) -> None
        # () -> (TableState.bulk_rows(), handles to put, handles to delete) or None:
        # what entrywire.apply needs to apply a run of updates to the deferred rows
        # itself (FastSwitch, inside a synced batch), else None.
        self.bulk = bulk


_MODES = {"exact": 0, "lpm": 1, "ternary": 2}    # TableState.mode, as entrywire.apply has it


@dataclass
class KeySpec:
    name: str
    kind: str
    width: int


class RealTimeClock:
    """Microseconds on the wall clock from a switch clock's origin: entries' insertion,
    hits and idle times in a running switch, whose own clock stands still at each
    packet's arrival time (``QueuedSwitch``) while idle time must keep growing. Before
    any packet it reads as the switch clock does, so stamps taken before are kept."""

    __slots__ = ("origin",)

    def __init__(self, origin: float) -> None:
        self.origin = origin             # a time.monotonic() value

    def now_us(self) -> int:
        return int((time.monotonic() - self.origin) * 1e6)


def idle_in_real_time(tables: Iterable[TableState], origin: float) -> RealTimeClock:
    """Stamp the tables' insertions and hits on the wall clock from ``origin`` on. A
    stamp already later than that clock's now (a packet's time on a clock of another
    origin) becomes now."""
    clock = RealTimeClock(origin)
    now = clock.now_us()
    for table in tables:
        table.clock = clock
        table.clamp_hits(now)
    return clock


@dataclass
class TableState:
    """The runtime state of one table instance (entries + default action)."""

    name: str
    keys: list[KeySpec]
    actions: dict[str, ActionDef]
    size: int = 1024
    default_action: ActionDef | None = None
    default_args: list[Any] = field(default_factory=list)      # as the action receives them
    default_cp_args: list[int] = field(default_factory=list)   # as the control plane gave them
    default_const: bool = False
    entries_const: bool = False
    has_direct_counter: bool = False
    meter_factory: Callable[[], Any] | None = None
    # The switch clock (``externs.Clock``), set by the Switch, or a RealTimeClock:
    # entries remember when they were last hit, for P4Runtime idle timeouts.
    clock: Any = None

    def __post_init__(self) -> None:
        kinds = [k.kind for k in self.keys]
        if all(k == "exact" for k in kinds):
            self.mode = "exact"
        elif kinds.count("lpm") == 1 and all(k in ("exact", "lpm") for k in kinds):
            self.mode = "lpm"
            self.lpm_index = kinds.index("lpm")
        else:
            self.mode = "ternary"
        # Without range keys, ternary entries are grouped by their masks: one dict
        # probe per distinct mask combination instead of a scan over all entries.
        self.masked = self.mode == "ternary" and "range" not in kinds
        self._selector: tuple[Callable[[bytes], int], int] | None = None
        self._by_mask: dict[tuple[int, ...], dict[tuple[int, ...], list[Entry]]] = {}
        self._entries: dict[int, Entry] = {}
        # Deferred entries (``lazy`` tables, see add_checked) by handle, in handle order,
        # and their identities (what _insert's duplicate checks compare) -> handle: of
        # every row while ``_row_ids_whole``, else only rebuilt when needed (add_checked).
        self.lazy = False
        self._rows: dict[int, Row] = {}
        self._row_ids: dict[Any, int] = {}
        self._row_ids_whole = True
        self._next_handle = 0
        self._order = 0
        self._exact: dict[tuple[int, ...], Entry] = {}
        self._lpm: dict[int, dict[tuple[int, ...], Entry]] = {}
        self._lpm_lengths: list[int] = []
        self._sorted: list[Entry] = []          # ternary mode: best first
        self._ternary_ids: dict[tuple[Any, ...], Entry] = {}
        # Key position by control-plane name, and the names in key order: writes name
        # their keys, and most give them in order (one tuple compare, no search).
        self._key_pos = {k.name: i for i, k in enumerate(self.keys)}
        self._key_names = tuple(k.name for k in self.keys)

    @property
    def entries(self) -> dict[int, Entry]:
        """The entries by handle (deferred ones are built first: see add_checked)."""
        if self._rows:
            self._materialize()
        return self._entries

    def has(self, handle: int) -> bool:
        """Whether an entry has this handle (without building deferred entries)."""
        return handle in self._entries or handle in self._rows

    def built(self, handle: int) -> Entry | None:
        """The built entry with this handle, or None (no such entry, or deferred)."""
        return self._entries.get(handle)

    def handles(self) -> list[int]:
        """Every entry's handle, built or deferred (without building any)."""
        return [*self._entries, *self._rows]

    def deferred(self, handle: int) -> Row | None:
        """The row of a deferred entry, or None (no such entry, or built)."""
        return self._rows.get(handle)

    def split_deferred(self, handles: list[int]) -> tuple[list[Row], list[int]]:
        """The rows of the deferred entries among ``handles``, and the other handles
        (built entries, or none), each in order: what settling a batch's handles needs,
        without a method call per handle."""
        get = self._rows.get
        rows = [row for row in map(get, handles) if row is not None]
        if len(rows) == len(handles):
            return rows, []
        deferred = self._rows
        return rows, [h for h in handles if h not in deferred]

    def count(self) -> int:
        """How many entries the table holds (built or deferred)."""
        return len(self._entries) + len(self._rows)

    @property
    def next_handle(self) -> int:
        """The handle the next entry placed will get (handles only count up)."""
        return self._next_handle

    @property
    def selector(self) -> tuple[Callable[[bytes], int], int] | None:
        """(hash function over bytes, width the hash is cut to) of the table's action
        selector, or None."""
        return self._selector

    @selector.setter
    def selector(self, value: tuple[Callable[[bytes], int], int] | None) -> None:
        # BMv2 never sees action_selector's outputWidth (p4c's JSON gives a selector
        # only "algo" and "input"): the member is ``full hash % members``. So the
        # width is widened to 64 bits (BMv2's hash_t), which every algorithm fits.
        self._selector = None if value is None else (value[0], 64)

    # ------------------------------------------------------------------ lookups
    def lookup(self, key: tuple[int, ...]) -> Entry | None:
        """The matching entry for the key values, or None (miss); a hit is stamped
        with the switch clock so idle entries can be found."""
        if self._rows:
            self._materialize()
        e = self._find(key)
        if e is not None and self.clock is not None:
            e.last_hit = self.clock.now_us()
        return e

    def _find(self, key: tuple[int, ...]) -> Entry | None:
        mode = self.mode
        if mode == "exact":
            return self._exact.get(key)
        if mode == "lpm":
            li = self.lpm_index
            width = self.keys[li].width
            kv = key[li]
            for plen in self._lpm_lengths:
                mask = ((1 << plen) - 1) << (width - plen)
                probe = key[:li] + (kv & mask,) + key[li + 1:]
                e = self._lpm[plen].get(probe)
                if e is not None:
                    return e
            return None
        if self.masked:
            best: Entry | None = None
            for masks, groups in self._by_mask.items():
                found = groups.get(tuple(k & m for k, m in zip(key, masks, strict=True)))
                if found and (best is None or _rank(found[0]) < _rank(best)):
                    best = found[0]
            return best
        for e in self._sorted:
            for kv, m in zip(key, e.match, strict=True):
                if m[0] == "r":
                    if not (m[1] <= kv <= m[2]):
                        break
                elif kv & m[1] != m[0]:
                    break
            else:
                return e
        return None

    # ------------------------------------------------------------------ edits
    def resolve_action(self, name: str) -> ActionDef:
        a = self.actions.get(name)
        if a is not None:
            return a
        cands = [v for k, v in self.actions.items() if k.endswith("." + name)]
        if len(cands) == 1:
            return cands[0]
        if not cands:
            raise P4Error(f"table '{self.name}' has no action '{name}' "
                          f"(actions: {', '.join(sorted(self.actions)) or 'none'})")
        raise P4Error(f"action name '{name}' is ambiguous in table '{self.name}'")

    def check_args(self, action: ActionDef, args: list[int]) -> list[int]:
        if len(args) != len(action.params):
            raise P4Error(f"action '{action.name}' takes {len(action.params)} argument(s), "
                          f"{len(args)} given (table '{self.name}')")
        if all(map(operator.le, args, action.limits)) and all(map(operator.le, _ZEROS, args)):
            return list(args)        # all in range (two C-level passes)
        out = []
        for (pname, w), v in zip(action.params, args, strict=True):
            if v < 0 or v >> w:
                if v < 0 and v >= -(1 << (w - 1)):
                    v &= (1 << w) - 1
                else:
                    raise P4Error(f"argument '{pname}' = {v} of action '{action.name}' "
                                  f"does not fit in {w} bits")
            out.append(v)
        return out

    def _normalise(self, keys: list[KeyMatch]) -> tuple[list[KeyMatch], tuple[Any, ...]]:
        if len(keys) != len(self.keys):
            raise P4Error(f"table '{self.name}' has {len(self.keys)} key field(s), "
                          f"{len(keys)} given")
        ordered = self._order_keys(keys)
        match: list[Any] = []
        for spec, km in zip(self.keys, ordered, strict=True):
            match.append(self._norm_one(spec, km))
        return ordered, tuple(match)

    def _order_keys(self, keys: list[KeyMatch]) -> list[KeyMatch]:
        if tuple(k.field for k in keys) == self._key_names:
            return list(keys)
        if not all(k.field for k in keys):
            return list(keys)
        by_name: dict[int, KeyMatch] = {}
        for km in keys:
            idx = self._key_index(km.field)
            if idx in by_name:
                raise P4Error(f"key field '{km.field}' given twice for table '{self.name}'")
            by_name[idx] = km
        return [by_name[i] for i in range(len(self.keys))]

    def _key_index(self, name: str) -> int:
        pos = self._key_pos.get(name)
        if pos is not None:
            return pos
        cands = [i for i, k in enumerate(self.keys)
                 if k.name.endswith("." + name) or name.endswith("." + k.name)]
        if len(cands) == 1:
            return cands[0]
        raise P4Error(f"table '{self.name}' has no key field '{name}' "
                      f"(keys: {', '.join(k.name for k in self.keys)})")

    def _norm_one(self, spec: KeySpec, km: KeyMatch) -> Any:
        w = spec.width
        full = (1 << w) - 1
        value = km.value & full if km.value < 0 else km.value
        if value > full:
            raise P4Error(f"value {km.value:#x} for key '{spec.name}' of table '{self.name}' "
                          f"does not fit in {w} bits")
        kind = spec.kind
        if kind == "exact":
            if km.kind not in ("exact", "ternary", "lpm") or (
                    km.mask is not None and km.mask & full != full) or (
                    km.prefix_len is not None and km.prefix_len != w):
                raise P4Error(f"key '{spec.name}' of table '{self.name}' is exact; "
                              f"got a {km.kind} match")
            return (value, full)
        if kind == "lpm":
            plen = km.prefix_len if km.prefix_len is not None else w
            if km.kind == "ternary" and km.mask is not None:
                plen = _mask_to_prefix(km.mask & full, w, spec.name, self.name)
            if not 0 <= plen <= w:
                raise P4Error(f"prefix length {plen} out of range for key '{spec.name}' "
                              f"({w} bits) of table '{self.name}'")
            mask = full ^ ((1 << (w - plen)) - 1)
            return (value & mask, mask, plen)
        if kind in ("ternary", "optional"):
            if km.wildcard:
                return (0, 0)
            if km.kind == "lpm" and km.prefix_len is not None:
                mask = full ^ ((1 << (w - km.prefix_len)) - 1)
            elif km.kind == "range":
                raise P4Error(f"key '{spec.name}' of table '{self.name}' is {kind}; "
                              "got a range match")
            else:
                mask = full if km.mask is None else km.mask & full
            if kind == "optional" and mask not in (0, full):
                raise P4Error(f"optional key '{spec.name}' of table '{self.name}' takes an "
                              "exact value or a wildcard")
            return (value & mask, mask)
        if kind == "range":
            if km.kind == "range":
                hi = km.high if km.high is not None else value
            elif km.wildcard:
                value, hi = 0, full
            elif km.mask is not None and km.mask & full == 0:
                value, hi = 0, full
            else:
                hi = value
            if hi > full or hi < 0:
                raise P4Error(f"range high {hi:#x} for key '{spec.name}' of table "
                              f"'{self.name}' does not fit in {w} bits")
            return ("r", value, hi)
        raise P4Error(f"table '{self.name}': match kind '{kind}' is not supported "
                      f"by the v1model target (key '{spec.name}')")

    def add(self, keys: list[KeyMatch], action_name: str, args: list[int],
            priority: int | None, const: bool = False) -> int:
        if self.entries_const and not const:
            raise P4Error(f"table '{self.name}' has const entries and cannot be modified")
        ordered, match = self._normalise(keys)
        action = self.resolve_action(action_name)
        if action.default_only:
            raise P4Error(f"action '{action.name}' can only be the default action "
                          f"of table '{self.name}'")
        args = self.check_args(action, args)
        if self.count() >= self.size:
            raise P4Error(f"table '{self.name}' is full ({self.size} entries)")
        return self._place(ordered, match, action, args, priority)

    def add_checked(self, match: tuple[Any, ...], action: ActionDef, args: list[int],
                    priority: int | None, unique: bool = False) -> int:
        """Insert an entry its writer has already validated (P4Runtime checks every
        key, argument and scope against P4Info first): ``match`` is the normalised
        match in key order (as ``_normalise`` builds it), ``args`` fit their widths.
        Skipping the second validation and the per-key KeyMatch objects is most of an
        insert's cost here; the keys are derived from ``match`` when viewed.

        In a ``lazy`` table (the C fast path's, which answers the packets: see
        ``FastSwitch``) the Entry is not even built: the entry is kept as a :data:`Row`
        until something needs the interpreter's form (a lookup, a view, ``entries``),
        and is then built exactly as it would have been. A batched insert so touches
        each entry once here, and the C table is the store packets use.

        ``unique``: the writer has made sure no entry has this identity (P4Runtime
        checks its own records first, keyed one-to-one with the identities): a deferred
        row's identity is then neither checked nor kept (keeping it is a noticeable part
        of a batched insert or delete), and the identities are rebuilt, once, when a
        writer that has not checked comes."""
        if self.entries_const:
            raise P4Error(f"table '{self.name}' has const entries and cannot be modified")
        if len(self._entries) + len(self._rows) >= self.size:
            raise P4Error(f"table '{self.name}' is full ({self.size} entries)")
        if not self.lazy or self.meter_factory is not None:   # rows carry no meter
            return self._place(None, match, action, args, priority)
        prio = (match[self.lpm_index][2] if self.mode == "lpm"
                else priority if priority is not None else 0)
        ident = None
        if unique:
            self._row_ids_whole = False
        else:
            if not self._row_ids_whole:
                self._rebuild_row_ids()
            ident = self._ident(match, prio)
            if ident in self._row_ids:
                self._duplicate(match, prio)
        if self._entries and self._built_dup(match, prio):
            self._duplicate(match, prio)
        handle = self._next_handle
        self._rows[handle] = (handle, match, action, args, prio, self._order,
                              self.clock.now_us() if self.clock is not None else 0)
        if ident is not None:
            self._row_ids[ident] = handle
        self._next_handle = handle + 1
        self._order += 1
        return handle

    def _built_dup(self, match: tuple[Any, ...], prio: int) -> bool:
        """Whether a built entry has the identity of this match (see _insert)."""
        if self.mode == "exact":
            return tuple(m[0] for m in match) in self._exact
        if self.mode == "lpm":
            bucket = self._lpm.get(match[self.lpm_index][2])
            return bucket is not None and tuple(m[0] for m in match) in bucket
        return (prio, self._match_id(match)) in self._ternary_ids

    def _duplicate(self, match: tuple[Any, ...], prio: int) -> None:
        """Raise _insert's duplicate-entry error for this match."""
        key = tuple(m[0] for m in match)
        if self.mode == "exact":
            raise P4Error(f"duplicate entry in table '{self.name}' for key {_fmt(key)}")
        if self.mode == "lpm":
            raise P4Error(f"duplicate entry in table '{self.name}' for key {_fmt(key)}/"
                          f"{match[self.lpm_index][2]}")
        raise P4Error(f"duplicate entry in table '{self.name}' "
                      f"(same key and priority {prio})")

    def bulk_rows(self) -> tuple[Any, ...] | None:
        """What ``entrywire.apply`` changes to add, modify and delete deferred rows
        itself, exactly as add_checked (``unique``: P4Runtime's records checked
        first)/modify_checked/delete would one by one: (rows, mode (0 exact, 1 lpm, 2
        ternary), the lpm key's position, size, the clock now); it keeps
        ``_next_handle``/``_order`` counting. None unless the table defers every entry
        it holds (lazy, no meter, not const, nothing built yet), where those calls
        would take other ways."""
        if (not self.lazy or self.meter_factory is not None or self.entries_const
                or self._entries):
            return None
        self._row_ids_whole = False              # the rows it adds or deletes: not kept
        return (self._rows, _MODES[self.mode],
                self.lpm_index if self.mode == "lpm" else 0, self.size,
                self.clock.now_us() if self.clock is not None else 0)

    def _ident(self, match: tuple[Any, ...], prio: int) -> Any:
        """A deferred row's identity (what _insert's duplicate checks compare)."""
        return (prio, match) if self.mode == "ternary" else match

    def _rebuild_row_ids(self) -> None:
        """Every deferred row's identity again (see add_checked's ``unique``)."""
        ident = self._ident
        self._row_ids = {ident(row[1], row[4]): handle for handle, row in self._rows.items()}
        self._row_ids_whole = True

    def _materialize(self) -> None:
        """Build the deferred entries, in handle (so insertion) order: what add_checked
        would have built at once."""
        rows, self._rows, self._row_ids = self._rows, {}, {}
        self._row_ids_whole = True
        for handle, match, action, args, prio, order, last_hit in rows.values():
            entry = Entry(handle, None, action, args, prio, order, match,
                          action.runtime_args(args))
            entry.last_hit = last_hit
            self._insert(entry)

    def _place(self, keys: list[KeyMatch] | None, match: tuple[Any, ...], action: ActionDef,
               args: list[int], priority: int | None) -> int:
        if self._rows:         # an eager insert checks duplicates against built entries
            self._materialize()
        prio = priority if priority is not None else 0
        if self.mode == "lpm":
            prio = match[self.lpm_index][2]
        entry = Entry(self._next_handle, keys, action, args, prio, self._order, match,
                      action.runtime_args(args))
        if self.clock is not None:
            entry.last_hit = self.clock.now_us()
        self._insert(entry)
        self._next_handle += 1
        self._order += 1
        if self.meter_factory is not None:
            entry.meter = self.meter_factory()
        return entry.handle

    def _members(self, members: list[tuple[str, list[int]]]
                 ) -> list[tuple[ActionDef, list[int], list[Any]]]:
        if self.selector is None:
            raise P4Error(f"table '{self.name}' has no action selector: its entries take "
                          "one action")
        out = []
        for name, args in members:
            action = self.resolve_action(name)
            if action.default_only:
                raise P4Error(f"action '{action.name}' can only be the default action "
                              f"of table '{self.name}'")
            cp = self.check_args(action, args)
            out.append((action, cp, action.runtime_args(cp)))
        # BMv2: a hit on an empty group is a hit that runs no action ("Lookup ...
        # yielded empty group"); one no-op member gives exactly that.
        return out or [(EMPTY_GROUP_ACTION, [], [])]

    def add_group(self, keys: list[KeyMatch], members: list[tuple[str, list[int]]],
                  priority: int | None = None) -> int:
        """An entry whose action is chosen per packet among ``members`` (action name,
        args) by the action selector's hash, like a BMv2 action-selector group."""
        group = self._members(members)
        first = group[0]
        if first[0] is EMPTY_GROUP_ACTION:    # any action will do: the group replaces it
            first = next(((a, [0] * len(a.params), []) for a in self.actions.values()
                          if not a.default_only), first)
        handle = self.add(keys, first[0].name, list(first[1]), priority)
        self._set_group(self.entries[handle], group)
        return handle

    @staticmethod
    def _set_group(entry: Entry, group: list[tuple[ActionDef, list[int], list[Any]]]
                   ) -> None:
        entry.group = group
        entry.action, entry.args, entry.run_args = group[0]

    def modify_group(self, handle: int, members: list[tuple[str, list[int]]]) -> None:
        if self.entries_const:
            raise P4Error(f"table '{self.name}' has const entries and cannot be modified")
        entry = self._get(handle)
        self._set_group(entry, self._members(members))

    def _match_id(self, match: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(m[:2] if m[0] != "r" else m for m in match)

    def _insert(self, entry: Entry) -> None:
        if self.mode == "exact":
            key = tuple(m[0] for m in entry.match)
            if key in self._exact:
                raise P4Error(f"duplicate entry in table '{self.name}' for key {_fmt(key)}")
            self._exact[key] = entry
        elif self.mode == "lpm":
            plen = entry.match[self.lpm_index][2]
            key = tuple(m[0] for m in entry.match)
            bucket = self._lpm.setdefault(plen, {})
            if key in bucket:
                raise P4Error(f"duplicate entry in table '{self.name}' for key {_fmt(key)}/"
                              f"{plen}")
            bucket[key] = entry
            if len(bucket) == 1:          # a new prefix length: probed longest first
                self._lpm_lengths = sorted((p for p, b in self._lpm.items() if b),
                                           reverse=True)
        else:
            ident = (entry.priority, self._match_id(entry.match))
            if ident in self._ternary_ids:
                raise P4Error(f"duplicate entry in table '{self.name}' "
                              f"(same key and priority {entry.priority})")
            self._ternary_ids[ident] = entry
            bisect.insort(self._sorted, entry, key=_rank)
            if self.masked:
                masks = tuple(m[1] for m in entry.match)
                vals = tuple(m[0] for m in entry.match)
                group = self._by_mask.setdefault(masks, {}).setdefault(vals, [])
                bisect.insort(group, entry, key=_rank)
        self._entries[entry.handle] = entry

    def delete(self, handle: int) -> None:
        if self.entries_const:
            raise P4Error(f"table '{self.name}' has const entries and cannot be modified")
        row = self._rows.pop(handle, None)
        if row is not None:
            if self._row_ids_whole:
                del self._row_ids[self._ident(row[1], row[4])]
            return
        entry = self._get(handle)
        del self._entries[handle]
        if self.mode == "exact":
            del self._exact[tuple(m[0] for m in entry.match)]
        elif self.mode == "lpm":
            plen = entry.match[self.lpm_index][2]
            bucket = self._lpm[plen]
            del bucket[tuple(m[0] for m in entry.match)]
            if not bucket:
                self._lpm_lengths = sorted((p for p, b in self._lpm.items() if b),
                                           reverse=True)
        else:
            _remove_ranked(self._sorted, entry)
            del self._ternary_ids[(entry.priority, self._match_id(entry.match))]
            if self.masked:
                masks = tuple(m[1] for m in entry.match)
                vals = tuple(m[0] for m in entry.match)
                groups = self._by_mask[masks]
                _remove_ranked(groups[vals], entry)
                if not groups[vals]:
                    del groups[vals]
                if not groups:
                    del self._by_mask[masks]

    def modify(self, handle: int, action_name: str, args: list[int]) -> None:
        if self.entries_const:
            raise P4Error(f"table '{self.name}' has const entries and cannot be modified")
        entry = self._get(handle)
        action = self.resolve_action(action_name)
        self._set_action(entry, action, self.check_args(action, args))

    def modify_checked(self, handle: int, action: ActionDef, args: list[int]) -> None:
        """``modify`` with an action and arguments already validated (see
        :meth:`add_checked`)."""
        if self.entries_const:
            raise P4Error(f"table '{self.name}' has const entries and cannot be modified")
        row = self._rows.get(handle)
        if row is not None:
            self._rows[handle] = (handle, row[1], action, args, row[4], row[5], row[6])
            return
        self._set_action(self._get(handle), action, args)

    @staticmethod
    def _set_action(entry: Entry, action: ActionDef, args: list[int]) -> None:
        entry.args = args
        entry.run_args = action.runtime_args(entry.args)
        entry.action = action
        entry.group = None

    def clear(self) -> None:
        if self.entries_const:
            raise P4Error(f"table '{self.name}' has const entries and cannot be modified")
        for h in list(self.entries):
            self.delete(h)

    def set_default(self, action_name: str, args: list[int], initial: bool = False) -> None:
        if self.default_const and not initial:
            raise P4Error(f"the default action of table '{self.name}' is const")
        action = self.resolve_action(action_name)
        if action.table_only:
            raise P4Error(f"action '{action.name}' cannot be the default action "
                          f"of table '{self.name}'")
        self.default_cp_args = self.check_args(action, args)
        self.default_args = action.runtime_args(self.default_cp_args)
        self.default_action = action

    def clamp_hits(self, now_us: int) -> None:
        """Bring every entry's last hit later than ``now_us`` back to it."""
        for entry in self._entries.values():
            if entry.last_hit > now_us:
                entry.last_hit = now_us
        rows = self._rows
        for handle, row in rows.items():
            if row[6] > now_us:
                rows[handle] = (*row[:6], now_us)

    def idle_us(self, handle: int) -> int:
        """µs since the entry was last hit (or inserted, if never hit)."""
        entry = self._get(handle)
        if self.clock is None:
            return 0
        return max(0, self.clock.now_us() - entry.last_hit)

    def keys_of(self, entry: Entry) -> list[KeyMatch]:
        """The KeyMatch list of an entry, from its normalised match (for an entry
        added by :meth:`add_checked`, which keeps none)."""
        return self.keys_of_match(entry.match)

    def keys_of_match(self, match: tuple[Any, ...]) -> list[KeyMatch]:
        """The KeyMatch list of a normalised match (as ``_normalise`` builds it)."""
        out = []
        for spec, m in zip(self.keys, match, strict=True):
            kind = spec.kind
            if kind == "range":
                out.append(KeyMatch(spec.name, "range", m[1], high=m[2]))
            elif kind == "lpm":
                out.append(KeyMatch(spec.name, "lpm", m[0], prefix_len=m[2]))
            elif kind == "ternary":
                out.append(KeyMatch(spec.name, "ternary", m[0], mask=m[1]))
            elif kind == "optional" and not m[1]:
                out.append(KeyMatch(spec.name, "optional", 0, wildcard=True))
            else:
                out.append(KeyMatch(spec.name, kind, m[0]))
        return out

    def _get(self, handle: int) -> Entry:
        if handle in self._rows:
            self._materialize()
        e = self._entries.get(handle)
        if e is None:
            raise P4Error(f"table '{self.name}' has no entry with handle {handle}")
        return e

    def views(self) -> list[EntryView]:
        return [self._view(e) for e in sorted(self.entries.values(), key=lambda e: e.handle)]

    def view(self, handle: int) -> EntryView:
        """One entry's view (P4Error: no entry has this handle). A deferred entry is
        viewed from its row, not built: building would take the table off the batched
        write path (see :meth:`bulk_rows`)."""
        row = self._rows.get(handle)
        if row is None:
            return self._view(self._get(handle))
        _, match, action, args, prio = row[:5]
        return EntryView(handle, self.keys_of_match(match), action.name, list(args),
                         prio if self.mode == "ternary" else None)

    def _view(self, e: Entry) -> EntryView:
        return EntryView(e.handle, list(e.keys) if e.keys is not None else self.keys_of(e),
                         e.action.name, list(e.args),
                         e.priority if self.mode == "ternary" else None, e.packets, e.bytes)


_ZEROS = itertools.repeat(0)

#: The one "member" of an empty selector group: runs nothing (see ``_members``).
EMPTY_GROUP_ACTION = ActionDef("", (), lambda *args: None)


def _rank(e: Entry) -> tuple[int, int]:
    """Sort key of ternary entries: higher priority first, then older first."""
    return (-e.priority, e.order)


def _remove_ranked(entries: list[Entry], entry: Entry) -> None:
    """Remove ``entry`` from a list sorted by :func:`_rank` in O(log n) probes: ranks
    are unique (insertion order breaks ties), so bisect finds it — ``list.remove``
    would compare it field by field with every entry before it."""
    i = bisect.bisect_left(entries, _rank(entry), key=_rank)
    if i < len(entries) and entries[i] is entry:
        del entries[i]
        return
    raise ValueError(f"entry {entry.handle} is not in the table's sorted list")


def _mask_to_prefix(mask: int, width: int, key: str, table: str) -> int:
    plen = bin(mask).count("1")
    if mask != ((1 << width) - 1) ^ ((1 << (width - plen)) - 1):
        raise P4Error(f"mask {mask:#x} is not a prefix for lpm key '{key}' of table '{table}'")
    return plen


def _fmt(key: tuple[int, ...]) -> str:
    return "(" + ", ".join(hex(k) for k in key) + ")"
