"""The C fast path answers packets from lazy rows exactly as the interpreter would.

A FastSwitch keeps P4Runtime's checked writes as TableState rows and feeds them to C
(``tbl_put_rows``) without building the interpreter's entries. The same random
checked inserts, modifies and deletes — some inside ``synced_batch``, some not — go to
an interpreter switch (eager) and a FastSwitch (lazy); random packets through both must
give the same outputs, before and after the FastSwitch's rows are built (by a view),
and the entries both report must match."""

from __future__ import annotations

import random

import pytest
from test_p4runtime_plain_writes import PROGRAM

from softswitch.devtools.fastpath_differential import _load_pair, random_packets
from softswitch.diagnostics import P4Error
from softswitch.frontend.compiler import compile_program


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    path = tmp_path_factory.mktemp("lazy") / "lazy.p4"
    path.write_text(PROGRAM)
    return compile_program(str(path), (str(path.parent),), None)


def _route_match(rng: random.Random) -> tuple:
    plen = rng.choice([8, 16, 48])
    mask = ((1 << 48) - 1) ^ ((1 << (48 - plen)) - 1)
    return ((rng.getrandbits(48) & mask, mask, plen),)


def _acl_match(rng: random.Random) -> tuple:
    full16, full48 = 0xFFFF, (1 << 48) - 1
    lo = rng.getrandbits(48)
    return ((rng.choice([0x0800, 0x86DD]), full16),
            (rng.getrandbits(48) & 0x1, rng.choice([0, 0x1])),
            ("r", lo, min(full48, lo + rng.getrandbits(47))),
            (0, 0))


def _write(sw, rng: random.Random, handles: dict, outcomes: list) -> None:
    """One random checked write, applied the same way to ``sw``; its outcome (the
    handle, or the error of a duplicate) goes to ``outcomes``."""
    table = rng.choice(["I.route", "I.acl"])
    st = sw.table_state(table)
    mine = handles.setdefault(table, [])
    op = rng.random()
    if op < 0.3 and mine:
        h = rng.choice(mine)
        sw.table_delete(table, h)
        mine.remove(h)
        return
    # both actions of each table, so a batch's rows change action now and then (C looks
    # an action up once per run of rows that share it)
    if rng.random() < 0.2:
        action, args = st.resolve_action("drop" if table == "I.route" else "acl_drop"), []
    elif table == "I.route":
        action, args = st.resolve_action("fwd"), [rng.randrange(512), rng.getrandbits(48)]
    else:
        action, args = st.resolve_action("tag"), [rng.randrange(4096)]
    if op < 0.5 and mine:
        sw.table_modify_checked(table, rng.choice(mine), action, args)
        return
    match = _route_match(rng) if table == "I.route" else _acl_match(rng)
    prio = rng.randrange(1, 4) if table == "I.acl" else None
    try:
        h = sw.table_add_checked(table, match, action, args, prio)
    except P4Error as exc:              # a duplicate: both switches refuse it alike
        outcomes.append(exc.message)
        return
    mine.append(h)
    outcomes.append(h)


def _packets(rng: random.Random) -> list[tuple[int, bytes]]:
    out = random_packets(str(rng.random()), 30)
    for _ in range(30):       # Ethernet frames aimed at the routes' prefixes
        out.append((rng.randrange(4), rng.getrandbits(48).to_bytes(6, "big")
                    + rng.getrandbits(48).to_bytes(6, "big")
                    + rng.choice([b"\x08\x00", b"\x86\xdd"]) + bytes(20)))
    return out


def _outputs(sw, packets) -> list:
    return [[(o.port, bytes(o.data)) for o in sw.inject(port, data)]
            for port, data in packets]


@pytest.mark.parametrize("seed", range(3))
def test_rows_reach_the_fast_path(checked, seed: int) -> None:
    rng = random.Random(seed)
    ref, fast = _load_pair(checked, 1)
    assert fast.table_state("I.route").lazy and not ref.table_state("I.route").lazy
    hr: dict = {}
    hf: dict = {}
    outr: list = []
    outf: list = []
    acl_hits = 0
    for step in range(6):
        writes = random.Random(f"{seed}-{step}")
        twin = random.Random(f"{seed}-{step}")
        batched = step % 2 == 0
        for _ in range(60):
            _write(ref, writes, hr, outr)
        if batched:
            with fast.synced_batch():
                for _ in range(60):
                    _write(fast, twin, hf, outf)
        else:
            for _ in range(60):
                _write(fast, twin, hf, outf)
        assert hr == hf and outr == outf
        if step < 3:       # nothing needed the interpreter's entries yet
            assert fast.table_state("I.route")._rows
            assert not fast.table_state("I.route")._entries
        packets = _packets(rng)
        assert _outputs(fast, packets) == _outputs(ref, packets)
        # acl's actions change no header: its direct counter shows which entry won
        hits = [ref.counter_read("I.acl_hits", h) for h in hr.get("I.acl", [])]
        assert [fast.counter_read("I.acl_hits", h) for h in hf.get("I.acl", [])] == hits
        acl_hits += sum(p for p, _ in hits)
        if step == 3:        # build the rows: the C tables must not change
            for table in ("I.route", "I.acl"):
                assert ([(v.handle, v.keys, v.action, v.args, v.priority)
                         for v in fast.table_entries(table)]
                        == [(v.handle, v.keys, v.action, v.args, v.priority)
                            for v in ref.table_entries(table)])
            assert not fast.table_state("I.route")._rows
            assert _outputs(fast, packets) == _outputs(ref, packets)
    assert acl_hits     # the acl entries did compete for packets
