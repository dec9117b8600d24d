"""Per-table validation of plain table-entry updates, compiled once per pipeline.

A :class:`TablePlan` checks an update decoded by :mod:`entrywire` exactly as
:func:`matches.parse` and :func:`actions.parse` check a parsed one, from plain values
read out of P4Info once, and yields at the same time the canonical key (for the
server's entry store), the switch's normalised match (``TableState.add_checked``), the
action call and the switch's action. It never raises: anything the general path would
refuse — or that this plan does not cover — gives None, and the caller runs the general
path on the parsed update, which then reports the specification's error. So errors keep
one source, and the plan only has to be right about what it accepts (the fuzz and spec
tests run both paths).

A table gets a plan only when the switch's key order, kinds and widths are P4Info's
and every action resolves to the switch's; otherwise its updates take the general path.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

from p4.config.v1 import p4info_pb2

from softswitch.diagnostics import P4Error
from softswitch.p4runtime.actions import ActionCall
from softswitch.p4runtime.entrywire import Decoded
from softswitch.p4runtime.matches import MatchKey, Norm
from softswitch.p4runtime.p4index import ActionPlan, P4InfoIndex, TableIndex

DEFAULT_ONLY = p4info_pb2.ActionRef.DEFAULT_ONLY
SwitchMatch = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class _ActionRoute:
    """An action a table's entries may use: its P4Info plan and the switch's action."""

    plan: ActionPlan
    switch_action: Any


# A plain update that passed every check: its canonical key, the switch's normalised
# match, the action call and the switch's action.
Accepted = tuple[MatchKey, SwitchMatch, ActionCall, Any]


class TablePlan:
    """Validation of one table's plain updates (see the module docstring)."""

    def __init__(self, table: TableIndex, index: P4InfoIndex, switch_keys: list[Any],
                 state: Any) -> None:
        self.table = table
        self._fields = table.plans
        self._ordered = table.ordered
        self._exact_ids = table.exact_ids
        self._needs_priority = table.needs_priority
        self._idle_ok = table.idle_timeouts
        self._positions = {plan.id: i for i, plan in enumerate(table.ordered)}
        # The switch match of an entry that omits every optional field: don't-cares.
        self._blank = tuple(_dont_care(spec.kind, spec.width) for spec in switch_keys)
        self._actions: dict[int, _ActionRoute] = {}
        for aid, ref in table.actions.items():
            plan = index.action_plans.get(aid)
            if plan is None or ref.scope == DEFAULT_ONLY:
                continue
            try:
                act = state.resolve_action(plan.name)
            except P4Error:
                continue
            if act.default_only:
                continue
            if tuple(w for _, w in act.params) != tuple(p.width for p in plan.params):
                continue
            self._actions[aid] = _ActionRoute(plan, act)
        self.native = self._native_plan()

    def _native_plan(self) -> tuple | None:
        """The plan as ``entrywire.c`` checks it (see "checked updates" there), or None
        when a key field is wider than 64 bits; actions with wider (or zero-width)
        parameters are left to the Python plan."""
        if not all(0 < p.width <= 64 for p in self._ordered):
            return None
        fields = {p.id: (_KIND_NUMBERS[p.kind or ""], p.width, i)   # kinds: build() checked
                  for i, p in enumerate(self._ordered)}
        actions = {aid: (route.plan.order, tuple(p.width for p in route.plan.params))
                   for aid, route in self._actions.items()
                   if all(0 < p.width <= 64 for p in route.plan.params)}
        return (int(self._needs_priority), int(self._idle_ok), fields, len(self._exact_ids),
                self._blank, actions)

    @property
    def routes(self) -> dict[int, _ActionRoute]:
        """The actions this table's plain updates may use, by id."""
        return self._actions

    @classmethod
    def build(cls, table: TableIndex, index: P4InfoIndex, state: Any) -> TablePlan | None:
        """A plan when the switch's table agrees with P4Info on keys, else None."""
        specs = list(state.keys)
        if len(specs) != len(table.ordered):
            return None
        for plan, spec in zip(table.ordered, specs, strict=True):
            if (plan.kind is None or plan.kind != spec.kind or plan.width != spec.width
                    or plan.width <= 0):
                return None
        return cls(table, index, specs, state)

    # ------------------------------------------------------------------ checks
    def key(self, d: Decoded) -> tuple[MatchKey, dict[int, Norm]] | None:
        """The canonical key of a decoded update (and its fields by id), or None."""
        priority = d[2]
        if d[3] < 0 or (d[3] and not self._idle_ok):
            return None
        if self._needs_priority:
            if not 0 < priority <= 0x7FFFFFFF:
                return None
        elif priority:
            return None
        given: dict[int, Norm] = {}
        fields = self._fields
        for fid, kind, a, b in d[5]:
            plan = fields.get(fid)
            if plan is None or plan.kind != kind or fid in given:
                return None
            norm = _norm(plan.width, kind, a, b)
            if norm is None:
                return None
            given[fid] = norm
        if not self._exact_ids <= given.keys():
            return None
        items = tuple(given.items())
        if len(items) > 1:
            items = tuple(sorted(items))
        return (items, priority), given

    def accept(self, d: Decoded) -> Accepted | None:
        """The checked key, match and action of a decoded INSERT/MODIFY, or None."""
        keyed = self.key(d)
        route = self._actions.get(d[4])
        if keyed is None or route is None:
            return None
        plan = route.plan
        args = _args(plan, d[6])
        if args is None:
            return None
        key, given = keyed
        return (key, self.switch_match(given), ActionCall(plan.name, args, None, plan.info, plan),
                route.switch_action)

    def switch_match(self, given: dict[int, Norm]) -> tuple[Any, ...]:
        """The switch's normalised match (``TableState.add_checked``) of a key's fields
        by id, as its canonical key holds them; don't-cares for the fields left out."""
        if len(given) == len(self._blank):          # every field given: no don't-cares
            return tuple([_switch_norm(given[p.id], p.width) for p in self._ordered])
        fields = self._fields
        slots = list(self._blank)
        positions = self._positions
        for fid, norm in given.items():
            slots[positions[fid]] = _switch_norm(norm, fields[fid].width)
        return tuple(slots)


# FieldMatch's oneof field numbers, by kind (how entrywire.c names kinds).
_KIND_NUMBERS = {"exact": 2, "ternary": 3, "lpm": 4, "range": 6, "optional": 7}


def _dont_care(kind: str, width: int) -> tuple[Any, ...]:
    if kind == "lpm":
        return (0, 0, 0)
    if kind == "range":
        return ("r", 0, (1 << width) - 1)
    return (0, 0)       # ternary, optional (exact fields are never omitted)


def _fitting(data: bytes, width: int) -> int | None:
    """The unsigned value of non-empty ``data`` when it fits in ``width`` bits, else None."""
    if not data:
        return None
    value = int.from_bytes(data)
    return None if value >> width else value


def _norm(width: int, kind: str, a: bytes, b: Any) -> Norm | None:
    """``matches._normalise`` for a valid field; None where it would raise."""
    value = _fitting(a, width)
    if value is None:
        return None
    if kind == "exact":
        return ("exact", value, 0)
    if kind == "lpm":
        if not 0 < b <= width or value & ((1 << (width - b)) - 1):
            return None
        return ("lpm", value, b)
    if kind == "optional":
        return ("optional", value, 0)
    second = _fitting(b, width)
    if second is None:
        return None
    if kind == "ternary":
        if second == 0 or value & ~second:
            return None
        return ("ternary", value, second)
    if value > second or (value == 0 and second == (1 << width) - 1):
        return None
    return ("range", value, second)


def _switch_norm(norm: Norm, width: int) -> tuple[Any, ...]:
    """The switch's normalised match of a canonical field (``TableState._norm_one``)."""
    kind, a, b = norm
    full = (1 << width) - 1
    if kind == "lpm":
        return (a, full ^ ((1 << (width - b)) - 1), b)
    if kind == "ternary":
        return (a, b)
    if kind == "range":
        return ("r", a, b)
    return (a, full)       # exact, optional


def _args(plan: ActionPlan, params: tuple[tuple[int, bytes], ...]) -> list[int] | None:
    """``actions.parse``'s arguments for valid parameters; None where it would raise."""
    if tuple([p[0] for p in params]) == plan.order:       # in order, each once: common
        values = [p[1] for p in params]
    else:
        given = dict(params)
        if len(given) != len(params) or given.keys() != plan.ids:
            return None
        values = [given[pid] for pid in plan.order]
    if b"" in values:
        return None
    args = list(map(int.from_bytes, values))
    if not all(map(operator.le, args, plan.limits)):
        return None
    return args
