"""Run a scenario: one grid cell per (scheme, seed), each a full network simulation with
tailcc.p4 on softswitch in every switch (the ``ideal-srpt`` reference: a fluid schedule,
taillab.ideal); cells run on local cores in parallel, each cell's result is written as
it finishes, and a rerun skips the cells already written.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict
from pathlib import Path
from typing import Any

from softswitch.v1model.fast_switch import load_switch
from taillab import ideal
from taillab.classes import DWRR_WEIGHTS, role
from taillab.leafspine import (
    Fabric,
    cnp_flow_commands,
    lossless_queues,
    scheme_commands,
    switch_scheme,
)
from taillab.metrics import unloaded_us
from taillab.network import Network
from taillab.programs import LabError, compile_nic_program, compile_tailcc
from taillab.scenario import Scenario
from taillab.traffic import FabricMessage, generate

RESULT_VERSION = 4
NIC_SCHEMES = ("tailcc-nic", "tailcc-srpt")     # schemes whose hosts run tailcc_nic.p4
LARGE_BLOCK_QUEUE = 4                            # p4nic.LARGE_BLOCK_QUEUE
# tailcc-srpt's switches where MoE shares the fabric with large hot KV blocks alone in
# queue 4: DWRR 8 (queue 4) : 12 (MoE) : 6 (training bulk), so MoE keeps nearly half a
# busy link, above its offered load, and the blocks and bulk share the rest (the NICs:
# srpt_nic.MOE_NIC_LARGE_WEIGHT); the other elephant queues at the classes' 1 : 3 to MoE
SRPT_MOE_WEIGHTS = {LARGE_BLOCK_QUEUE: 8, 3: 12, 2: 4, 1: 6, 0: 4}
# tailcc-srpt where MoE runs: MoE in 768-byte segments (srpt_nic.SEGMENT_BYTES), 6 a
# shard, a 15-to-1 dispatch 90 packets: XOFF/XON 3x the scenario's (144/72), marks from
# 128 packets (kmax 256), still above one dispatch's burst (classes.ROLES)
MOE_QUEUE = 3
SRPT_MOE_PFC_SCALE = 3
SRPT_MOE_ECN_SCALE = 2
# ... and where the switches weight queue 4 there (SRPT_MOE_WEIGHTS), training bulk holds
# under a quarter of a busy link while the others send: its XOFF/XON 2x (96/48), so it
# absorbs that in the switch rather than pausing the spines; its Fast CNP still cuts at 24
BULK_QUEUE = role("bulk").queue
SRPT_BULK_PFC_SCALE = 2


def switch_commands(scenario: Scenario, scheme: str, fabric: Fabric,
                    messages: list[FabricMessage]) -> Callable[[str], list[str]]:
    """Every configuration line of one switch: routes, the scheme's classes/ECN/Fast
    CNP, and the traffic manager (link rates, queue depths, PFC, DWRR)."""
    classes = scenario.qp_ranges()
    elephants = sorted({(m.spec, m.sender, m.receiver) for m in messages if m.elephant})
    b = scenario.buffers
    moe = moe_scale(scheme, classes)
    policy = scheme_commands(scheme, classes, b, {MOE_QUEUE: moe[1]} if moe else None)
    if switch_scheme(scheme) == "tailcc":
        policy += cnp_flow_commands(fabric, elephants)
    lossless = lossless_queues(scheme, classes)
    weights = switch_weights(scheme, classes)
    pfc = pfc_thresholds(scheme, classes, b)

    def commands(name: str) -> list[str]:
        lines = fabric.routes(name) + policy
        for port in fabric.ports(name):
            rate = fabric.port_rate(name, port)
            lines.append(f"set_link_rate {int(rate)} {port}")
            lines.append(f"set_queue_depth {b.queue_pkts} {port}")
            for q in lossless:
                lines.append(f"set_pfc {port} {q} {pfc[q][0]} {pfc[q][1]}")
            weighted = [q for q in lossless if q in weights] \
                if switch_scheme(scheme) != "baseline" else []
            if len(weighted) > 1:
                lines += [f"set_queue_weight {weights[q]} {port} {q}" for q in weighted]
        return lines
    return commands


def switch_weights(scheme: str, classes: list[str]) -> dict[int, int]:
    """The switches' DWRR weight per queue: the classes' (classes.DWRR_WEIGHTS). Under
    tailcc-srpt, where MoE shares the fabric with large hot KV blocks alone in queue 4,
    the switches weight queue 4 against MoE and bulk (SRPT_MOE_WEIGHTS) as the NICs do:
    a strict block holds a decode node's downlink from a MoE dispatch for its whole
    transfer. Their receivers pace them (srpt_nic.Credit), so a smaller share builds
    no queue that PFC would pause."""
    from taillab.srpt_nic import weighted_large_blocks

    if scheme == "tailcc-srpt" and weighted_large_blocks(classes):
        return dict(SRPT_MOE_WEIGHTS)
    return dict(DWRR_WEIGHTS)


def pfc_thresholds(scheme: str, classes: list[str], b: Any) -> dict[int, tuple[int, int]]:
    """PFC XOFF/XON (packets) per lossless queue: the scenario's buffers; tailcc-srpt
    scales MoE's (moe_scale) where MoE runs and training bulk's (SRPT_BULK_PFC_SCALE)
    where its switches weight queue 4."""
    pfc = {q: (b.pfc_xoff_pkts, b.pfc_xon_pkts) for q in lossless_queues(scheme, classes)}
    moe = moe_scale(scheme, classes)
    if moe and MOE_QUEUE in pfc:
        pfc[MOE_QUEUE] = (b.pfc_xoff_pkts * moe[0], b.pfc_xon_pkts * moe[0])
    if LARGE_BLOCK_QUEUE in switch_weights(scheme, classes) and BULK_QUEUE in pfc:
        pfc[BULK_QUEUE] = (b.pfc_xoff_pkts * SRPT_BULK_PFC_SCALE,
                           b.pfc_xon_pkts * SRPT_BULK_PFC_SCALE)
    return pfc


def moe_scale(scheme: str, classes: list[str]) -> tuple[int, int] | None:
    """tailcc-srpt's factors on MoE's PFC and ECN thresholds (in packets) where MoE runs:
    its NICs cut MoE into smaller segments (srpt_nic.SEGMENT_BYTES), so a dispatch is
    more packets for the same bytes."""
    if scheme == "tailcc-srpt" and "moe_a2a" in classes:
        return SRPT_MOE_PFC_SCALE, SRPT_MOE_ECN_SCALE
    return None


def run_cell(scenario: Scenario, scheme: str, seed: int, fastpath: str = "auto",
             checked: Any = None) -> dict[str, Any]:
    """One simulation; returns plain data (JSON-able) for the report."""
    messages = generate(scenario, seed)
    if scheme == ideal.SCHEME:
        return _ideal_cell(scenario, seed, messages)
    if checked is None:
        checked = compile_tailcc()
    started = time.monotonic()
    net = build_network(scenario, scheme, messages, checked, fastpath)
    obs = net.run(messages)
    return _summarise(scenario, scheme, seed, net.fabric, messages, net, obs,
                      time.monotonic() - started)


def build_network(scenario: Scenario, scheme: str, messages: list[FabricMessage],
                  checked: Any, fastpath: str = "auto") -> Network:
    """The scheme's network for these messages: tailcc.p4 switches configured for it,
    and its host NICs (tailcc_nic.p4 in the tailcc-nic scheme)."""

    fabric = Fabric(scenario.topology)
    slow = sorted(s.host for s in scenario.slow_receivers)
    nic_factory = p4_nics(scheme) if scheme in NIC_SCHEMES else None
    return Network(scenario, scheme, lambda: load_switch(checked, fastpath=fastpath),
                   switch_commands(scenario, scheme, fabric, messages),
                   _sample_ports(fabric, slow[0] if slow else 0), nic_factory=nic_factory)


def p4_nics(scheme: str = "tailcc-nic") -> Any:
    """Hosts whose NIC runs tailcc_nic.p4 (the tailcc-nic scheme; tailcc-srpt's under
    its message-level SRPT transport), compiled once."""
    from taillab.p4nic import P4HostNic
    from taillab.srpt_nic import SRPT_GRANTS, Credit, SrptHostNic, strict_large_blocks

    checked = compile_nic_program()
    if scheme == "tailcc-srpt":
        credits: dict[int, Credit] = {}          # one per network: its paced blocks

        def make_srpt(net: Network, host: int, rate: float, rx_rate: float | None
                      ) -> P4HostNic:
            if id(net) not in credits:     # paced where queue 4 is weighted; SRPT
                                           # grants where it is strict
                classes = net.scenario.qp_ranges()
                weighted = LARGE_BLOCK_QUEUE in switch_weights(scheme, classes)
                strict = strict_large_blocks(classes)
                credits[id(net)] = Credit(net, weighted or strict,
                                          SRPT_GRANTS if strict else None)
            return SrptHostNic(net, host, rate, rx_rate, checked, credits[id(net)])
        return make_srpt

    def make(net: Network, host: int, rate: float, rx_rate: float | None) -> P4HostNic:
        return P4HostNic(net, host, rate, rx_rate, checked)
    return make


def _sample_ports(fabric: Fabric, host: int) -> list[tuple[str, int]]:
    """The congested downlink, the spine port feeding its leaf, and another leaf's
    uplink: where a cascade shows."""
    leaf = fabric.leaf_of(host)
    other = (leaf + 1) % fabric.topo.leaves
    return [(f"l{leaf}", host % fabric.H), ("s0", leaf), (f"l{other}", fabric.H)]


def _samples(scenario: Scenario, fabric: Fabric,
             completions: list[tuple[FabricMessage, float]],
             first_tx_us: dict[int, float]) -> dict[str, dict[str, list[float]]]:
    """Per class, one entry per message completed by the end of the run (duration plus
    drain), in completion order: its slowdown, completion time, size, start, the wait
    before its first byte left the sender and its slowdown counted from then."""
    t = scenario.topology
    slow = {s.host: s.rx_gbps * 1e9 for s in scenario.slow_receivers}
    keys = ("slowdown", "fct_us", "msg_bytes", "start_us", "sender_wait_us", "wire_slowdown")
    out: dict[str, dict[str, list[float]]] = {k: defaultdict(list) for k in keys}
    for msg, done in completions:
        if msg.start_us > scenario.duration_us or done > scenario.duration_us + \
                scenario.drain_us:
            continue
        base = unloaded_us(msg.size, t.mtu_payload,
                           tuple(fabric.path_rates(msg.sender, msg.receiver)), t.prop_us,
                           slow.get(msg.receiver))
        first = first_tx_us[msg.msg_id]
        for key, value in zip(keys, ((done - msg.start_us) / base, done - msg.start_us,
                                     msg.size, msg.start_us, first - msg.start_us,
                                     (done - first) / base), strict=True):
            out[key][msg.cls].append(value)
    return {k: dict(v) for k, v in out.items()}


def _offered(messages: list[FabricMessage]) -> dict[str, int]:
    offered: dict[str, int] = defaultdict(int)
    for m in messages:
        offered[m.cls] += 1
    return dict(offered)


def _summarise(scenario: Scenario, scheme: str, seed: int, fabric: Fabric,
               messages: list[FabricMessage], net: Network, obs: Any,
               wall_s: float) -> dict[str, Any]:
    pfc = obs.pfc
    return {
        "version": RESULT_VERSION, "scenario": scenario.name, "scheme": scheme, "seed": seed,
        "messages": len(messages), "offered": _offered(messages),
        "completed": len(obs.completions),
        # per class: slowdown, fct_us, msg_bytes, start_us; and as diagnostics the wait
        # before the first packet left the sender's NIC (sender_wait_us), and the
        # slowdown counted from then (wire_slowdown: the part the switches can change)
        **_samples(scenario, fabric, obs.completions, obs.first_tx_us),
        "elephant_classes": sorted({m.cls for m in messages if m.elephant}),
        "goodput_gbps": {c: b * 8 / scenario.duration_us / 1e3
                         for c, b in obs.delivered_bytes.items()},
        "ecn_mark_rate": {c: obs.ce_pkts.get(c, 0) / n for c, n in obs.delivered_pkts.items()
                          if n},
        "pfc_frames": pfc.frames, "pfc_paused_us": pfc.total_paused_us,
        "paused_flows": len(pfc.paused_flows), "innocent_victims": net.innocent_victims(),
        "cnp_delay_us": {k: v for k, v in obs.cnp_delay_us.items()},
        "cnps": {k: len(v) for k, v in obs.cnp_delay_us.items()},
        "peak_buffer_pkts": obs.peak_buffer_pkts,
        "depth_samples": obs.depth_samples,
        "wall_s": round(wall_s, 1),
        "sim_events": net.loop.executed,
        "switch_packets": sum(sw.received for sw in net.switches.values()),
        # packets through tailcc_nic.p4's pipelines (tailcc-nic: host->net + CNPs in)
        "nic_program_packets": sum(getattr(n, "pipeline_packets", 0)
                                   + getattr(n, "cnps_consumed", 0)
                                   for n in net.nics.values()),
    }


def _ideal_cell(scenario: Scenario, seed: int, messages: list[FabricMessage]
                ) -> dict[str, Any]:
    """The ideal-srpt cell, in the shape of the others: a fluid model has no packets,
    so no ECN, CNPs, PFC or queues to report."""
    started = time.monotonic()
    fluid = ideal.schedule(scenario, messages)
    return {
        "version": RESULT_VERSION, "scenario": scenario.name, "scheme": ideal.SCHEME,
        "seed": seed, "messages": len(messages), "offered": _offered(messages),
        "completed": len(fluid.completions),
        **_samples(scenario, Fabric(scenario.topology), fluid.completions, fluid.first_tx_us),
        "elephant_classes": sorted({m.cls for m in messages if m.elephant}),
        "goodput_gbps": {c: b * 8 / scenario.duration_us / 1e3
                         for c, b in fluid.delivered_bytes.items()},
        "ecn_mark_rate": {}, "pfc_frames": 0, "pfc_paused_us": 0.0, "paused_flows": 0,
        "innocent_victims": 0, "cnp_delay_us": {"switch": [], "receiver": []},
        "cnps": {"switch": 0, "receiver": 0}, "peak_buffer_pkts": {}, "depth_samples": [],
        "wall_s": round(time.monotonic() - started, 1), "sim_events": fluid.events,
        "switch_packets": 0, "nic_program_packets": 0,
    }


def _cell_path(out: Path, scheme: str, seed: int) -> Path:
    return out / "cells" / f"{scheme}-seed{seed}.json"


def run_grid(scenario: Scenario, out: Path, jobs: int, fastpath: str = "auto",
             progress: Callable[[str], None] = print,
             scheduler: str | None = None) -> list[dict[str, Any]]:
    """Every (scheme, seed) cell; finished cells (same scenario, written before) are
    read back instead of rerun. ``scheduler``: the address of a Dask cluster (or a
    ``distributed.Client``) to run the cells on instead of local processes."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "cells").mkdir(exist_ok=True)
    (out / "scenario.json").write_text(json.dumps(asdict(scenario), indent=1))
    cells = [(scheme, seed) for seed in scenario.seeds for scheme in scenario.schemes]
    results: dict[tuple[str, int], dict[str, Any]] = {}
    todo = []
    for scheme, seed in cells:
        cached = _read_cell(_cell_path(out, scheme, seed), scenario)
        if cached is not None:
            results[(scheme, seed)] = cached
            progress(f"  {scheme:<14} seed {seed}: done before (kept)")
        else:
            todo.append((scheme, seed))
    todo.sort(key=lambda cell: cell[0] not in NIC_SCHEMES)   # the longest cells first
    started = time.monotonic()

    def finished(res: dict[str, Any]) -> None:
        key = (res["scheme"], res["seed"])
        results[key] = res
        path = _cell_path(out, *key)
        path.write_text(json.dumps({"scenario_digest": _digest(scenario), **res}))
        done = len(results)
        mice = [c for c in res["slowdown"] if c not in res["elephant_classes"]]
        p99 = ", ".join(f"{c} P99 {_p(res['slowdown'][c], 99):.2f}" for c in mice)
        progress(f"  [{done}/{len(cells)}] {res['scheme']:<14} seed {res['seed']}: "
                 f"{res['completed']}/{res['messages']} msgs, {p99}, PFC paused "
                 f"{res['pfc_paused_us']:.0f} us  ({res['wall_s']:.0f} s; "
                 f"{time.monotonic() - started:.0f} s elapsed)")

    if scheduler is not None and todo:
        for res in _on_dask(scheduler, scenario, todo, fastpath):
            finished(res)
    elif jobs <= 1 or len(todo) <= 1:
        checked = compile_tailcc() if any(s != ideal.SCHEME for s, _ in todo) else None
        for scheme, seed in todo:
            finished(run_cell(scenario, scheme, seed, fastpath, checked))
    else:
        with ProcessPoolExecutor(max_workers=min(jobs, len(todo))) as pool:
            futures = [pool.submit(run_cell, scenario, scheme, seed, fastpath)
                       for scheme, seed in todo]
            for fut in as_completed(futures):
                finished(fut.result())
    return [results[c] for c in cells]


def _on_dask(scheduler: Any, scenario: Scenario, todo: list[tuple[str, int]],
             fastpath: str) -> Any:
    """One Dask task per cell, results as they finish (``distributed``)."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise LabError("--scheduler needs the 'distributed' package (pip install "
                       "distributed)") from None
    try:
        client = scheduler if isinstance(scheduler, Client) else Client(scheduler, timeout=10)
    except OSError as exc:
        raise LabError(f"Dask scheduler {scheduler}: {exc}") from None
    try:
        futures = [client.submit(run_cell, scenario, scheme, seed, fastpath, pure=False)
                   for scheme, seed in todo]
        for fut in as_completed(futures):
            yield fut.result()
    finally:
        if client is not scheduler:
            client.close()


def _p(values: list[float], p: float) -> float:
    from taillab.report import percentile
    return percentile(sorted(values), p)


def _digest(scenario: Scenario) -> str:
    import hashlib
    return hashlib.sha256(json.dumps(asdict(scenario), sort_keys=True).encode()).hexdigest()


def _read_cell(path: Path, scenario: Scenario) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if doc.get("scenario_digest") != _digest(scenario) or doc.get("version") != RESULT_VERSION:
        return None
    doc.pop("scenario_digest")
    return doc


def default_jobs() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else (os.cpu_count() or 1))


if __name__ == "__main__":  # pragma: no cover - use `tailcc lab`
    sys.exit("use: tailcc lab SCENARIO")
