"""What PNA programs' lowered code calls at run time (``_RT`` in a NIC's blocks).

PNA's forwarding calls (``send_to_port``, ``drop_packet``, ``recirculate``) do not act
on their arguments but on the packet being processed, and add-on-miss, the expire
timer calls and direct counters/meters act on the table entry the current action runs
for. So the runtime keeps, per pass, the packet's destination and mirror requests
(:class:`PassState`) and the table context (the entry that matched, or the table and
key that missed), which the generated table code sets before it runs an action.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from softswitch.core.control import KeyMatch
from softswitch.core.execution import Runtime
from softswitch.core.externs import GREEN, RED, YELLOW
from softswitch.core.tables import Entry, RealTimeClock, TableState
from softswitch.diagnostics import P4Error

DROP, PORT, RECIRCULATE = "drop", "port", "recirculate"

#: PNA_MeterColor_t is { RED, GREEN, YELLOW } (ordinals 0, 1, 2); the meter cells
#: compute v1model colours (GREEN 0, YELLOW 1, RED 2).
_PNA_OF_V1 = {GREEN: 1, YELLOW: 2, RED: 0}
_V1_OF_PNA = {v: k for k, v in _PNA_OF_V1.items()}


@dataclass
class PassState:
    """One pass of one packet through main_parser .. main_deparser.

    PNA: the last forwarding call wins; with none the packet is dropped."""

    dest: str = DROP
    port: int = 0
    mirrors: dict[int, int] = field(default_factory=dict)   # slot -> session
    length: int = 0


@dataclass
class Learned:
    """An entry main_control added with add_entry: its expire-time profile."""

    table: TableState
    handle: int
    profile: int


class PnaRuntime(Runtime):
    """:class:`~softswitch.core.execution.Runtime` plus PNA's per-pass and per-NIC
    state (flow ids, expire-time profiles, learned entries)."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.pass_state = PassState()
        self.hit_table: TableState | None = None
        self.hit_entry: Entry | None = None
        self.miss_table: TableState | None = None
        self.miss_key: tuple[int, ...] = ()
        self.next_flow_id = 1
        # expire-time profile id -> timeout in µs (0 or absent: never expires)
        self.expire_profiles: dict[int, int] = {}
        self.learned: dict[tuple[str, int], Learned] = {}
        # no learned entry can expire before this time (µs): a hit only postpones an
        # expiry, so only a new entry, a profile change or a real-time table rescans
        self.expiry_due = math.inf
        self.learn_failures = 0
        self.clock: Any = None     # the NIC's Clock, set by the NIC

    # --- per pass ----------------------------------------------------------------
    def begin_pass(self, length: int) -> PassState:
        self.pass_state = PassState(length=length)
        self.pkt.length = length
        self.hit_table = self.hit_entry = self.miss_table = None
        return self.pass_state

    def table_hit(self, table: TableState, entry: Entry) -> None:
        self.hit_table, self.hit_entry, self.miss_table = table, entry, None

    def table_miss(self, table: TableState, key: tuple[int, ...]) -> None:
        self.miss_table, self.miss_key, self.hit_entry = table, key, None

    # --- forwarding ----------------------------------------------------------------
    def drop_packet(self) -> None:
        self.pass_state.dest = DROP

    def send_to_port(self, port: int) -> None:
        self.pass_state.dest = PORT
        self.pass_state.port = port

    def recirculate(self, field_list: int = -1) -> None:
        self.pass_state.dest = RECIRCULATE

    def mirror_packet(self, slot: int, session: int) -> None:
        self.pass_state.mirrors[slot] = session

    # --- add-on-miss and expiry ----------------------------------------------------
    def add_entry(self, action_name: str, args: tuple[int, ...], profile: int) -> bool:
        """Add the missed key of the current add_on_miss table with ``action_name``;
        False when there is no missed table or the table is full."""
        table = self.miss_table
        if table is None:
            return False
        keys = [KeyMatch(k.name, "exact", v) for k, v in zip(table.keys, self.miss_key,
                                                             strict=True)]
        try:
            handle = table.add(keys, _action_for(table, action_name), list(args), None)
        except P4Error:
            self.learn_failures += 1
            return False
        self.learned[(table.name, handle)] = Learned(table, handle, profile)
        self.expiry_due = -math.inf
        return True

    def allocate_flow_id(self) -> int:
        fid = self.next_flow_id
        self.next_flow_id = (self.next_flow_id + 1) & 0xFFFFFFFF or 1
        return fid

    def set_entry_expire_time(self, profile: int) -> None:
        e = self._current_learned()
        if e is not None and e.profile != profile:
            e.profile = profile
            self.expiry_due = -math.inf

    def restart_expire_timer(self) -> None:
        table, entry = self.hit_table, self.hit_entry
        if table is not None and entry is not None and table.clock is not None:
            entry.last_hit = table.clock.now_us()      # the clock its hits are stamped on

    def _current_learned(self) -> Learned | None:
        if self.hit_table is None or self.hit_entry is None:
            return None
        return self.learned.get((self.hit_table.name, self.hit_entry.handle))

    def set_expire_profile(self, profile: int, timeout_us: int) -> None:
        self.expire_profiles[profile] = timeout_us
        self.expiry_due = -math.inf

    def expire(self, now_us: int) -> list[tuple[str, int]]:
        """Delete learned entries idle longer than their profile's timeout; returns
        (table, handle) of each. ``now_us`` is the NIC's clock, which the tables stamp
        hits on unless they keep idle time in real time (their own ``clock`` then)."""
        if now_us < self.expiry_due:
            return []
        gone: list[tuple[str, int]] = []
        due = math.inf
        for key, le in list(self.learned.items()):
            timeout = self.expire_profiles.get(le.profile, 0)
            entry = le.table.entries.get(le.handle)
            if entry is None:
                del self.learned[key]
                continue
            clock = le.table.clock
            if isinstance(clock, RealTimeClock):
                now, due = clock.now_us(), -math.inf
            else:
                now = now_us
            if timeout and now - entry.last_hit >= timeout:
                le.table.delete(le.handle)
                del self.learned[key]
                gone.append(key)
            elif timeout:
                due = min(due, entry.last_hit + timeout)
        self.expiry_due = due
        return gone

    # --- direct resources ----------------------------------------------------------
    def direct_count(self, increment: int | None) -> None:
        """DirectCounter.count(): the matched entry's counter (nothing on a miss)."""
        e = self.hit_entry
        if e is not None:
            e.packets += 1
            e.bytes += self.pkt.length if increment is None else increment

    def direct_meter(self, color: int | None, length: int | None) -> int:
        e = self.hit_entry
        if e is None or e.meter is None:
            return _PNA_OF_V1[GREEN] if color is None else color
        v1 = e.meter.execute(self.pkt.length if length is None else length)
        return meter_color(v1, color)


def meter_color(v1_color: int, pna_in: int | None) -> int:
    """A PNA_MeterColor_t from a meter cell's v1model colour; colour-aware execute
    keeps the worse of the input colour and the meter's."""
    if pna_in is not None:
        v1_color = max(v1_color, _V1_OF_PNA.get(pna_in, GREEN))
    return _PNA_OF_V1[v1_color]


def _action_for(table: TableState, name: str) -> str:
    """add_entry names the action as written; the table knows control-plane names."""
    if name in table.actions:
        return name
    cands = [n for n in table.actions if n.rsplit(".", 1)[-1] == name.rsplit(".", 1)[-1]]
    if len(cands) != 1:
        raise P4Error(f"add_entry: table '{table.name}' has no action '{name}'")
    return cands[0]


class OnesComplement16:
    """InternetChecksum's state: the 16-bit ones' complement sum of what was added."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = 0

    def clear(self) -> None:
        self.state = 0

    def add(self, data: bytes) -> None:
        self.state = _fold(self.state + _words(data))

    def subtract(self, data: bytes) -> None:
        self.state = _fold(self.state + ((~_words_folded(data)) & 0xFFFF))

    def get(self) -> int:
        return (~self.state) & 0xFFFF

    def get_state(self) -> int:
        return self.state

    def set_state(self, value: int) -> None:
        self.state = value & 0xFFFF


class AccumulatingHash:
    """Checksum<W>: the algorithm over everything updated since the last clear."""

    __slots__ = ("fn", "data")

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.data = b""

    def clear(self) -> None:
        self.data = b""

    def update(self, data: bytes) -> None:
        self.data += data

    def get(self) -> int:
        return int(self.fn(self.data))


def _words(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    return sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))


def _words_folded(data: bytes) -> int:
    return _fold(_words(data))


def _fold(v: int) -> int:
    while v >> 16:
        v = (v & 0xFFFF) + (v >> 16)
    return v
