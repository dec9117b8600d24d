"""softswitch.memory.allocator: the environment ``softswitch run`` re-executes itself with."""

from __future__ import annotations

import pytest

from softswitch.memory import allocator

LIB = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


@pytest.fixture()
def with_jemalloc(monkeypatch):
    monkeypatch.setattr(allocator, "jemalloc_path", lambda: LIB)


@pytest.fixture()
def without_jemalloc(monkeypatch):
    monkeypatch.setattr(allocator, "jemalloc_path", lambda: None)


def test_default_preloads_jemalloc_where_installed(with_jemalloc):
    env = allocator.server_environment({"PATH": "/bin", "LD_PRELOAD": "/opt/x.so"})
    assert env == {"PATH": "/bin", "PYTHONMALLOC": "malloc", "LD_PRELOAD": f"{LIB} /opt/x.so",
                   "MALLOC_CONF": allocator.JEMALLOC_CONF}


def test_jemalloc_never_purges_on_its_own_and_the_users_options_win(with_jemalloc):
    """The reclaimer decides when freed pages go back: jemalloc's own time-based
    purging is off; options the user gives come after softswitch's, so theirs apply."""
    assert "dirty_decay_ms:-1" in allocator.JEMALLOC_CONF
    env = allocator.server_environment({"MALLOC_CONF": "dirty_decay_ms:1000"})
    assert env is not None
    assert env["MALLOC_CONF"] == f"{allocator.JEMALLOC_CONF},dirty_decay_ms:1000"
    assert "MALLOC_CONF" not in allocator.server_environment({}, "glibc")


def test_default_without_jemalloc_is_glibc_with_few_arenas(without_jemalloc):
    env = allocator.server_environment({})
    assert env == {"PYTHONMALLOC": "malloc", "MALLOC_ARENA_MAX": "2"}


def test_glibc_asked_for_preloads_nothing(with_jemalloc):
    env = allocator.server_environment({}, "glibc")
    assert env is not None and "LD_PRELOAD" not in env and env["PYTHONMALLOC"] == "malloc"


def test_jemalloc_asked_for_preloads_it(with_jemalloc):
    env = allocator.server_environment({}, "jemalloc")
    assert env is not None and env["LD_PRELOAD"] == LIB and env["PYTHONMALLOC"] == "malloc"


def test_pymalloc_asked_for_runs_the_interpreters_own(with_jemalloc):
    """A server started with this environment does not re-execute itself (PYTHONMALLOC
    is set) and preloads nothing."""
    assert allocator.server_environment({"PATH": "/bin"}, "pymalloc") == {
        "PATH": "/bin", "PYTHONMALLOC": "pymalloc"}


@pytest.mark.parametrize("choice", [None, "jemalloc", "glibc", "pymalloc"])
def test_a_users_pythonmalloc_keeps_the_process(choice, with_jemalloc):
    assert allocator.server_environment({"PYTHONMALLOC": "pymalloc"}, choice) is None
    assert allocator.server_environment({"PYTHONMALLOC": "malloc"}, choice) is None


def test_jemalloc_asked_for_but_missing_is_an_error(without_jemalloc):
    with pytest.raises(allocator.AllocatorError, match="libjemalloc2"):
        allocator.server_environment({}, "jemalloc")


def test_an_unknown_allocator_is_an_error():
    with pytest.raises(allocator.AllocatorError, match="one of jemalloc, glibc, pymalloc"):
        allocator.server_environment({}, "tcmalloc")


def test_release_heap_purges_jemalloc_when_preloaded():
    """In a process on jemalloc, describe() says so and its purge succeeds (mallctl 0)."""
    import os
    import subprocess
    import sys

    library = allocator.jemalloc_path()
    if library is None:
        pytest.skip("libjemalloc2 is not installed")
    code = ("from softswitch.memory import allocator; "
            "print(allocator.describe(), allocator.release_heap())")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, LD_PRELOAD=library, PYTHONMALLOC="malloc"),
                          timeout=60)
    assert done.stdout.split() == ["jemalloc", "0"], done.stderr


def test_settle_heap_keeps_a_bounded_amount_of_freed_memory_for_the_next_batch():
    """On jemalloc, settle_heap leaves freed pages mapped while they are at most
    KEEP_FREED_BYTES and the server is busy (the next batch reuses them instead of
    faulting them in again), and hands everything back once more is free, or once the
    server has been quiet for KEEP_SECONDS; jemalloc itself returns nothing meanwhile."""
    import os
    import subprocess
    import sys

    library = allocator.jemalloc_path()
    if library is None:
        pytest.skip("libjemalloc2 is not installed")
    code = """
from softswitch.memory import allocator
dirty = allocator._jemalloc_dirty_bytes()
def freed(mib):
    blocks = [bytearray(4000) for _ in range(mib * 256)]
    del blocks
    return dirty()
import time
small = freed(8)
allocator.settle_heap(allocator.KEEP_SECONDS - 1)
time.sleep(0.3)                       # jemalloc's own decay would have begun to purge
kept = dirty()
allocator.settle_heap(allocator.KEEP_SECONDS)
quiet = dirty()
big = freed(allocator.KEEP_FREED_BYTES // 2**20 + 16)
allocator.settle_heap(0.0)
print(small >> 20, kept >> 20, quiet >> 20, big >> 20, dirty() >> 20)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=dict(os.environ, LD_PRELOAD=library, PYTHONMALLOC="malloc",
                                   MALLOC_CONF=allocator.JEMALLOC_CONF),
                          timeout=60)
    assert done.returncode == 0, done.stderr
    small, kept, quiet, big, after = map(int, done.stdout.split())
    assert small >= 6 and kept >= small, done.stdout              # kept for reuse
    assert quiet <= 1, done.stdout                                 # quiet: handed back
    assert big > allocator.KEEP_FREED_BYTES >> 20, done.stdout
    assert after <= 1, done.stdout                                 # all handed back
