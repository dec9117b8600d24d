"""``python -m topologies.mix``: mice and elephants through a Mininet topology, FIFO vs tailcc.

For each configuration (``fifo``: every packet in one queue; ``tailcc``: the topology's
intent, schedulers included) it brings the topology up with that intent, makes the
bottleneck (:mod:`topologies.mix_plan`), runs the receiver and the open-loop senders
(:mod:`topologies.mix_traffic`) in the hosts for ``--duration`` seconds, and tears it
down. Then it prints one table (per class P50/P99/P999/max, loss, reordering,
goodput) and writes ``mix-TOPOLOGY-SWITCH.json`` and ``.png`` (CDF per class) under
``--out`` (default ``out/mix``).

The switches' threads run at real-time priority once programmed (``--switch-priority
auto``, the default, where permitted; ``realtime`` insists): in Mininet they share the
cores with the hosts' senders and receivers, and a switch thread waiting for a host's
time slice adds delay no switch of its own would
(:meth:`topologies.p4switch.SwitchProcess.run_realtime`). Where it is not permitted
(a container without CAP_SYS_NICE...) ``auto`` runs them at normal priority and says
why; the report records which. ``normal`` measures the shared machine as it is.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from controlplane.intent import IntentError, load_intent
from controlplane.p4rt.errors import P4RuntimeClientError
from softswitch.devtools import reference_tools
from topologies.mix_plan import (
    BOTTLENECKS,
    Bottleneck,
    Plan,
    PlanError,
    build_plan,
    choose_bottleneck_kind,
    fifo,
    pinned,
    queue_frames,
    read_intent,
    write_intent,
)
from topologies.mix_stats import ClassResult, per_class, table, verdict
from topologies.p4switch import KINDS, PRIORITIES, SwitchStartError, realtime_unavailable
from topologies.runner import Runner, RunnerError, default_backend, terminate_on_sigterm
from topologies.schema import PROJECT_ROOT, Topology, TopologyError, load_topology

TRAFFIC = Path(__file__).resolve().parent / "mix_traffic.py"
NAMED = {"single": "topologies/single.yaml", "leaf-spine": "topologies/leaf_spine.yaml"}
CONFIGS = ("fifo", "tailcc")
# Bottleneck rates a software switch on a small machine keeps up with
# (topologies/README.md): softswitch's link at 10 Mb/s, BMv2 at 500 bulk frames/s per
# queue; slower links put the mice's floor (one bulk frame ahead + their own frame)
# near the 3 ms target.
DEFAULT_RATES = {"link-rate": 10_000_000, "queue-rate": 500}
START_DELAY = 1.0                 # senders start after the receiver is listening
DRAIN = 1.5                       # the receiver keeps listening after the senders stop


class MixError(Exception):
    """The mix could not run (message says where and why)."""


def topology_path(name: str) -> Path:
    return PROJECT_ROOT / NAMED[name] if name in NAMED else Path(name)


def apply_bottleneck(switch_kind: str, topo: Topology, bottleneck: Bottleneck,
                     frames: dict[int, int] | None = None) -> None:
    """Send the bottleneck's commands to the switch's runtime port (its --thrift-port).
    ``frames``: queue -> largest frame there, for per-queue rates (queue-rate)."""
    address = f"127.0.0.1:{topo.switch(bottleneck.switch).thrift_port}"
    commands = bottleneck.commands(frames)
    if switch_kind == "bmv2":
        from controlplane.reconcile.bmv2_thrift import Bmv2Thrift, run_command
        with Bmv2Thrift(address) as bm:
            for cmd in commands:
                run_command(bm, cmd)
        return
    from controlplane.reconcile.tm_channel import send_commands
    send_commands(address, commands)


class Progress:
    """One line, rewritten in place: configuration, seconds, datagrams received."""

    def __init__(self, config: str, seconds: float, stream: Any = sys.stderr) -> None:
        self.config, self.seconds, self.stream = config, seconds, stream
        self.received = 0
        self.start = time.monotonic()
        self.tty = stream.isatty()
        self.printed = -1                # not a terminal: one line per 5 s

    def show(self) -> None:
        done = min(self.seconds, time.monotonic() - self.start)
        text = (f"[{self.config}] {done:5.1f}/{self.seconds:.0f} s, "
                f"{self.received} datagrams received")
        if self.tty:
            self.stream.write(f"\r{text}   ")
        elif int(done) // 5 != self.printed:
            self.printed = int(done) // 5
            self.stream.write(text + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _watch_receiver(proc: subprocess.Popen[str], progress: Progress,
                    lines: list[str]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("progress "):
            progress.received = int(line.split()[1])
        else:
            lines.append(line)


def run_traffic(runner: Runner, plan: Plan, config: str, seconds: float, seed: int,
                records_path: Path) -> tuple[bytes, dict[int, int]]:
    """Receiver up, senders for ``seconds``, then the receiver's records and counts."""
    assert runner.net is not None
    ports = sorted({c.port for c in plan.classes()})
    recv_cfg = {"ports": ports, "seconds": START_DELAY + seconds + DRAIN,
                "out": str(records_path)}
    receiver = runner.net.host_popen(plan.receiver, [sys.executable, str(TRAFFIC), "recv",
                                                     json.dumps(recv_cfg)])
    senders: list[subprocess.Popen[str]] = []
    try:
        assert receiver.stdout is not None
        first = receiver.stdout.readline().strip()
        if first != "ready":
            raise MixError(f"{plan.receiver}: receiver did not start: {first}"
                           f"{receiver.stdout.read()}")
        progress = Progress(config, seconds)
        tail: list[str] = []
        watcher = threading.Thread(target=_watch_receiver, args=(receiver, progress, tail),
                                   daemon=True)
        watcher.start()
        for host in plan.senders:
            cfg = {"flows": [f.sender_config() for f in plan.flows_of(host)],
                   "seconds": seconds, "start_delay": START_DELAY, "seed": seed}
            senders.append(runner.net.host_popen(host, [sys.executable, str(TRAFFIC), "send",
                                                        json.dumps(cfg)]))
        sent = _wait_senders(senders, plan.senders, seconds, progress)
        receiver.wait(timeout=START_DELAY + DRAIN + 30)
        watcher.join(5)
        progress.finish()
        if receiver.returncode != 0:
            raise MixError(f"{plan.receiver}: receiver failed: {''.join(tail).strip()}")
        return records_path.read_bytes(), sent
    finally:
        for proc in [*senders, receiver]:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)


def _wait_senders(senders: list[subprocess.Popen[str]], names: list[str], seconds: float,
                  progress: Progress) -> dict[int, int]:
    """Show progress until every sender exits; their per-flow sent counts."""
    deadline = time.monotonic() + START_DELAY + seconds + 60
    while any(p.poll() is None for p in senders):
        if time.monotonic() > deadline:
            raise MixError("senders did not finish in time")
        progress.show()
        time.sleep(0.5)
    progress.show()
    sent: dict[int, int] = {}
    for proc, name in zip(senders, names, strict=True):
        out = proc.stdout.read() if proc.stdout else ""
        result = next((ln for ln in out.splitlines() if ln.startswith("result ")), None)
        if proc.returncode != 0 or result is None:
            raise MixError(f"{name}: sender failed ({proc.returncode}): {out.strip()}")
        for flow_id, counts in json.loads(result[7:])["flows"].items():
            sent[int(flow_id)] = counts["sent"]
    return sent


@dataclasses.dataclass
class MixOptions:
    topology: Path
    switch: str
    bottleneck: str
    rate: int
    duration: float
    seed: int
    out: Path
    backend: str
    switch_priority: str = "auto"


def _queue_frames(intent: Path) -> dict[int, int]:
    """Queue -> largest frame the intent puts there; an invalid intent is a MixError."""
    try:
        return queue_frames(load_intent(intent))
    except IntentError as exc:
        raise MixError(str(exc)) from None


def switch_priority(asked: str, log: Callable[[str], None]) -> str:
    """``auto``: realtime where the switches may take it, else normal, saying why."""
    if asked != "auto":
        return asked
    why = realtime_unavailable()
    if why is None:
        return "realtime"
    log(f"mix: switches at normal priority: {why}")
    return "normal"


def run_mix(opts: MixOptions, log: Callable[[str], None]) -> dict[str, Any]:
    """Both configurations, one after the other; the JSON-ready report."""
    priority = switch_priority(opts.switch_priority, log)
    try:
        topo = load_topology(opts.topology)
    except TopologyError as exc:
        raise MixError(str(exc)) from None
    tailcc_intent = pinned(read_intent(topo))
    plan = build_plan(topo, tailcc_intent, opts.bottleneck, opts.rate)
    log(f"mix: {topo.name} on {opts.switch}: senders {', '.join(plan.senders)} -> "
        f"{plan.receiver}; bottleneck {plan.bottleneck.describe()}")
    if opts.bottleneck == "queue-rate":
        log("mix: note: per-queue rates give each queue its own capacity, so this shows "
            "isolation between queues, not strict priority on one shared link")
    work = opts.out / f"{topo.name}-{opts.switch}"
    intents = {"fifo": write_intent(fifo(dict(tailcc_intent)), work / "fifo-intent.yaml"),
               "tailcc": write_intent(tailcc_intent, work / "tailcc-intent.yaml")}
    runs: dict[str, dict[str, ClassResult]] = {}
    queue_rates: dict[str, dict[int, int]] = {}
    for config in CONFIGS:
        variant = dataclasses.replace(topo, intent=intents[config])
        runner = Runner(variant, opts.switch, opts.backend, work / config, log=log,
                        switch_priority=priority)
        frames = _queue_frames(intents[config])
        with runner:
            apply_bottleneck(opts.switch, variant, plan.bottleneck, frames)
            if plan.bottleneck.kind == "queue-rate":
                rates = plan.bottleneck.queue_rates(frames)
                queue_rates[config] = {q: rates[q] for q in sorted(frames)}
                log(f"mix: [{config}] queue rates (pkt/s, queue: rate): " + ", ".join(
                    f"{q}: {rates[q]}" for q in sorted(frames)))
            log(f"mix: [{config}] bottleneck applied; {opts.duration:g} s of traffic")
            records, sent = run_traffic(runner, plan, config, opts.duration, opts.seed,
                                        work / f"{config}.records")
        runs[config] = per_class(plan, records, sent, opts.duration)
    return {"topology": topo.name, "switch": opts.switch, "duration_s": opts.duration,
            "seed": opts.seed, "switch_priority": priority,
            "bottleneck": dataclasses.asdict(plan.bottleneck),
            "queue_rates": queue_rates,
            "senders": plan.senders, "receiver": plan.receiver,
            "flows": [{"id": f.id, "class": f.cls.name, "src": f.src, "dst": f.dst,
                       "pps": round(f.pps, 2), "size": f.cls.size} for f in plan.flows],
            "runs": runs}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m topologies.mix",
        description="Mixed mouse/elephant traffic through a P4 topology, FIFO vs tailcc: "
                    "per-class latency table, JSON and a CDF plot.")
    p.add_argument("--switch", choices=KINDS, default="softswitch")
    p.add_argument("--topology", default="single",
                   help="single, leaf-spine or a topology YAML file (default single)")
    p.add_argument("--duration", type=float, default=30.0,
                   help="seconds of traffic per configuration (30)")
    p.add_argument("--seed", type=int, default=1, help="seeds the mice's Poisson arrivals")
    p.add_argument("--bottleneck", choices=BOTTLENECKS, default="auto",
                   help="auto (a shared link where the target has one: softswitch "
                        "link-rate, BMv2 queue-rate), link-rate or queue-rate")
    p.add_argument("--rate", type=float, default=None,
                   help="bottleneck rate: Mb/s for link-rate (10), bulk frames/s per queue "
                        "for queue-rate (500)")
    p.add_argument("--backend", choices=("mininet", "netns"), default=None,
                   help="mininet (default where installed) or netns")
    p.add_argument("--switch-priority", choices=("auto", *PRIORITIES), default="auto",
                   help="realtime: the switches' threads run SCHED_FIFO, ahead of the "
                        "hosts' senders on the shared cores, as a switch of its own would; "
                        "normal: everything shares the cores alike; auto (default): "
                        "realtime where permitted, else normal with the reason")
    p.add_argument("--out", type=Path, default=PROJECT_ROOT / "out" / "mix",
                   help="where the JSON, PNG and run directories go (out/mix)")
    return p


def parse_options(argv: list[str] | None) -> MixOptions:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        kind = choose_bottleneck_kind(args.switch, args.bottleneck)
    except PlanError as exc:
        parser.error(str(exc))
    if args.duration <= 0 or (args.rate is not None and args.rate <= 0):
        parser.error("--duration and --rate must be positive")
    rate = DEFAULT_RATES[kind] if args.rate is None else \
        int(args.rate * 1e6 if kind == "link-rate" else args.rate)
    path = topology_path(args.topology)
    if not path.is_file():
        parser.error(f"--topology {args.topology}: no such file (or: single, leaf-spine)")
    return MixOptions(path, args.switch, kind, rate, args.duration, args.seed,
                      args.out.resolve(), args.backend or default_backend(),
                      args.switch_priority)


def report(result: dict[str, Any], out: Path) -> tuple[Path, Path]:
    """Write the JSON (summaries, no samples) and the PNG; return their paths."""
    from topologies.mix_plot import cdf_png

    stem = out / f"mix-{result['topology']}-{result['switch']}"
    data = dict(result)
    data["runs"] = {c: {n: r.summary() for n, r in rs.items()} for c, rs in result["runs"].items()}
    json_path = stem.with_suffix(".json")
    json_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    b = result["bottleneck"]
    title = (f"{result['topology']} on {result['switch']}: {b['kind']} at {b['switch']}:"
             f"{b['port']}, {result['duration_s']:g} s per configuration, switches "
             f"{result['switch_priority']} priority")
    png = cdf_png(result["runs"], stem.with_suffix(".png"), title)
    return json_path, png


def main(argv: list[str] | None = None) -> int:
    opts = parse_options(argv)
    if os.geteuid() != 0:
        print("python -m topologies.mix: error: needs root (network namespaces)",
              file=sys.stderr)
        return 1
    if opts.switch == "bmv2" and reference_tools.find() is None:
        print(f"python -m topologies.mix: error: --switch bmv2: "
              f"{reference_tools.missing_reason()}", file=sys.stderr)
        return 1
    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    try:
        with terminate_on_sigterm():
            result = run_mix(opts, log)
    except (MixError, PlanError, RunnerError, SwitchStartError, P4RuntimeClientError) as exc:
        print(f"python -m topologies.mix: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("python -m topologies.mix: interrupted, torn down", file=sys.stderr)
        return 130
    print(table(result["runs"]))
    for line in verdict(result["runs"]):
        print(line)
    json_path, png = report(result, opts.out)
    print(f"wrote {json_path} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
