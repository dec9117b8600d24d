"""softswitch.forked_jobs: one job per worker process, failures reported, never a hang.

The CI run that failed on a worker killed by its own alarm showed why the worker's
origin matters: pytest had gRPC threads alive, and a forked child inherited a lock one
of them held. These tests hold a lock in another thread and require the jobs to run.
"""

from __future__ import annotations

import os
import threading

from softswitch.forked_jobs import run_forked, worker_context

HELD = threading.Lock()


def _double_under_lock(n: int) -> int:
    """A job that needs a module-level lock (as logging or an import would)."""
    with HELD:
        return n * 2


def _die(n: int) -> int:
    os._exit(3)


def _loop(n: int) -> int:
    while True:
        pass


def _failed(n: int, why: str) -> str:
    return f"{n}: {why}"


def test_a_single_threaded_parent_forks():
    assert threading.active_count() == 1 or worker_context().get_start_method() == "forkserver"
    if threading.active_count() == 1:
        assert worker_context().get_start_method() == "fork"


def test_a_lock_held_by_another_thread_does_not_hang_the_workers():
    release = threading.Event()
    taken = threading.Event()

    def holder() -> None:
        with HELD:
            taken.set()
            release.wait(60)

    thread = threading.Thread(target=holder, daemon=True)
    thread.start()
    try:
        taken.wait(10)
        ctx = worker_context()
        assert ctx.get_start_method() == "forkserver"
        got = run_forked([1, 2, 3], _double_under_lock, _failed, workers=2, timeout=60,
                         context=ctx)
    finally:
        release.set()
        thread.join(10)
    assert sorted(got) == [2, 4, 6]


def test_a_dead_or_overdue_worker_is_one_failed_job():
    died = run_forked([7], _die, _failed, timeout=30)
    assert died == ["7: worker died (exit code 3)"]
    overdue = run_forked([8], _loop, _failed, timeout=1)
    assert overdue == ["8: timeout after 1 s"]
