"""The leaf-spine lab: tailcc.p4 on softswitch in every switch (issue 14).

A lone message's slowdown is exactly 1 (the unloaded time is computed right); the same
seed gives the same numbers; the cascade scenario really cascades in the baseline
(pauses reach flows that never crossed the slow receiver's port) and tailcc keeps the
signals out of it; scenario files and ``tailcc lab`` fail with located messages."""

import re
from dataclasses import replace

import pytest

from controlplane.cli import main as tailcc
from taillab.programs import compile_tailcc
from taillab.runner import run_cell
from taillab.scenario import ScenarioError, load_scenario, parse_scenario

LONE = """
name: lone
duration_us: 3000
drain_us: 3000
seeds: [1]
schemes: [baseline, tailcc]
slow_receivers: [{host: "0.0", rx_gbps: 2}]
traffic:
  - {name: sched_signal, senders: ["1.0"], receivers: ["2.1"], sizes: [300],
     mean_gap_us: 1000, max_messages: 1}
  - {name: hot_kv, senders: ["1.1"], receivers: ["3.1"], sizes: [40000],
     mean_gap_us: 1000, max_messages: 1}
  - {name: tp_pp, senders: ["2.2"], receivers: ["2.3"], sizes: [5000],
     mean_gap_us: 1000, max_messages: 1}
  - {name: bulk, senders: ["3.2"], receivers: ["0.0"], sizes: [20000],
     mean_gap_us: 1000, max_messages: 1, elephant: true}
"""


@pytest.fixture(scope="module")
def checked():
    return compile_tailcc()


@pytest.mark.parametrize("scheme", ["baseline", "tailcc"])
def test_lone_messages_have_slowdown_one(checked, scheme):
    scenario = parse_scenario(LONE, "lone.yaml")
    res = run_cell(scenario, scheme, 1, checked=checked)
    assert res["completed"] == 4
    for cls in ("sched_signal", "hot_kv", "tp_pp", "bulk"):   # cross-leaf, same leaf, slow rx
        assert res["slowdown"][cls] == [pytest.approx(1.0, abs=1e-9)], cls
    assert res["pfc_frames"] == 0 and res["innocent_victims"] == 0


def test_cascade_in_baseline_not_for_tailcc_signals(checked):
    scenario = replace(load_scenario("pd_cascade").scaled(600.0, (1,)), drain_us=1500.0)
    base = run_cell(scenario, "baseline", 1, checked=checked)
    again = run_cell(scenario, "baseline", 1, checked=checked)
    ours = run_cell(scenario, "tailcc", 1, checked=checked)
    for r in (base, again):
        r.pop("wall_s")
    assert base == again                                   # same seed, same numbers
    assert base["offered"] == ours["offered"]              # identical offered traffic
    assert base["pfc_paused_us"] > 0 and base["innocent_victims"] > 0
    p99 = {n: sorted(r["slowdown"]["sched_signal"])[int(0.99 * len(r["slowdown"]
                                                                     ["sched_signal"]))]
           for n, r in (("base", base), ("ours", ours))}
    assert p99["base"] > 3 * p99["ours"], p99
    assert ours["cnps"].get("switch", 0) > 0               # Fast CNPs reached senders


def test_c_fast_path_and_interpreter_give_the_same_cell(checked):
    """The lab's switches run softswitch's compiled C pipeline (the interpreter is the
    oracle): a 1 ms cascade with pauses, ECN marks and Fast CNPs gives the same
    result on both paths."""
    scenario = replace(load_scenario("pd_cascade").scaled(1000.0, (1,)), drain_us=600.0)
    fast = run_cell(scenario, "tailcc", 1, "require", checked)
    slow = run_cell(scenario, "tailcc", 1, "off", checked)
    for r in (fast, slow):
        r.pop("wall_s")
    assert fast["pfc_paused_us"] > 0 and fast["cnps"].get("switch", 0) > 0
    assert fast == slow
    # a few events per packet and switch: superseded NIC/switch wake-ups once kept
    # polling chains alive (~60 events per packet, 5x the run time)
    assert fast["sim_events"] < 6 * fast["switch_packets"], fast["sim_events"]


# Hot KV blocks converge on one decode node (3.0): two 200 KB blocks from leaf 1 at 0,
# and 20 us later a 4 KB block from leaf 2, while a backlog of the first two builds in
# the decode node's downlink queue.
CONVERGE = """
name: converge
duration_us: 1000
drain_us: 1000
seeds: [1]
traffic:
  - {name: hot_kv, senders: ["1.0", "1.1", "2.0"], receivers: ["3.0"],
     sizes: [4096, 200000], mean_gap_us: 1000, max_messages: 1}
"""


def _converge(checked, split: bool) -> dict[int, float]:
    """Slowdown per message size of the three blocks above under tailcc."""
    from taillab.metrics import unloaded_us
    from taillab.runner import build_network
    from taillab.traffic import FabricMessage

    text = CONVERGE
    if split:
        text = text.replace("max_messages: 1}", "max_messages: 1,\n     qp_by_size: "
                            "[{max_bytes: 65536, class: hot_kv_small}]}")
    scenario = parse_scenario(text, "converge.yaml")
    assert scenario.qp_ranges() == (["hot_kv", "hot_kv_small"] if split else ["hot_kv"])
    messages = [FabricMessage("hot_kv", *scenario.qp_range_of(0, size), sender, 12, size,
                              start, i)
                for i, (sender, size, start) in enumerate(((4, 200000, 0.0),
                                                           (5, 200001, 0.0),
                                                           (8, 4096, 20.0)))]
    roles = [m.role for m in messages]
    assert roles == ["hot_kv", "hot_kv", "hot_kv_small" if split else "hot_kv"]
    net = build_network(scenario, "tailcc", messages, checked)
    obs = net.run(messages)
    t = scenario.topology
    return {m.size: (done - m.start_us) / unloaded_us(
        m.size, t.mtu_payload, tuple(net.fabric.path_rates(m.sender, m.receiver)),
        t.prop_us, None) for m, done in obs.completions}


def test_small_hot_kv_blocks_pass_large_ones(checked):
    """In one strict queue the small block waits behind the large blocks' backlog in
    the decode node's downlink. Posted on a QP of its own that tailcc classifies into
    the queue above (``qp_by_size``), it passes them. The offered messages are the same
    either way; only the QP range differs."""
    one_queue, split = _converge(checked, False), _converge(checked, True)
    assert len(one_queue) == len(split) == 3
    assert one_queue[4096] > 2.0, one_queue
    assert split[4096] < 1.2, split
    for size in (200000, 200001):                   # the large ones lose 4 packets' time
        assert split[size] == pytest.approx(one_queue[size], rel=0.03), (one_queue, split)


@pytest.mark.parametrize("text, where", [
    ("name: x\nduration_us: 10\ntraffic: []\n", "traffic: a scenario needs traffic"),
    ("name: x\nduration_us: 10\nbogus: 1\ntraffic: [{name: bulk, senders: [0], "
     "receivers: [1], sizes: [1], load: 0.1}]\n", "bogus: unknown key"),
    ("name: x\nduration_us: 10\ntraffic: [{name: bulk, senders: ['9.0'], receivers: [1], "
     "sizes: [1], load: 0.1}]\n", "traffic[0].senders"),
    ("name: x\nduration_us: 10\ntraffic: [{name: weird, senders: [0], receivers: [1], "
     "sizes: [1], load: 0.1}]\n", "traffic[0].class: 'weird'"),
    ("name: x\nduration_us: -1\ntraffic: []\n", "duration_us: expected a number"),
    ("name: x\nduration_us: 10\ntraffic: [{name: bulk, senders: [0], receivers: [1], "
     "sizes: [1], load: 0.1, mean_gap_us: 3}]\n", "exactly one of load, mean_gap_us"),
    ("[1, 2", "not valid YAML"),
    ("name: x\nduration_us: 10\ntraffic: [{name: hot_kv, senders: [0], receivers: [1], "
     "sizes: [1], load: 0.1, qp_by_size: [{max_bytes: 9, class: hot_kv_small}, "
     "{max_bytes: 3, class: hot_kv_small}]}]\n", "traffic[0].qp_by_size: max_bytes must ascend"),
    ("name: x\nduration_us: 10\ntraffic: [{name: hot_kv, senders: [0], receivers: [1], "
     "sizes: [1], load: 0.1, qp_by_size: [{max_bytes: 9, class: tiny}]}]\n",
     "traffic[0].qp_by_size[0].class: 'tiny'"),
])
def test_scenario_errors_are_located(text, where):
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(text, "s.yaml")
    assert str(exc.value).startswith("s.yaml: ") and where in str(exc.value)


def test_tailcc_lab_cli(tmp_path, capsys):
    assert tailcc(["lab", "no_such_scenario"]) == 2
    err = capsys.readouterr().err
    assert "tailcc: error: no_such_scenario: no such scenario" in err and "Traceback" not in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nduration_us: 10\ntraffic: 3\n")
    assert tailcc(["lab", str(bad)]) == 2
    assert "bad.yaml: traffic: expected a list" in capsys.readouterr().err
    lone = tmp_path / "lone.yaml"
    lone.write_text(LONE)
    out = tmp_path / "out"
    args = ["lab", str(lone), "--schemes", "baseline", "--jobs", "1", "--out", str(out)]
    assert tailcc(args) == 0
    first = capsys.readouterr().out
    assert "sched_signal*" in first and "1.00" in first
    # one message per class: nothing forces any scheduler above its unloaded time
    assert "against the floor (what the offered traffic forces on any scheduler" in first
    assert re.search(r"\n  hot_kv +floor +1\.00 +1\.00\n", first)
    for name in ("summary.json", "slowdown.csv", "slowdown_cdf.png", "queues_pfc.png"):
        assert (out / name).stat().st_size > 0, name
    assert tailcc(args) == 0                                 # a rerun keeps finished cells
    assert "done before (kept)" in capsys.readouterr().out


def test_moe_scenario_offers_seventy_percent_and_scales():
    from taillab.traffic import generate

    moe = load_scenario("moe")
    messages = generate(moe, 1)
    per_host_gbps = sum(m.size for m in messages) * 8 / moe.duration_us / 1e3 / 16
    assert 0.6 < per_host_gbps / moe.topology.host_gbps < 0.75
    a2a = [m for m in messages if m.cls == "moe_a2a"]
    first = min(m.start_us for m in a2a)
    burst = [m for m in a2a if m.start_us == first]
    assert len(burst) == 16 * 15                           # every host to every other
    assert generate(moe, 1) == messages                    # same seed, same traffic
    # hot KV split by size as in pd_cascade: blocks <= 64 KB on hot_kv_small QPs (one
    # class in the report)
    kv = [m for m in messages if m.cls == "hot_kv"]
    assert kv and all((m.role == "hot_kv_small") == (m.size <= 65536) for m in kv)
    assert any(m.size <= 65536 for m in kv) and any(m.size > 65536 for m in kv)
    half = generate(moe.scaled(load_scale=0.5), 1)
    assert sum(m.size for m in half) == pytest.approx(sum(m.size for m in messages) / 2,
                                                      rel=0.1)
    with pytest.raises(ScenarioError, match="at or above its link's rate"):
        load_scenario("pd_cascade").scaled(load_scale=10)


def test_grid_on_local_dask_cluster_equals_serial(tmp_path):
    from distributed import Client, LocalCluster

    from taillab.runner import run_grid

    scenario = replace(parse_scenario(LONE, "lone.yaml"), seeds=(1, 2))
    serial = run_grid(scenario, tmp_path / "serial", jobs=1, progress=lambda _: None)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        dask = run_grid(scenario, tmp_path / "dask", jobs=1, progress=lambda _: None,
                        scheduler=client)
    assert len(dask) == 4
    for a, b in zip(serial, dask, strict=True):
        a, b = dict(a), dict(b)
        a.pop("wall_s"), b.pop("wall_s")
        assert a == b


def test_load_sweep(tmp_path, capsys):
    """Two loads of a small scenario: one run per load, then sweep.csv and sweep.png."""
    lone = tmp_path / "lone.yaml"
    lone.write_text(LONE.replace("max_messages: 1", "max_messages: 2"))
    out = tmp_path / "sweep"
    assert tailcc(["lab", str(lone), "--schemes", "tailcc", "--jobs", "1", "--out", str(out),
                   "--sweep", "0.001,0.002"]) == 0
    rows = (out / "sweep.csv").read_text().splitlines()
    assert rows[0].startswith("load,scheme,class") and len(rows) == 1 + 2 * 4
    assert (out / "sweep.png").stat().st_size > 0
    with pytest.raises(SystemExit) as exc:                  # argparse: usage error
        tailcc(["lab", str(lone), "--sweep", "0.5,1.5"])
    assert exc.value.code == 2
    assert "loads are shares of a link" in capsys.readouterr().err


def test_fast_cnp_triggers_per_class():
    """Fast CNP fires at the scenario's queue depth for KV migration, later for
    training bulk (taillab.classes.FAST_CNP_QDEPTH_PKTS), for no mouse class, and not at
    all in the baseline; tailcc-nic's switches are tailcc's."""
    import re

    from taillab.classes import ROLES
    from taillab.leafspine import scheme_commands
    from taillab.scenario import Buffers

    classes = ["sched_signal", "hot_kv", "kv_migration", "bulk"]
    buffers = Buffers(fast_cnp_qdepth_pkts=8)

    def triggers(scheme):
        return {int(tc): int(q) for tc, q in re.findall(
            r"fast_cnp_policy 10 traffic_class:(\d+)&&&0xf enable_fast_cnp\("
            r"qdepth_threshold:(\d+),", "\n".join(scheme_commands(scheme, classes, buffers)))}

    expected = {ROLES["kv_migration"].tc: 8, ROLES["bulk"].tc: 24}
    assert triggers("tailcc") == expected
    assert triggers("tailcc-nic") == expected
    assert triggers("baseline") == {}
