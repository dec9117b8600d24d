"""Run jobs in forked worker processes, a few at a time, each with a deadline.

The conformance corpus, the fast-path differential and the front-end difftest all
compile and run programs that may crash (a bug in generated C), loop or eat memory.
Each job therefore runs in a process of its own: a crash, a timeout or a worker that
dies is one failed job, reported through the caller's ``failed(job, why)``, never a
dead or hung run. The worker's own output goes to /dev/null (the parent reports), and
nothing is left running when the parent is interrupted.
"""

from __future__ import annotations

import importlib
import multiprocessing
import multiprocessing.connection
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from multiprocessing.context import BaseContext
from typing import Any, TypeVar

J = TypeVar("J")
R = TypeVar("R")


def silence() -> None:
    """Send this process's stdout and stderr to /dev/null: interleaved output of
    parallel workers is unreadable, and the parent reports the results."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.close(devnull)


def worker_context(preload: Sequence[str] = ()) -> BaseContext:
    """Where workers come from. ``fork`` is cheap and warm (``preload`` imported once
    here first), but only from a single-threaded parent: with other threads alive (a
    test session that ran gRPC servers, say) a forked child can inherit a lock another
    thread held and hang until its deadline. Then workers come from a ``forkserver``,
    a clean process with the same modules preloaded."""
    if threading.active_count() == 1:
        for name in preload:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - a missing part fails in its own checks
                pass
        return multiprocessing.get_context("fork")
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(preload))
    return ctx


def _child(work: Callable[[J], R], failed: Callable[[J, str], R], job: J,
           conn: multiprocessing.connection.Connection) -> None:
    """Child process: run one job, send its result, exit without cleanup."""
    try:
        silence()
        result = work(job)
    except BaseException as err:  # noqa: BLE001 - report, never hang the parent
        result = failed(job, f"worker error: {type(err).__name__}: {err}")
    try:
        conn.send(result)
    finally:
        conn.close()
        os._exit(0)


def _finished(conn: Any, proc: Any, job: J, started: float, now: float, ready: list,
              timeout: float, failed: Callable[[J, str], R]) -> tuple[bool, R | None]:
    """(done, result) for one running worker: its result, a failure for a dead or
    overdue one, or not done yet."""
    if conn in ready:
        try:
            return True, conn.recv()
        except (EOFError, OSError):
            proc.join(5)
            return True, failed(job, f"worker died (exit code {proc.exitcode})")
    if now - started > timeout:
        proc.kill()
        return True, failed(job, f"timeout after {timeout:.0f} s")
    return False, None


def run_forked(jobs: Iterable[J], work: Callable[[J], R], failed: Callable[[J, str], R],
               *, workers: int = 2, timeout: float = 300.0,
               context: BaseContext | None = None, budget_s: float | None = None,
               on_result: Callable[[J, R], None] | None = None) -> list[R]:
    """``work(job)`` for each job in a forked worker, ``workers`` at a time; results in
    the order the jobs finish (``work``, ``failed`` and jobs must pickle when the
    context is not ``fork``). ``failed(job, why)`` stands for a job that raised, died
    or ran past ``timeout`` seconds. The context defaults to :func:`worker_context`.
    With ``budget_s`` no job starts after that many seconds (the ones running finish).
    ``jobs`` is read lazily, one job per start."""
    ctx = context or worker_context()
    pending = iter(jobs)
    running: dict[Any, tuple[Any, J, float]] = {}
    results: list[R] = []
    start = time.monotonic()
    try:
        while True:
            while len(running) < max(1, workers) and (
                    budget_s is None or time.monotonic() - start < budget_s):
                job = next(pending, _END)
                if job is _END:
                    break
                parent, child = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_child, args=(work, failed, job, child),
                                   daemon=True)
                proc.start()
                child.close()
                running[parent] = (proc, job, time.monotonic())
            if not running:
                return results
            ready = multiprocessing.connection.wait(list(running), timeout=0.2)
            now = time.monotonic()
            for conn in list(running):
                proc, job, started = running[conn]
                done, result = _finished(conn, proc, job, started, now, ready, timeout,
                                         failed)
                if not done:
                    continue
                proc.join(5)
                conn.close()
                del running[conn]
                results.append(result)  # type: ignore[arg-type]
                if on_result is not None:
                    on_result(job, result)  # type: ignore[arg-type]
    finally:  # interrupted: leave no orphan workers behind
        for proc, _, _ in running.values():
            proc.kill()


_END: Any = object()
