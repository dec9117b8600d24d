"""Work handed to the port loop (softswitch.ports.loop_calls): runs on the loop's thread,
in order, one call per turn, and nobody is left waiting when the loop ends."""

from __future__ import annotations

import threading
import time

import pytest

from softswitch.ports import batchio
from softswitch.ports.dataplane import DataPlane
from softswitch.ports.loop_calls import LoopCalls
from softswitch.runtime_channel import RuntimeChannel


class _Loop:
    """A DataPlane with no ports, its loop on a thread of its own."""

    def __init__(self) -> None:
        self.plane = DataPlane({})
        self.thread = threading.Thread(target=self.plane.run_batches,
                                       args=(lambda *_: None,), daemon=True)

    def __enter__(self) -> DataPlane:
        self.thread.start()
        deadline = time.monotonic() + 5
        while self.plane.calls._loop is None:              # noqa: SLF001 - loop is up
            assert time.monotonic() < deadline, "the port loop did not start"
            time.sleep(0.001)
        return self.plane

    def __exit__(self, *exc: object) -> None:
        self.plane.stop()
        self.thread.join(5)
        self.plane.close()


def test_without_a_loop_a_call_runs_on_the_callers_thread():
    calls = LoopCalls()
    assert calls.call(threading.get_ident) == threading.get_ident()
    assert calls.call_each([lambda: 1, lambda: 2]) == [1, 2]


def test_calls_run_on_the_loop_thread_in_order_and_their_errors_come_back():
    with _Loop() as plane:
        order: list[int] = []
        threads = plane.calls.call_each(
            [lambda n=n: (order.append(n), threading.get_ident())[1] for n in range(50)])
        assert order == list(range(50))
        assert set(threads) == {plane._runner}               # noqa: SLF001
        assert threading.get_ident() not in threads

        def fails() -> None:
            raise ValueError("from the loop")
        with pytest.raises(ValueError, match="from the loop"):
            plane.calls.call(fails)
        assert plane.calls.call(lambda: "still running") == "still running"


def test_one_call_per_turn_so_frames_are_read_between_commands(monkeypatch):
    """Calls queued together never run back to back: the loop waits on its sockets
    (a poll, not a sleep) before each, so frames that came meanwhile go first."""
    mod = batchio.native()
    if mod is None:
        pytest.skip("batchio is not built here")

    class Counting:
        waits = 0

        def wait_ready(self, fds: list[int], timeout: float) -> list[int]:
            Counting.waits += 1
            return mod.wait_ready(fds, timeout)
    monkeypatch.setattr(batchio, "native", lambda: Counting())
    with _Loop() as plane:
        seen = plane.calls.call_each([lambda: Counting.waits] * 5)
        assert seen == sorted(set(seen)), seen      # one more wait before each call


def test_calls_still_queued_when_the_loop_stops_are_run_not_lost():
    calls = LoopCalls()
    calls.open(lambda: None)            # a loop that never turns
    results: list[object] = []
    caller = threading.Thread(target=lambda: results.append(calls.call(lambda: "done")))
    caller.start()
    deadline = time.monotonic() + 5
    while not calls.pending():
        assert time.monotonic() < deadline
        time.sleep(0.001)
    calls.close()                       # the loop ends with the call queued
    caller.join(5)
    assert results == ["done"]
    assert calls.call(threading.get_ident) == threading.get_ident()   # closed: direct


def test_runtime_channel_commands_run_on_the_port_loop():
    """softswitch run hands the channel's commands to the port loop (run_each)."""
    asked_from: list[int] = []

    def no_pipeline() -> None:          # what the channel asks for the switch of the moment
        asked_from.append(threading.get_ident())

    with _Loop() as plane:
        channel = RuntimeChannel(no_pipeline, None, run_each=plane.calls.call_each)
        outcomes = channel.execute_all(["# a comment", "table_dump t", "show_queues 1"])
        assert outcomes[0] == (True, "")
        assert outcomes[1] == (False, "Error: no pipeline is loaded")
        assert outcomes[2][0] is False and "traffic manager" in outcomes[2][1]
        assert channel.execute_all([]) == []
        assert asked_from == [plane._runner]                 # noqa: SLF001


def test_a_checkpoint_serves_urgent_frames_inside_a_call_and_nowhere_else():
    """LoopCalls.checkpoint runs the loop's urgent forwarding only while the loop runs a
    queued call (a runtime-channel command between its steps); elsewhere it is free."""
    calls = LoopCalls()
    served: list[str] = []
    calls.checkpoint()                                   # no loop: nothing
    calls.open(lambda: None, lambda: served.append("urgent"))
    calls.checkpoint()                                   # the loop, but no call: nothing
    assert served == []

    def command() -> str:
        served.append("step 1")
        calls.checkpoint()
        served.append("step 2")
        calls.checkpoint()
        return "done"
    results: list[object] = []
    caller = threading.Thread(target=lambda: results.append(calls.call(command)))
    caller.start()
    deadline = time.monotonic() + 5
    while not calls.pending():
        assert time.monotonic() < deadline
        time.sleep(0.001)
    calls.run_one()                                      # this thread is the loop
    caller.join(5)
    assert results == ["done"]
    assert served == ["step 1", "urgent", "step 2", "urgent"]
    calls.checkpoint()                                   # the call is over: nothing
    assert len(served) == 4
    calls.close()
