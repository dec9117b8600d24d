"""The benchmarks' own workloads still build and forward (a benchmark that cannot start
is found here, not in a ``make bench`` run): bench/pps.py's tailcc lab configuration
programs tailcc.p4 on both packet paths, and its RoCEv2 mix leaves the same way on each."""

from __future__ import annotations

import os
import sys
import time

from bench_support import BENCH, bench_module


def test_pps_tailcc_lab_workload_forwards_alike_on_both_paths():
    pps = bench_module("pps")
    switches, packets = pps.tailcc_lab()
    assert set(switches) == {"interpreter", "C"} and len(packets) == 32
    outs = {name: [[(o.port, o.data) for o in sw.inject(port, data)]
                   for port, data in packets] for name, sw in switches.items()}
    assert outs["interpreter"] == outs["C"]
    assert sum(bool(out) for out in outs["C"]) >= len(packets) // 2   # most are forwarded


def test_tail_latency_bench_imports():
    assert hasattr(bench_module("tail_latency"), "main")


def test_p4runtime_write_bench_reports_the_median_of_its_rounds(tmp_path):
    """bench/p4runtime_write.py against softswitch, tiny: every phase ran each round,
    and the figure reported is the median round's."""
    import json
    import subprocess

    out = tmp_path / "write.json"
    done = subprocess.run([sys.executable, str(BENCH / "p4runtime_write.py"), "--targets",
                           "softswitch", "--entries", "300", "--insert-batch", "1", "100",
                           "--batch", "100", "--rounds", "3", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    phases = json.loads(out.read_text())["targets"]["softswitch"]["phases"]
    assert [(p["phase"], p["batch"]) for p in phases] == [
        ("insert", 1), ("insert", 100), ("read", None), ("re-read", None),
        ("modify", 100), ("delete", 100)]
    for phase in phases:
        rounds = phase["rounds_seconds"]
        assert len(rounds) == 3 and all(s > 0 for s in rounds)
        assert round(phase["seconds"], 6) == sorted(rounds)[1]
        assert abs(phase["entries_per_s"] - 300 / phase["seconds"]) < 1e-6 * phase["entries_per_s"]


def test_p4runtime_write_targets_take_turns_the_other_stopped():
    """bench/p4runtime_write.py's rounds alternate between the targets, and the one
    waiting is stopped (SIGSTOP) while the other runs; all run again at the end."""
    import subprocess

    bench = bench_module("p4runtime_write")

    def state(pid: int) -> str:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]

    procs = {name: subprocess.Popen(["sleep", "60"]) for name in ("a", "b")}
    seen: list[tuple[str, str, str]] = []
    try:
        def session(name: str):
            other = procs["b" if name == "a" else "a"]

            def one_round() -> None:
                seen.append((name, state(procs[name].pid), state(other.pid)))
            return bench.Session(procs[name].pid, one_round, lambda: {"ran": name})

        got = bench.run_rounds({n: session(n) for n in procs}, 2)
        assert got == {"a": {"ran": "a"}, "b": {"ran": "b"}}
        assert [n for n, _, _ in seen] == ["a", "b", "a", "b"]
        # the one running is not stopped (R, S, or D while the kernel pages it in)
        assert all(mine not in "Tt" for _, mine, _ in seen), seen
        assert all(theirs == "T" for _, _, theirs in seen), seen
        for proc in procs.values():
            bench._resume(proc.pid)
            assert state(proc.pid) not in "Tt", state(proc.pid)
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()


def test_cli_commands_bench_modifies_deletes_and_re_adds_by_handle(tmp_path):
    """bench/cli_commands.py against softswitch, tiny: at each size every kind of
    command ran on the handles table_add returned (an error stops the bench), and the
    JSON holds one rate per size and kind."""
    import json
    import subprocess

    out = tmp_path / "cli.json"
    done = subprocess.run([sys.executable, str(BENCH / "cli_commands.py"), "--targets",
                           "softswitch", "--sizes", "150", "300", "--commands", "100",
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = json.loads(out.read_text())["targets"]["softswitch"]
    rated = [(r["size"], r["kind"]) for r in rows if r["size"] is not None]
    assert rated == [(size, kind) for size in (150, 300)
                     for kind in ("table_modify", "table_delete", "table_add")]
    assert all(r["per_s"] > 0 and r["commands"] == 100 for r in rows if r["size"])


def _root() -> bool:
    import os

    return os.geteuid() == 0


def test_urgent_latency_tap_takes_one_urgent_frame_in_tap_sample():
    """The tap on the switch's ingress port (bench/urgent_latency.py) stamps urgent
    frames whose sequence number is a multiple of TAP_SAMPLE, nothing else: a real
    kernel filter on a veth pair."""
    import pytest

    if not _root():
        pytest.skip("needs root for veth/AF_PACKET")
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    from softswitch.daemon.ports.afpacket import RawPort
    from softswitch.daemon.ports.veth import veth_pairs

    ul = bench_module("urgent_latency")
    other = bytes(Ether() / IP(tos=0) / UDP() / (ul.STAMP.pack(ul.MAGIC, 0, 1) + bytes(48)))
    unstamped = bytes(Ether() / IP(tos=ul.URGENT_DSCP << 2) / UDP() / bytes(64))
    frames = [ul._urgent(seq, 1) for seq in range(3 * ul.TAP_SAMPLE + 1)] + [other, unstamped]
    with veth_pairs(1, "ut") as pairs:
        (a, b), = pairs
        tap, tx = RawPort(a, ul._tap_program()), RawPort(b)
        try:
            tx.send_batch(frames)
            got = []
            for _ in range(30):             # everything sent has arrived by then
                got += [ul._seq_and_sent(f) for f in tap.receive_batch()]
                time.sleep(0.01)
        finally:
            tap.close()
            tx.close()
    assert got == [(seq, 1) for seq in range(0, 3 * ul.TAP_SAMPLE + 1, ul.TAP_SAMPLE)]


def test_urgent_latency_max_rate_is_the_median_of_its_runs(monkeypatch):
    """The rate the urgent bench's load is a share of is the median of its runs, each
    a real pump of frames over a veth pair (here a bare one), not the luckiest."""
    import pytest

    if not _root():
        pytest.skip("needs root for veth/AF_PACKET")
    ul = bench_module("urgent_latency")
    from softswitch.daemon.ports.veth import veth_pairs

    monkeypatch.setattr(ul, "MAX_RATE_FRAMES", 2000)
    with veth_pairs(1, "r") as pairs:
        far, near = pairs[0]
        rate, runs = ul.max_rate(near, far)
    assert len(runs) == ul.MAX_RATE_RUNS and all(run > 1000 for run in runs)
    assert rate == sorted(runs)[len(runs) // 2]


def test_urgent_latency_rounds_run_the_scenarios_forth_and_back():
    ul = bench_module("urgent_latency")
    order = [ul.round_order(("a", "b", "c"), r) for r in range(4)]
    assert order == [("a", "b", "c"), ("c", "b", "a")] * 2


def test_urgent_latency_dataplane_cpu_choices():
    import pytest

    ul = bench_module("urgent_latency")
    allowed = os.sched_getaffinity(0)
    assert ul.dataplane_cpu("off") is None
    assert ul.dataplane_cpu("auto") == (max(allowed) if len(allowed) >= 2 else None)
    with pytest.raises(ValueError, match="not one of two or more"):
        ul.dataplane_cpu("4095")
    with pytest.raises(ValueError, match="expected auto, off or a CPU number"):
        ul.dataplane_cpu("x")


def test_urgent_latency_bench_measures_from_the_switchs_port(tmp_path):
    """A short idle run on softswitch: every urgent frame the tap sampled is matched at
    the receiver, and both latencies are reported."""
    import json
    import subprocess

    import pytest

    if not _root():
        pytest.skip("needs root for veth/AF_PACKET")
    out = tmp_path / "urgent.json"
    done = subprocess.run([sys.executable, str(BENCH / "urgent_latency.py"), "--targets",
                           "softswitch", "--scenarios", "idle", "--seconds", "2",
                           "--max-pps", "softswitch=4000", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text())
    # by default the port loop runs on a CPU of its own where there are two or more
    allowed = os.sched_getaffinity(0)
    assert report["dataplane_cpu"] == (max(allowed) if len(allowed) >= 2 else None)
    # the load is a share of the max rate given, none measured
    assert report["targets"]["softswitch"]["max_pps"] == 4000
    assert report["targets"]["softswitch"]["max_pps_runs"] == []
    assert "loaded at 50% of 4,000 frames/s (given)" in done.stdout
    row = report["targets"]["softswitch"]["scenarios"][0]
    assert row["received"] > 1000 and row["loss"] < 0.01 and row["unmatched"] == 0
    # the sender keeps its pacing at SCHED_FIFO (root may set it)
    assert report["generator_priority"] == "fifo" and row["generator_fifo"]
    assert 0 < row["p50_us"] <= row["p99_us"] <= row["max_us"]
    assert row["e2e_p99_us"] > 0 and row["e2e_max_us"] > 0
    # the switch's ports say what the kernel dropped there (show_ports): nothing here
    assert row["switch_urgent_drops"] == 0 and row["switch_other_drops"] == 0


def test_urgent_latency_bench_writes_routes_over_p4runtime(tmp_path):
    """The controller of ``elephants+p4runtime`` writes its routes over P4Runtime while
    the elephants run, and a writer that fails fails the scenario (no figure measured
    without the writes passes for one with them)."""
    import json
    import subprocess

    import pytest

    if not _root():
        pytest.skip("needs root for veth/AF_PACKET")
    out = tmp_path / "urgent.json"
    done = subprocess.run([sys.executable, str(BENCH / "urgent_latency.py"), "--targets",
                           "softswitch", "--scenarios", "elephants+p4runtime", "--seconds",
                           "2", "--max-pps", "softswitch=4000", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    row = json.loads(out.read_text())["targets"]["softswitch"]["scenarios"][0]
    assert row["scenario"] == "elephants+p4runtime" and row["elephant_pps"] > 0
    assert row["writes"]["writes"] >= 1000 and row["writes"]["applied_per_s"] > 500
    assert row["received"] > 1000 and row["loss"] < 0.01


def test_urgent_latency_writer_failure_fails_the_scenario():
    ul = bench_module("urgent_latency")
    result: dict = {}

    def broken(switch, stop, res):
        raise RuntimeError("Write failed: update 0: ALREADY_EXISTS")

    ul._writing(broken, None, None, result)
    assert result["error"] == "RuntimeError: Write failed: update 0: ALREADY_EXISTS"


def test_urgent_latency_rounds_pool_their_frames_and_keep_each_rounds_tail():
    """``--rounds``: a scenario's percentiles are over the frames of all its rounds
    (interleaved with the other scenarios), and each round's own P99/max and loss are
    kept beside them, so a host stall in one round shows as that round's."""
    ul = bench_module("urgent_latency")

    def round_of(latencies_us: list[int], expected: int, drops: int) -> object:
        ns = sorted(v * 1000 for v in latencies_us)
        return ul.Round(ns, ns, expected, 0, 1.0, 10.0, (50, 100, 2), 0.5, 0.3,
                        {"writes": 10, "offered_per_s": 1000.0, "applied_per_s": 990.0,
                         "controller_cpu_s": 0.25}, {"receiver": drops, "tap": 0})

    quiet = round_of(list(range(1, 1001)), 1000, 0)          # 1..1000 µs
    stalled = round_of([5] * 990 + [50_000] * 10, 1100, 7)   # 1% of it waited 50 ms
    row = ul._summary("elephants+p4runtime", (100.0, 50.0), [quiet, stalled])
    assert row["received"] == 2000 and row["receiver_drops"] == 7
    assert abs(row["loss"] - (1 - 2000 / 2100)) < 1e-9
    assert row["p99_us"] == 991.0 and row["max_us"] == 50_000.0   # over all 2000 frames
    assert [r["p99_us"] for r in row["rounds"]] == [991.0, 50_000.0]
    assert [r["loss"] for r in row["rounds"]] == [0.0, 1 - 1000 / 1100]
    assert row["writes"]["writes"] == 20 and row["writes"]["controller_cpu_s"] == [0.25] * 2
    assert row["host_busy"] == 0.5
    one = ul._summary("idle", (100.0, 0.0), [quiet])
    assert "rounds" not in one and "writes" in one


def test_urgent_latency_splits_frames_by_the_writers_windows():
    """The writes scenarios' frames are split by when they reached the switch: in a
    writing window, between two (after GUARD_S), or neither (the guard, or before the
    writer began); the row's P99 is the writing frames', beside the between ones'."""
    ul = bench_module("urgent_latency")
    start, s = 10**18, 10**9
    stamps = [start - s, start + s // 2, start + s + s // 100, start + 3 * s // 2,
              start + 23 * s // 10, start + 39 * s // 10]
    latencies = [1, 2, 3, 4, 5, 6]
    # per cycle (a window, the pause after it), as block_bootstrap resamples them
    assert ul.write_cycles(stamps, latencies, start, 1.0) == [([2], [4]), ([5], [6])]
    assert ul.second_blocks(stamps, latencies) == [[1], [2], [3, 4], [5], [6]]
    assert ul.second_blocks([start, start + 2 * s], [7, 8]) == [[7], [], [8]]
    assert ul._writing_seconds(3.5, 1.0) == 2.0 and ul._writing_seconds(3.5, 0.0) == 3.5

    def round_of(on_us: list[int], off_us: list[int]) -> object:
        on, off = sorted(v * 1000 for v in on_us), sorted(v * 1000 for v in off_us)
        return ul.Round(on, on, len(on) + len(off), 0, 1.0, 10.0, (50, 100, 2), 0.5, 0.3,
                        {"writes": 10, "offered_per_s": 1000.0, "applied_per_s": 990.0,
                         "controller_cpu_s": 0.25, "window_s": 1.0},
                        {"receiver": 0, "tap": 0}, off)

    row = ul._summary("elephants+p4runtime", (100.0, 50.0),
                      [round_of([200] * 100, [100] * 100), round_of([300] * 100, [100] * 100)])
    assert row["p99_us"] == 300.0 and row["between_p99_us"] == 100.0
    assert row["writing_vs_between_p99"] == 3.0 and row["writes"]["window_s"] == 1.0
    assert [r["between_p99_us"] for r in row["rounds"]] == [100.0, 100.0]
    assert "while the controller writes 300 µs, between its writes (same rounds) 100 µs" \
        in ul.table({"targets": {"softswitch": {"scenarios": [row]}},
                     "scenarios": ["elephants+p4runtime"]})


def test_block_bootstrap_interval_of_a_p99_ratio():
    """The interval holds the ratio of two P99s a run's blocks can give: about 1 for two
    halves of the same traffic, about 2 when one side is twice as slow, and wide when
    one slow spell (a block) makes the tail, as on a shared host."""
    import random

    import pytest

    bb = bench_module("block_bootstrap")
    rng = random.Random(1)

    def blocks(n: int, scale: float = 1.0) -> list[list[int]]:
        return [[int(rng.expovariate(1 / 100) * scale) + 1 for _ in range(500)]
                for _ in range(n)]

    same = bb.ratio_interval(blocks(30), blocks(30))
    assert same is not None and same[0] < 1.0 < same[1] and same[1] - same[0] < 0.5
    double = bb.ratio_interval(blocks(30, 2.0), blocks(30))
    assert double is not None and 1.7 < double[0] < double[1] < 2.4
    spell = blocks(30)
    spell[7] = [50_000] * 200 + spell[7][:300]          # 1.3% of the frames, one spell
    wide = bb.ratio_interval(spell, blocks(30))
    assert wide is not None and wide[0] < 1.5 and wide[1] > 50
    # paired: the same blocks drawn on both sides; the same seed, the same interval
    on, off = blocks(20, 1.1), blocks(20)
    assert bb.ratio_interval(on, off, paired=True) == bb.ratio_interval(on, off, paired=True)
    with pytest.raises(ValueError, match="paired blocks: 20 against 19"):
        bb.ratio_interval(on, off[:19], paired=True)
    assert bb.ratio_interval(on[:1], off) is None and bb.ratio_interval(on, [[], []]) is None


def test_urgent_latency_writers_set_against_the_elephants_with_intervals():
    """A writes scenario's row gives its P99 over the elephants scenario's, and both
    its ratios an interval from their blocks."""
    import random

    ul = bench_module("urgent_latency")
    rng = random.Random(2)

    def blocks(n: int, us: int) -> list[list[int]]:
        return [[int(rng.uniform(0.5, 1.5) * us * 1000) for _ in range(400)]
                for _ in range(n)]

    def round_of(on: list[list[int]], off: list[list[int]]) -> object:
        flat_on = sorted(v for b in on for v in b)
        return ul.Round(flat_on, flat_on, len(flat_on), 0, 1.0, 10.0, (50, 100, 2), 0.5,
                        0.3, {"writes": 10, "offered_per_s": 1000.0,
                              "applied_per_s": 990.0, "controller_cpu_s": 0.25,
                              "window_s": 1.0} if off else {},
                        {"receiver": 0, "tap": 0}, sorted(v for b in off for v in b),
                        True, on, off)

    done = {"elephants": [round_of(blocks(20, 100), [])],
            "elephants+p4runtime": [round_of(blocks(10, 200), blocks(10, 100))]}
    rows = [ul._summary(name, (100.0, 50.0), rounds) for name, rounds in done.items()]
    ul._against_elephants(rows, done)
    writer = rows[1]
    assert 1.9 < writer["vs_elephants_p99"] < 2.1
    low, high = writer["vs_elephants_p99_interval"]
    assert low < writer["vs_elephants_p99"] < high and high - low < 0.3
    low, high = writer["writing_vs_between_p99_interval"]
    assert low < writer["writing_vs_between_p99"] < high
    assert "vs_elephants_p99" not in rows[0]
    text = ul.table({"targets": {"softswitch": {"scenarios": rows}},
                     "scenarios": list(done)})
    assert "P99 while the controller writes over the elephants scenario's: " in text
    assert "(95% interval " in text


def test_urgent_latency_later_rounds_write_new_routes():
    """A scenario's second round adds routes after the first round's, never the same
    ones again (ALREADY_EXISTS would fail it)."""
    import threading

    ul = bench_module("urgent_latency")
    stop = threading.Event()
    sent: list[range] = []

    def send(numbers: range) -> bool:
        sent.append(numbers)
        if sum(map(len, sent)) >= 30:
            stop.set()
        return True

    result = {"first_route": 5000}
    ul._write_at_rate(stop, result, send)
    numbers = [n for r in sent for n in r]
    assert numbers == list(range(5000, 5000 + len(numbers))) and result["writes"] == len(numbers)
