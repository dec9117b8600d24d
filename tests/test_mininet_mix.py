"""The mouse/elephant mix (topologies.mix), its PTF suite in Mininet, and up/exec/down.

- Plan and statistics without a network: which port is the bottleneck (the receiver's
  access port on ``single``, the senders' leaf uplink on ``leaf-spine`` once ECMP is
  pinned), which knob each target gets (BMv2 has no port shaper: ``link-rate`` is
  refused), the FIFO intent, percentiles, loss and reordering from raw records.
- The runner hands every switch its ``--thrift-port`` as ``runtime_address``, so the
  shipped intents' schedulers reach the switch.
- As root: ``python -m topologies.ptf_mix`` on softswitch (and on BMv2 when the
  reference tools are installed): the PTF suite must pass under tailcc and under FIFO
  (where it asserts the opposite); ``up``/``exec``/``down`` hold a topology between
  commands and leave nothing behind.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent

from softswitch.devtools import reference_tools  # noqa: E402
from topologies.mix_plan import (  # noqa: E402
    CLASSES,
    PlanError,
    build_plan,
    choose_bottleneck_kind,
    fifo,
    pinned,
    queue_frames,
    read_intent,
    write_intent,
)
from topologies.mix_stats import per_class, percentile, verdict  # noqa: E402
from topologies.runner import derive_intent, leftovers_of  # noqa: E402
from topologies.schema import load_topology  # noqa: E402

SINGLE = ROOT / "topologies" / "single.yaml"
LEAF_SPINE = ROOT / "topologies" / "leaf_spine.yaml"
needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2")


# ------------------------------------------------------------------------ the plan
def test_single_bottleneck_is_the_receivers_access_port():
    topo = load_topology(SINGLE)
    plan = build_plan(topo, pinned(read_intent(topo)), "link-rate", 10_000_000)
    assert (plan.senders, plan.receiver) == (["h1", "h2"], "h3")
    assert (plan.bottleneck.switch, plan.bottleneck.port) == ("s1", 3)
    assert plan.bottleneck.commands() == ["set_link_rate 10000000 3"]
    elephants = [f for f in plan.flows if not f.cls.mouse]
    frame_bits = (1000 + 42) * 8
    offered = sum(f.pps for f in elephants) * frame_bits
    assert offered == pytest.approx(2 * 10_000_000)            # twice the bottleneck


def test_leaf_spine_bottleneck_is_one_shared_uplink():
    topo = load_topology(LEAF_SPINE)
    intent = pinned(read_intent(topo))
    leaf1 = next(s for s in intent["switches"] if s["name"] == "leaf1")
    assert all("ecmp_group" not in r for r in leaf1["routes"])
    plan = build_plan(topo, intent, "link-rate", 10_000_000)
    assert plan.senders == ["h1", "h2"] and plan.receiver == "h4"
    assert (plan.bottleneck.switch, plan.bottleneck.port) == ("leaf1", 3)  # to spine1
    assert "uplink shared by h1, h2" in plan.bottleneck.describe()


def test_bottleneck_per_target():
    assert choose_bottleneck_kind("softswitch", "auto") == "link-rate"
    assert choose_bottleneck_kind("bmv2", "auto") == "queue-rate"
    assert choose_bottleneck_kind("softswitch", "queue-rate") == "queue-rate"
    with pytest.raises(PlanError, match="BMv2 has no port shaper"):
        choose_bottleneck_kind("bmv2", "link-rate")
    topo = load_topology(SINGLE)
    plan = build_plan(topo, pinned(read_intent(topo)), "queue-rate", 500)
    assert plan.bottleneck.commands() == [f"set_queue_rate 500 3 {q}" for q in range(8)]
    assert "isolation, not a shared link" in plan.bottleneck.describe()


def test_queue_rates_follow_each_queues_frames(tmp_path):
    """queue-rate: each queue is held to a link of ``rate`` bulk frames/s in its own
    largest frames (what strict priority gives it on a real link); under FIFO every
    class shares queue 0 at the bulk rate."""
    from controlplane.intent import load_intent

    topo = load_topology(SINGLE)
    tailcc = pinned(read_intent(topo))
    plan = build_plan(topo, tailcc, "queue-rate", 250)
    frames = queue_frames(load_intent(write_intent(tailcc, tmp_path / "t.yaml")))
    # default profile: hot KV (554 B) + signals (242 B) in 5, control (170 B) in 7,
    # MoE 4, storage 3, training bulk 2 (1042 B frames)
    assert frames == {5: 554, 7: 170, 4: 1042, 3: 1042, 2: 1042}
    rates = plan.bottleneck.queue_rates(frames)
    assert rates == {0: 250, 1: 250, 2: 250, 3: 250, 4: 250, 5: 470, 6: 250, 7: 1532}
    assert plan.bottleneck.commands(frames)[5] == "set_queue_rate 470 3 5"
    fifo_frames = queue_frames(load_intent(write_intent(fifo(tailcc), tmp_path / "f.yaml")))
    assert fifo_frames == {0: 1042}
    assert set(plan.bottleneck.queue_rates(fifo_frames).values()) == {250}


def test_fifo_intent_puts_everything_in_one_queue(tmp_path):
    topo = load_topology(SINGLE)
    data = fifo(read_intent(topo))
    assert data["classes"] == [{"name": "best_effort", "id": 0, "queue": 0}]
    assert data["fast_cnp"] == {"enabled": False}
    path = tmp_path / "fifo.yaml"
    path.write_text(yaml.safe_dump(data))
    done = subprocess.run([sys.executable, "-m", "controlplane.cli", "validate", str(path)],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_runner_gives_every_switch_its_runtime_address():
    """Without it ``tailcc apply`` skips the schedulers of ``base: default``."""
    for path in (SINGLE, LEAF_SPINE):
        topo = load_topology(path)
        derived = yaml.safe_load(derive_intent(topo))
        for entry in derived["switches"]:
            sw = topo.switch(entry["name"])
            assert entry["runtime_address"] == f"127.0.0.1:{sw.thrift_port}"
            assert all(p["scheduler"] == "default" for p in entry["ports"])
        assert all(e["target"] == "bmv2" for e in
                   yaml.safe_load(derive_intent(topo, "bmv2"))["switches"])


# ------------------------------------------------------------------ the statistics
def test_percentile_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 0.999) == 100.0
    assert percentile([], 0.5) is None


def test_per_class_counts_loss_order_and_latency():
    topo = load_topology(SINGLE)
    plan = build_plan(topo, pinned(read_intent(topo)), "link-rate", 10_000_000)
    hot = next(f for f in plan.flows if f.cls.name == "hot_kv" and f.src == "h1")
    bulk = next(f for f in plan.flows if f.cls.name == "storage" and f.src == "h2")
    rec = struct.Struct("<IIqq")
    records = b"".join([rec.pack(hot.id, 0, 0, 1_000_000),       # 1 ms
                        rec.pack(hot.id, 2, 0, 3_000_000),       # 3 ms, seq 1 overtaken
                        rec.pack(hot.id, 1, 0, 2_000_000),       # late: reordered
                        rec.pack(bulk.id, 0, 0, 50_000_000)])
    results = per_class(plan, records, {hot.id: 4, bulk.id: 10}, seconds=1.0)
    r = results["hot_kv"]
    assert (r.sent, r.received, r.lost, r.reordered) == (4, 3, 1, 1)
    assert (r.p50_ms, r.max_ms) == (2.0, 3.0)
    assert results["storage"].lost == 9
    assert results["storage"].goodput_mbps == pytest.approx((1000 + 42) * 8 / 1e6)
    assert results["control"].p99_ms is None
    lines = verdict({"fifo": results, "tailcc": results})
    assert any(line.startswith("hot_kv: tailcc lost 1/4") for line in lines)
    assert lines[-1].startswith("elephants: tailcc")
    assert {c.name for c in CLASSES} == set(results)


def test_mix_refuses_link_rate_on_bmv2():
    done = subprocess.run([sys.executable, "-m", "topologies.mix", "--switch", "bmv2",
                           "--bottleneck", "link-rate"], capture_output=True, text=True,
                          cwd=ROOT, check=False)
    assert done.returncode == 2
    assert "BMv2 has no port shaper" in done.stderr
    assert "Traceback" not in done.stderr


def test_switch_priority_auto_falls_back_loudly(monkeypatch):
    """``--switch-priority auto``: realtime where permitted; else normal, with the
    reason logged (and recorded in the report), never silently; explicit choices stay."""
    from topologies import mix

    logged: list[str] = []
    monkeypatch.setattr(mix, "realtime_unavailable", lambda: None)
    assert mix.switch_priority("auto", logged.append) == "realtime" and logged == []
    monkeypatch.setattr(mix, "realtime_unavailable",
                        lambda: "real-time priority is not permitted here (EPERM)")
    assert mix.switch_priority("auto", logged.append) == "normal"
    assert logged == ["mix: switches at normal priority: real-time priority is not "
                      "permitted here (EPERM)"]
    assert mix.switch_priority("realtime", logged.append) == "realtime"
    assert mix.switch_priority("normal", logged.append) == "normal" and len(logged) == 1


def test_realtime_is_available_to_root_here():
    """As root with the kernel's throttling on (this machine, CI), chrt's trial passes;
    as another user it names why not."""
    from topologies.p4switch import realtime_unavailable

    why = realtime_unavailable()
    if os.geteuid() == 0 and shutil.which("chrt"):
        assert why is None
    else:
        assert why


# ------------------------------------------------------------ as root, in Mininet
def _ptf_mix(switch: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "topologies.ptf_mix", "--switch", switch,
                           "--out", str(out), "--unloaded", "2", "--loaded", "6"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600, check=False)


def _check_ptf_mix(done: subprocess.CompletedProcess[str]) -> None:
    print(done.stdout + done.stderr)
    assert "fifo PASS, tailcc PASS" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 0
    assert leftovers_of(load_topology(SINGLE)) == []


_PROBLEMS = re.compile(r"AssertionError: Lists differ: (\[.*\]) != \[\]")
_TIMING = re.compile(r"\w+: P99 [\d.]+ ms > [\d.]+ ms")


def timing_only(stdout: str) -> bool:
    """Whether a ptf_mix run failed only on the tailcc config's P99 bounds: no mouse
    lost or reordered, the FIFO config as expected. On this shared VM the hypervisor
    takes 20-150 ms of CPU a minute; a stall of a few ms that the unloaded probe
    does not share can push one class's P99 past its bound (once seen: BMv2
    sched_signal 15.4 ms against 12.5, and 3.3 ms in each of three runs right after)."""
    if "fifo PASS, tailcc FAIL" not in stdout:
        return False
    try:
        problems = [p for text in _PROBLEMS.findall(stdout) for p in ast.literal_eval(text)]
    except (ValueError, SyntaxError):      # a list unittest shortened: not told apart
        return False
    return bool(problems) and all(isinstance(p, str) and _TIMING.fullmatch(p)
                                  for p in problems)


def _ptf_mix_settled(switch: str, out: Path) -> subprocess.CompletedProcess[str]:
    """A ptf_mix run; one more when the first failed on timing alone (see
    :func:`timing_only`): the second must pass whole."""
    done = _ptf_mix(switch, out / "run1")
    if done.returncode != 0 and timing_only(done.stdout):
        print("first run failed on timing alone, run again:\n" + done.stdout)
        done = _ptf_mix(switch, out / "run2")
    return done


def test_a_timing_only_failure_is_told_from_a_real_one():
    timing = ("ptf_mix: [tailcc] bmv2: ...\n  AssertionError: Lists differ: "
              "['sched_signal: P99 15.39 ms > 12.52 ms'] != []\nptf_mix: fifo PASS, "
              "tailcc FAIL\n")
    assert timing_only(timing)
    assert not timing_only(timing.replace("fifo PASS", "fifo FAIL"))
    lost = timing.replace("['sched_signal: P99 15.39 ms > 12.52 ms']",
                          "['sched_signal: P99 15.39 ms > 12.52 ms', "
                          "'hot_kv: 3 urgent mice lost']")
    assert not timing_only(lost)
    assert not timing_only("ptf_mix: fifo PASS, tailcc FAIL\n")     # no problems listed
    assert not timing_only(timing.replace("12.52 ms']", "12.52 ms', [37 chars]"))


@needs_root
def test_ptf_mix_in_mininet_softswitch(tmp_path):
    _check_ptf_mix(_ptf_mix_settled("softswitch", tmp_path))


@needs_root
def test_ptf_mix_in_mininet_bmv2(tmp_path):
    if reference_tools.find() is None:
        pytest.skip(f"BMv2: {reference_tools.missing_reason()}")
    _check_ptf_mix(_ptf_mix_settled("bmv2", tmp_path))


@needs_root
def test_up_exec_down(tmp_path):
    """A topology held between commands: up prints the namespaces, exec reaches a host
    (ping through the switch), down removes everything; ``--switch-priority realtime``
    reaches the held switch (SCHED_FIFO)."""
    run = [sys.executable, "-m", "topologies"]
    topo = load_topology(SINGLE)
    up = subprocess.run([*run, "up", str(SINGLE), "--backend", "netns", "--run-dir",
                         str(tmp_path), "--switch-priority", "realtime"],
                        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert "single: up (softswitch on netns)" in up.stdout
        switch_pid = int((tmp_path / "s1.pid").read_text())
        assert os.sched_getscheduler(switch_pid) == os.SCHED_FIFO
        assert "h1: ip netns exec tcc-h1 CMD" in up.stdout
        ping = subprocess.run([*run, "exec", "single", "h1", "--", "ping", "-c", "2", "-q",
                               str(topo.host("h3").ip.ip)], capture_output=True, text=True,
                              cwd=ROOT, timeout=60, check=False)
        assert ping.returncode == 0 and "2 received" in ping.stdout, ping.stdout
        again = subprocess.run([*run, "up", str(SINGLE)], capture_output=True, text=True,
                               cwd=ROOT, timeout=60, check=False)
        assert again.returncode == 1 and "already up" in again.stderr
        bad = subprocess.run([*run, "exec", "single", "h9", "--", "true"],
                             capture_output=True, text=True, cwd=ROOT, check=False)
        assert bad.returncode == 1 and "no host 'h9'" in bad.stderr
    finally:
        down = subprocess.run([*run, "down", "single"], capture_output=True, text=True,
                              cwd=ROOT, timeout=120, check=False)
    assert down.returncode == 0, down.stdout + down.stderr
    assert leftovers_of(topo, tmp_path) == []
    gone = subprocess.run([*run, "down", "single"], capture_output=True, text=True,
                          cwd=ROOT, check=False)
    assert gone.returncode == 1 and "not up" in gone.stderr
