"""``batchio.wait_ready``'s busy polling (``softswitch run --busy-poll-us``): the port
loop polls its sockets for a while before it sleeps, within the same timeout, and a
zero timeout still looks once."""

from __future__ import annotations

import os
import threading
import time

import pytest

from softswitch.daemon.ports import batchio

mod = batchio.native()
pytestmark = pytest.mark.skipif(mod is None, reason="batchio is not built here")


@pytest.fixture
def pipe():
    r, w = os.pipe()
    yield r, w
    os.close(r)
    os.close(w)


@pytest.mark.parametrize("spin", [0.0, 0.001])
def test_a_zero_timeout_still_looks_once(pipe, spin):
    r, w = pipe
    assert mod.wait_ready([r], 0.0, spin) == []
    os.write(w, b"x")
    assert mod.wait_ready([r], 0.0, spin) == [0]
    assert mod.wait_ready([w, r], 0.0) == [1]


def test_a_frame_during_the_spin_is_seen_without_sleeping(pipe):
    r, w = pipe
    writer = threading.Timer(0.005, os.write, (w, b"x"))
    writer.start()
    t0 = time.monotonic()
    assert mod.wait_ready([r], 5.0, 2.0) == [0]
    assert time.monotonic() - t0 < 1.0
    writer.join()


def test_the_spin_is_part_of_the_timeout(pipe):
    r, _ = pipe
    t0 = time.monotonic()
    assert mod.wait_ready([r], 0.05, 0.02) == []          # spin 20 ms, sleep 30 ms
    took = time.monotonic() - t0
    assert 0.045 <= took < 0.5, took
    t0 = time.monotonic()
    assert mod.wait_ready([r], 0.01, 5.0) == []           # a spin longer than the timeout
    assert time.monotonic() - t0 < 0.5


def test_after_the_spin_it_sleeps_until_a_frame(pipe):
    r, w = pipe
    writer = threading.Timer(0.05, os.write, (w, b"x"))
    writer.start()
    t0 = time.monotonic()
    assert mod.wait_ready([r], -1.0, 0.001) == [0]         # no timeout: sleeps after
    assert 0.04 <= time.monotonic() - t0 < 2.0
    writer.join()
