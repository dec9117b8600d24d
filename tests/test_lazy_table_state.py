"""A lazy TableState (deferred rows, built on demand) equals an eagerly built one.

The C fast path's tables answer the packets, so ``TableState.add_checked`` keeps a
P4Runtime write as a row until something needs the interpreter's form (and, for a
writer that checked uniqueness itself, without keeping its identity). These tests run
the same random insert/modify/delete sequences on a lazy and an eager table — with
lookups, views and full-table reads at random points, which build the rows — and
compare entries, lookups and every error, in each lookup mode (exact, lpm, ternary,
range)."""

from __future__ import annotations

import random

import pytest

from softswitch.core.control import KeyMatch
from softswitch.core.tables import ActionDef, Entry, KeySpec, TableState
from softswitch.diagnostics import P4Error


class _Clock:
    """A switch clock that ticks once per reading (so last_hit values differ)."""

    def __init__(self) -> None:
        self.t = 0

    def now_us(self) -> int:
        self.t += 1
        return self.t


def _state(keys: list[KeySpec], lazy: bool, size: int = 48) -> TableState:
    acts = {"fwd": ActionDef("fwd", (("port", 9),), lambda a: None, kinds=("u",)),
            "drop": ActionDef("drop", (), lambda a: None)}
    st = TableState("t", keys, acts, size=size, clock=_Clock())
    st.lazy = lazy
    return st


LAYOUTS = {
    "exact": [KeySpec("a", "exact", 8), KeySpec("b", "exact", 4)],
    "lpm": [KeySpec("a", "exact", 2), KeySpec("dst", "lpm", 8)],
    "ternary": [KeySpec("a", "ternary", 6), KeySpec("o", "optional", 2)],
    "range": [KeySpec("r", "range", 5), KeySpec("dst", "lpm", 4)],
}


def _match(rng: random.Random, keys: list[KeySpec]) -> tuple:
    """A normalised match (as entryplan hands it to add_checked), from a small space
    so duplicates are frequent."""
    out = []
    for spec in keys:
        w, full = spec.width, (1 << spec.width) - 1
        if spec.kind == "exact":
            out.append((rng.randrange(4), full))
        elif spec.kind == "lpm":
            plen = rng.choice([0, 1, 2, w])
            mask = full ^ ((1 << (w - plen)) - 1)
            out.append((rng.randrange(1 << w) & mask, mask, plen))
        elif spec.kind == "ternary":
            mask = rng.choice([0, 1, full])
            out.append((rng.randrange(1 << w) & mask, mask))
        elif spec.kind == "optional":
            mask = rng.choice([0, full])
            out.append((rng.randrange(1 << w) & mask, mask))
        else:
            lo = rng.randrange(4)
            out.append(("r", lo, lo + rng.randrange(3)))
    return tuple(out)


def _entry_form(e: Entry) -> tuple:
    return (e.handle, e.action.name, list(e.args), e.priority, e.order, e.match,
            list(e.run_args), e.last_hit, e.group)


def _outcome(fn, *args):
    """What a call gives: its value or its P4Error message."""
    try:
        return ("ok", fn(*args))
    except P4Error as exc:
        return ("error", exc.message)


def _same(lazy: TableState, eager: TableState, rng: random.Random) -> None:
    keys = [tuple(rng.randrange(1 << k.width) for k in lazy.keys) for _ in range(8)]
    got = [None if e is None else _entry_form(e) for e in map(lazy.lookup, keys)]
    want = [None if e is None else _entry_form(e) for e in map(eager.lookup, keys)]
    # lookup stamps last_hit from each table's own clock: compare the rest
    assert [g and g[:7] for g in got] == [w and w[:7] for w in want]
    assert not lazy._rows
    assert ([_entry_form(e)[:7] for e in lazy.entries.values()]
            == [_entry_form(e)[:7] for e in eager.entries.values()])
    assert lazy.views() == eager.views()


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("seed", range(6))
def test_lazy_equals_eager(layout: str, seed: int) -> None:
    rng = random.Random(f"{layout}-{seed}")
    keys = LAYOUTS[layout]
    lazy, eager = _state(keys, True), _state(keys, False)
    handles: list[int] = []
    deferred_seen = False
    for _ in range(400):
        op = rng.random()
        if op < 0.5:
            match = _match(rng, keys)
            action = rng.choice(["fwd", "drop"])
            args = [rng.randrange(512)] if action == "fwd" else []
            prio = rng.randrange(1, 4) if layout in ("ternary", "range") else None
            want = _outcome(eager.add_checked, match, eager.actions[action], list(args),
                            prio)
            # A writer that has checked uniqueness itself (P4Runtime, its records) says
            # so half the time: the identities then go unkept until a writer that has
            # not checked needs them (rebuilt), which must still see every duplicate.
            unique = want[0] == "ok" and rng.random() < 0.5
            got = _outcome(lazy.add_checked, match, lazy.actions[action], list(args), prio,
                           unique)
            assert got == want
            if got[0] == "ok":
                handles.append(got[1])
        elif op < 0.65 and handles:
            h = rng.choice(handles + [10_000])
            action = rng.choice(["fwd", "drop"])
            args = [rng.randrange(512)] if action == "fwd" else []
            assert (_outcome(lazy.modify_checked, h, lazy.actions[action], list(args))
                    == _outcome(eager.modify_checked, h, eager.actions[action], list(args)))
        elif op < 0.85 and handles:
            h = rng.choice(handles + [10_000])
            assert _outcome(lazy.delete, h) == _outcome(eager.delete, h)
            if h in handles:
                handles.remove(h)
        elif op < 0.9:
            # An eager add with KeyMatch objects (the runtime CLI, STF) beside rows.
            match = _match(rng, keys)
            kms = [KeyMatch(spec.name, spec.kind, m[1] if m[0] == "r" else m[0],
                            high=m[2] if m[0] == "r" else None,
                            mask=m[1] if spec.kind == "ternary" else None,
                            prefix_len=m[2] if spec.kind == "lpm" else None,
                            wildcard=spec.kind == "optional" and not m[1])
                   for spec, m in zip(keys, match, strict=True)]
            prio = rng.randrange(1, 4) if layout in ("ternary", "range") else None
            got = _outcome(lazy.add, kms, "drop", [], prio)
            want = _outcome(eager.add, kms, "drop", [], prio)
            assert got == want
            if got[0] == "ok":
                handles.append(got[1])
        elif op < 0.93:
            _same(lazy, eager, rng)
        deferred_seen |= bool(lazy._rows)
        assert lazy.count() == len(eager.entries)
        assert sorted(lazy.handles()) == sorted(eager.entries)
        assert all(lazy.has(h) for h in handles) and not lazy.has(10_000)
    assert deferred_seen
    _same(lazy, eager, rng)


def test_rows_are_kept_until_needed() -> None:
    """A lazy table builds nothing for checked writes; a lookup builds them all."""
    st = _state(LAYOUTS["lpm"], True)
    fwd = st.actions["fwd"]
    h1 = st.add_checked(((1, 3), (0x80, 0x80, 1)), fwd, [7], None)
    h2 = st.add_checked(((1, 3), (0xC0, 0xC0, 2)), fwd, [8], None)
    st.modify_checked(h1, fwd, [9])
    assert st.built(h1) is None and st.deferred(h1) is not None
    assert st.count() == 2 and not st._entries
    hit = st.lookup((1, 0xC5))
    assert hit is not None and hit.handle == h2 and not st._rows
    assert st.built(h1).args == [9]


def test_full_and_const_tables_refuse_rows() -> None:
    st = _state(LAYOUTS["exact"], True, size=2)
    drop = st.actions["drop"]
    st.add_checked(((1, 255), (1, 15)), drop, [], None)
    st.add_checked(((2, 255), (1, 15)), drop, [], None)
    with pytest.raises(P4Error, match="is full"):
        st.add_checked(((3, 255), (1, 15)), drop, [], None)
    st.entries_const = True
    with pytest.raises(P4Error, match="const entries"):
        st.delete(0)
