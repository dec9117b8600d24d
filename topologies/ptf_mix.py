"""``python -m topologies.ptf_mix``: the PTF mix suite on a switch inside Mininet.

For each configuration (``fifo``, then ``tailcc``) it brings ``topologies/single.yaml``
up with that intent (:mod:`topologies.mix_plan`), makes the bottleneck on the port to
h3 (softswitch: ``set_link_rate``; BMv2: ``set_queue_rate`` on each queue), moves the
hosts' ends of the Mininet links (``h1-eth0`` …) into this namespace, where PTF binds
them as ports 1..3, and runs ``ptf_tests/mininet_mix_test.py`` with what it must
assert. The hosts' namespaces are empty then; teardown removes the moved interfaces
with the rest. Exit 0 when both configurations pass.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

from controlplane.p4rt.errors import P4RuntimeClientError
from softswitch.devtools import reference_tools
from softswitch.local_port import free_port
from topologies.mix import apply_bottleneck
from topologies.mix_plan import ETH_IP_UDP, Bottleneck, fifo, pinned, read_intent, write_intent
from topologies.p4switch import KINDS, SwitchStartError
from topologies.runner import Runner, RunnerError, terminate_on_sigterm
from topologies.schema import PROJECT_ROOT, load_topology

TOPOLOGY = PROJECT_ROOT / "topologies" / "single.yaml"
BULK_FRAME = 1000 + ETH_IP_UDP
# Rates the switches sustain under PTF's Python sender on a busy 2-core machine.
RATES = {"softswitch": ("link-rate", 1_000_000), "bmv2": ("queue-rate", 200)}
VERDICT = re.compile(r"^(?P<name>[\w.]+) \.\.\. (?P<verdict>ok|FAIL|ERROR|skipped)")


def bottleneck_for(kind: str) -> Bottleneck:
    how, rate = RATES[kind]
    return Bottleneck("s1", 3, how, rate, " (access port of h3)")


def ptf_ports_here(runner: Runner) -> list[str]:
    """Move each host's link end into this (the root) namespace for PTF; their names."""
    assert runner.net is not None
    names = []
    for host in runner.topo.hosts:
        intf = f"{host.name}-eth0"
        runner.net.host_run(host.name, ["ip", "link", "set", intf, "netns", "1"])
        subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{intf}.disable_ipv6=1"],
                       capture_output=True, check=False)
        subprocess.run(["ip", "link", "set", intf, "up"], check=True, capture_output=True)
        names.append(intf)
    return names


def ptf_command(ports: list[str], config: str, bottleneck: Bottleneck, unloaded: float,
                loaded: float, log_dir: Path, samples: Path) -> list[str]:
    elephant_pps = 2 * bottleneck.capacity_pps(BULK_FRAME)
    params = {"config": config, "bulk_serialisation_s": bottleneck.serialisation_s(BULK_FRAME),
              "elephant_pps": elephant_pps, "unloaded_s": unloaded, "loaded_s": loaded,
              "samples_out": samples}
    ifaces = [x for i, name in enumerate(ports, 1) for x in ("-i", f"{i}@{name}")]
    ptf = Path(sys.executable).parent / "ptf"
    return [str(ptf), "--test-dir", str(PROJECT_ROOT / "ptf_tests"), *ifaces,
            "--qlen", "100000", "--log-dir", str(log_dir),
            "--test-params", ";".join(f"{k}='{v}'" for k, v in params.items()),
            "mininet_mix_test"]


def run_config(kind: str, config: str, backend: str | None, out: Path, unloaded: float,
               loaded: float) -> bool:
    """One configuration: up, bottleneck, PTF, down. True when PTF passed."""
    topo = load_topology(TOPOLOGY)
    for sw in topo.switches:         # a test harness: never meet another switch's ports
        sw.grpc_port, sw.thrift_port = free_port(), free_port()
    intent = pinned(read_intent(topo))
    data = fifo(dict(intent)) if config == "fifo" else intent
    variant = dataclasses.replace(topo, intent=write_intent(data, out / f"{config}-intent.yaml"))
    bottleneck = bottleneck_for(kind)
    with Runner(variant, kind, backend, out / config) as runner:
        apply_bottleneck(kind, variant, bottleneck)
        print(f"ptf_mix: [{config}] {kind}: bottleneck {bottleneck.describe()}", flush=True)
        ports = ptf_ports_here(runner)
        cmd = ptf_command(ports, config, bottleneck, unloaded, loaded, out / f"{config}-ptf",
                          out / f"{config}-samples.json")
        proc = subprocess.run(cmd, cwd=PROJECT_ROOT, capture_output=True, text=True,
                              timeout=300, check=False)
    text = proc.stdout + proc.stderr
    (out / f"{config}-ptf.txt").write_text(text, encoding="utf-8")
    for line in text.splitlines():
        if line.startswith(config + ":") or VERDICT.match(line) or "Error" in line:
            print(f"  {line}", flush=True)
    return proc.returncode == 0 and any(
        m.group("verdict") == "ok" for m in map(VERDICT.match, text.splitlines()) if m)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m topologies.ptf_mix",
                                description="PTF mix suite in Mininet, FIFO then tailcc.")
    p.add_argument("--switch", choices=KINDS, default="softswitch")
    p.add_argument("--backend", choices=("mininet", "netns"), default=None)
    p.add_argument("--out", type=Path, default=PROJECT_ROOT / "out" / "ptf_mix")
    p.add_argument("--unloaded", type=float, default=3.0, help="seconds of mice alone (3)")
    p.add_argument("--loaded", type=float, default=5.0, help="seconds under load (5)")
    args = p.parse_args(argv)
    if os.geteuid() != 0:
        print("python -m topologies.ptf_mix: error: needs root", file=sys.stderr)
        return 1
    if args.switch == "bmv2" and reference_tools.find() is None:
        print(f"python -m topologies.ptf_mix: error: {reference_tools.missing_reason()}",
              file=sys.stderr)
        return 1
    out = (args.out / args.switch).resolve()
    out.mkdir(parents=True, exist_ok=True)
    passed = {}
    try:
        with terminate_on_sigterm():
            for config in ("fifo", "tailcc"):
                passed[config] = run_config(args.switch, config, args.backend, out,
                                            args.unloaded, args.loaded)
    except (RunnerError, SwitchStartError, P4RuntimeClientError, OSError) as exc:
        print(f"python -m topologies.ptf_mix: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    print("ptf_mix: " + ", ".join(f"{c} {'PASS' if ok else 'FAIL'}" for c, ok in passed.items()))
    return 0 if all(passed.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
