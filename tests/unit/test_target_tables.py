"""Table matching: exact, lpm, ternary/range priorities, duplicates, limits."""

import pytest

from softswitch.core.control import KeyMatch
from softswitch.core.tables import ActionDef, KeySpec, TableState
from softswitch.diagnostics import P4Error


def make(kinds, size=16):
    log = []
    acts = {
        "C.set": ActionDef("C.set", (("v", 8),), lambda v: log.append(v)),
        "C.drop": ActionDef("C.drop", (), lambda: log.append("drop")),
    }
    keys = [KeySpec(f"k{i}", k, 8) for i, k in enumerate(kinds)]
    return TableState("C.t", keys, acts, size=size), log


def test_exact_lookup_and_duplicate():
    t, _ = make(["exact", "exact"])
    h = t.add([KeyMatch("k0", "exact", 1), KeyMatch("k1", "exact", 2)], "set", [7], None)
    assert t.lookup((1, 2)).handle == h
    assert t.lookup((2, 1)) is None
    with pytest.raises(P4Error, match="duplicate"):
        t.add([KeyMatch("", "exact", 1), KeyMatch("", "exact", 2)], "drop", [], None)


def test_lpm_longest_prefix_wins():
    t, _ = make(["lpm"])
    short = t.add([KeyMatch("", "lpm", 0x80, prefix_len=1)], "set", [1], None)
    long_ = t.add([KeyMatch("", "lpm", 0xA0, prefix_len=3)], "set", [2], None)
    assert t.lookup((0xA5,)).handle == long_
    assert t.lookup((0x85,)).handle == short
    assert t.lookup((0x05,)) is None
    t.delete(long_)
    assert t.lookup((0xA5,)).handle == short


def test_ternary_higher_priority_wins_and_range():
    t, _ = make(["ternary", "range"])
    lo = t.add([KeyMatch("", "ternary", 0, mask=0), KeyMatch("", "range", 0, high=255)],
               "set", [1], 1)
    hi = t.add([KeyMatch("", "ternary", 0x10, mask=0xF0),
                KeyMatch("", "range", 5, high=9)], "set", [2], 10)
    assert t.lookup((0x1F, 7)).handle == hi
    assert t.lookup((0x1F, 10)).handle == lo
    assert t.lookup((0x2F, 7)).handle == lo


def test_action_argument_checks_and_size_limit():
    t, _ = make(["exact"], size=1)
    with pytest.raises(P4Error, match="does not fit"):
        t.add([KeyMatch("", "exact", 1)], "set", [256], None)
    with pytest.raises(P4Error, match="no action"):
        t.add([KeyMatch("", "exact", 1)], "nope", [], None)
    t.add([KeyMatch("", "exact", 1)], "set", [3], None)
    with pytest.raises(P4Error, match="full"):
        t.add([KeyMatch("", "exact", 2)], "set", [3], None)


def test_const_default_and_const_entries_are_protected():
    t, log = make(["exact"])
    t.set_default("drop", [], initial=True)
    t.default_const = True
    with pytest.raises(P4Error, match="const"):
        t.set_default("set", [1])
    t.add([KeyMatch("", "exact", 1)], "set", [5], None, const=True)
    t.entries_const = True
    with pytest.raises(P4Error, match="const entries"):
        t.add([KeyMatch("", "exact", 2)], "set", [5], None)
    e = t.lookup((1,))
    e.action.fn(*e.args)
    assert log == [5]


def test_modify_and_views():
    t, _ = make(["exact"])
    h = t.add([KeyMatch("", "exact", 4)], "set", [1], None)
    t.modify(h, "C.drop", [])
    (view,) = t.views()
    assert view.handle == h and view.action == "C.drop" and view.args == []


def test_grouped_ternary_lookup_agrees_with_a_linear_scan():
    import random
    rng = random.Random(5)
    t, _ = make(["ternary", "exact", "lpm"], size=1000)
    assert t.masked
    live = {}
    for _ in range(400):
        if live and rng.random() < 0.25:
            h = rng.choice(list(live))
            t.delete(h)
            del live[h]
            continue
        keys = [KeyMatch("", "ternary", rng.randrange(256), mask=rng.choice([0, 0xF0, 0xFF])),
                KeyMatch("", "exact", rng.randrange(4)),
                KeyMatch("", "lpm", rng.randrange(256), prefix_len=rng.choice([0, 4, 8]))]
        try:
            h = t.add(keys, "set", [1], rng.randrange(10))
        except P4Error:
            continue
        live[h] = t.entries[h]
    for _ in range(500):
        key = (rng.randrange(256), rng.randrange(4), rng.randrange(256))
        matching = [e for e in live.values()
                    if all(k & m[1] == m[0] for k, m in zip(key, e.match, strict=True))]
        want = min(matching, key=lambda e: (-e.priority, e.order), default=None)
        assert t.lookup(key) is want
