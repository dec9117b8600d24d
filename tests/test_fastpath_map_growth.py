"""The C tables' hash maps grow incrementally (rt_head.c: MAP_STEP slots moved per
write) and answer every lookup meanwhile as the interpreter does.

3,000 /48 routes go into one LPM prefix-length map (and the handle map), growing them
16 -> 4096 slots; deletes, modifies and re-inserts land while the old arrays are still
being emptied. Every few writes, packets aimed at live, deleted and never-added MACs go
through the C switch and the interpreter; a clear in the middle of a growth must leave
nothing behind."""

from __future__ import annotations

import random

import pytest
from test_p4runtime_plain_writes import PROGRAM

from softswitch.devtools.fastpath_differential import _load_pair
from softswitch.frontend.compiler import compile_program

FULL = (1 << 48) - 1


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    path = tmp_path_factory.mktemp("growth") / "growth.p4"
    path.write_text(PROGRAM.replace("size = 512;", "size = 8192;", 1))
    return compile_program(str(path), (str(path.parent),), None)


def _frame(dst: int) -> bytes:
    return dst.to_bytes(6, "big") + bytes.fromhex("020000000001") + b"\x08\x00" + bytes(46)


def _out(sw, dst: int) -> list:
    return [(o.port, bytes(o.data)) for o in sw.inject(0, _frame(dst))]


def _compare(ref, fast, sample: list[int]) -> None:
    """Each MAC's frame leaves C as it leaves the interpreter."""
    for mac in sample:
        assert _out(fast, mac) == _out(ref, mac), hex(mac)


def test_lookups_stay_right_while_maps_grow(checked) -> None:
    rng = random.Random(7)
    ref, fast = _load_pair(checked, 1)
    macs = rng.sample(range(1 << 40, 1 << 41), 3200)
    live: dict[int, tuple[int, int, int, int]] = {}  # mac -> ref, fast handle, port, src
    gone: list[int] = []
    checked_while_growing = 0

    def add(mac: int, port: int) -> None:
        handles = []
        for sw in (ref, fast):
            st = sw.table_state("I.route")
            handles.append(sw.table_add_checked("I.route", ((mac, FULL, 48),),
                                                st.resolve_action("fwd"), [port, mac], None))
        live[mac] = (handles[0], handles[1], port, mac)

    def expect_all(deleted: list[int]) -> None:
        """Every live route found by C with its port and source, deleted ones missed
        (the default action sends to port 1)."""
        for mac, (_, _, port, src) in live.items():
            (out,) = fast.inject(0, _frame(mac))
            assert (out.port, bytes(out.data[6:12])) == (port, src.to_bytes(6, "big")), hex(mac)
        for mac in deleted:
            assert [o.port for o in fast.inject(0, _frame(mac))] == [1], hex(mac)


    for n, mac in enumerate(macs[:3000]):
        add(mac, 2 + n % 7)
        step = rng.random()
        if step < 0.15:                                 # delete one
            victim = rng.choice(list(live))
            hr, hf, _, _ = live.pop(victim)
            ref.table_delete("I.route", hr)
            fast.table_delete("I.route", hf)
            gone.append(victim)
        elif step < 0.25:                               # modify one
            target = rng.choice(list(live))
            hr, hf, _, _ = live[target]
            port = rng.randrange(2, 9)
            for sw, h in ((ref, hr), (fast, hf)):
                sw.table_modify_checked("I.route", h, sw.table_state("I.route")
                                        .resolve_action("fwd"), [port, target + 1])
            live[target] = (hr, hf, port, target + 1)
        elif step < 0.3 and gone:                        # a deleted route comes back
            add(gone.pop(rng.randrange(len(gone))), rng.randrange(2, 9))
        if n % 3 == 0:                                  # every route, on C alone
            expect_all(gone[-8:])
        if n % 7 == 0:
            _compare(ref, fast, rng.sample(list(live), min(8, len(live)))
                     + gone[-4:] + [rng.choice(macs[3000:])])
            checked_while_growing += 1
    _compare(ref, fast, list(live))                 # every live route, at the end
    _compare(ref, fast, gone)
    assert checked_while_growing > 400

    # a clear in the middle of growing (2048 -> 4096 slots started at 1536 entries)
    for sw in (ref, fast):
        sw.table_clear("I.route")
    live.clear()
    for n, mac in enumerate(macs[:1600]):
        add(mac, 2)
        if n == 1540:
            for sw in (ref, fast):
                sw.table_clear("I.route")
            live.clear()
    _compare(ref, fast, macs[:1600])
    assert all(_out(fast, m) == _out(ref, m) for m in macs[1541:1600])


def test_prefix_lengths_in_use_follow_their_maps_filling_and_emptying(checked) -> None:
    """An LPM lookup tries only the prefix lengths that hold routes (rt_head.c's
    ``plens``), refreshed when a length's map fills or empties, not on every write.
    Routes of nested lengths (/8 ... /48 over one MAC) come and go in random order, a
    length emptied and refilled many times: after each write the longest live prefix
    must win in C as in the interpreter, and the default once none is left."""
    rng = random.Random(11)
    ref, fast = _load_pair(checked, 1)
    base = 0x0A1B2C3D4E5F
    lengths = (8, 16, 24, 32, 40, 44, 48)
    probes = [base, base ^ 1, base ^ 0xFF, base ^ (1 << 20), base ^ (1 << 30),
              base ^ (1 << 45), 0x0B0000000000]
    live: dict[int, tuple[int, int]] = {}       # prefix length -> (ref, fast) handles

    def route(plen: int) -> tuple:
        mask = (FULL << (48 - plen)) & FULL
        return ((base & mask, mask, plen),)

    for step in range(400):
        plen = rng.choice(lengths)
        if plen in live:
            hr, hf = live.pop(plen)
            ref.table_delete("I.route", hr)
            fast.table_delete("I.route", hf)
        else:
            live[plen] = tuple(
                sw.table_add_checked("I.route", route(plen),
                                     sw.table_state("I.route").resolve_action("fwd"),
                                     [2 + plen % 7, plen], None)
                for sw in (ref, fast))
        for dst in probes:
            assert _out(fast, dst) == _out(ref, dst), (step, sorted(live), hex(dst))
        if not live:
            assert [o.port for o in fast.inject(0, _frame(base))] == [1]


def test_lookups_stay_right_while_maps_shrink_and_empty(checked) -> None:
    """Deletes shrink a sparse map (rt_head.c: into a quarter of the slots, moved
    MAP_STEP at a time) and free an emptied one. 3,000 routes in, then deleted in random
    order down to none, with a few inserts and modifies meanwhile: every few writes,
    live, deleted and never-added MACs must go through C as through the interpreter;
    then the emptied table fills again."""
    rng = random.Random(13)
    ref, fast = _load_pair(checked, 1)
    macs = rng.sample(range(1 << 40, 1 << 41), 3600)
    live: dict[int, tuple[int, int]] = {}           # mac -> (ref, fast) handles
    gone: list[int] = []

    def add(mac: int, port: int) -> None:
        live[mac] = tuple(
            sw.table_add_checked("I.route", ((mac, FULL, 48),),
                                 sw.table_state("I.route").resolve_action("fwd"),
                                 [port, mac], None)
            for sw in (ref, fast))


    for n, mac in enumerate(macs[:3000]):
        add(mac, 2 + n % 7)
    fresh = iter(macs[3000:])                          # inserted while shrinking
    step = 0
    while live:
        victim = rng.choice(list(live))
        hr, hf = live.pop(victim)
        ref.table_delete("I.route", hr)
        fast.table_delete("I.route", hf)
        gone.append(victim)
        roll = rng.random()
        if roll < 0.03:                                 # an insert while shrinking
            add(next(fresh), rng.randrange(2, 9))
        elif roll < 0.06 and live:                      # a modify
            target, port = rng.choice(list(live)), rng.randrange(2, 9)
            for sw, h in zip((ref, fast), live[target], strict=True):
                sw.table_modify_checked("I.route", h, sw.table_state("I.route")
                                        .resolve_action("fwd"), [port, 5])
        if step % 5 == 0 or len(live) < 300:
            _compare(ref, fast, rng.sample(list(live), min(6, len(live))) + gone[-3:]
                     + [rng.choice(macs)])
        step += 1
    _compare(ref, fast, macs)                       # all gone: the default for each
    assert all([o.port for o in fast.inject(0, _frame(m))] == [1] for m in macs[:50])
    for n, mac in enumerate(macs[:500]):                # the freed maps fill again
        add(mac, 2 + n % 7)
    _compare(ref, fast, macs[:600])
