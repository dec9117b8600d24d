"""``python -m topologies FILE.yaml``: bring a topology up, check it, tear it down.

Exit status: 0 when every ping succeeded (or the CLI session ended), 1 for an invalid
topology, a switch that did not start or pings that failed, 2 for usage errors. Errors
are one message (file:line: path: reason for the YAML), never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from topologies.p4switch import KINDS, SwitchStartError
from topologies.runner import (
    BACKENDS,
    Runner,
    RunnerError,
    cleanup,
    default_backend,
    terminate_on_sigterm,
)
from topologies.schema import TopologyError, load_topology


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m topologies",
        description="Run a P4 topology (YAML) on Mininet or plain network namespaces, one "
                    "softswitch or simple_switch_grpc process per switch.")
    p.add_argument("topology", help="topology YAML file (e.g. topologies/single.yaml)")
    p.add_argument("--switch", choices=KINDS, default="softswitch",
                   help="switch program: softswitch (default) or BMv2 simple_switch_grpc")
    p.add_argument("--backend", choices=BACKENDS, default=None,
                   help="mininet (default where installed) or netns (ip netns + veth)")
    p.add_argument("--cli", action="store_true",
                   help="open Mininet's CLI (netns: wait for Ctrl-C) instead of pinging")
    p.add_argument("--count", type=int, default=3, help="pings per host pair (3)")
    p.add_argument("--tcp", type=float, default=0.0, metavar="SECONDS",
                   help="after the pings, bulk TCP from the first host to the last one for "
                        "SECONDS and print the receiver's Mb/s")
    p.add_argument("--run-dir", type=Path, default=None,
                   help="logs, pcaps and generated files (out/topologies/NAME)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds for all switches to answer on gRPC (120)")
    p.add_argument("--check", action="store_true", help="validate the file and exit")
    p.add_argument("--clean", action="store_true",
                   help="remove what a killed run of this topology left (mn -c for it)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        topo = load_topology(args.topology)
    except TopologyError as exc:
        print(exc, file=sys.stderr)
        return 1
    if args.check:
        print(f"{args.topology}: ok: {len(topo.hosts)} hosts, {len(topo.switches)} "
              f"switches, {len(topo.links)} links")
        return 0
    if os.geteuid() != 0:
        print("python -m topologies: error: needs root (network namespaces)",
              file=sys.stderr)
        return 1
    if args.clean:
        removed = cleanup(topo, args.run_dir)
        print(f"{topo.name}: {'nothing to clean' if not removed else 'clean'}")
        return 0
    if args.count < 1 or args.tcp < 0:
        print("python -m topologies: error: --count must be at least 1 and --tcp not "
              "negative", file=sys.stderr)
        return 2
    backend = args.backend or default_backend()
    runner = Runner(topo, args.switch, backend, args.run_dir, args.timeout)
    try:
        with terminate_on_sigterm(), runner:
            if args.cli:
                runner.interactive()
                return 0
            results = runner.pingall(args.count)
            for r in results:
                print(r.line(), flush=True)
            failed = [r for r in results if not r.ok]
            print(f"{topo.name}: {len(results) - len(failed)}/{len(results)} host pairs "
                  f"reachable", flush=True)
            if args.tcp > 0 and len(topo.hosts) >= 2 and not failed:
                tcp = runner.tcp_throughput(topo.hosts[0].name, topo.hosts[-1].name,
                                            args.tcp)
                print(tcp.line())
                if tcp.received != tcp.sent:
                    return 1
            return 1 if failed else 0
    except (RunnerError, SwitchStartError) as exc:
        print(f"{topo.name}: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{topo.name}: interrupted, torn down", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
