"""``python -m topologies FILE.yaml``: bring a topology up, check it, tear it down.

``python -m topologies topology.json`` does the same for a p4lang/tutorials exercise's
topology, run from the exercise folder as ``make run`` is (:mod:`topologies.tutorials`):
its programs compiled, its logs in ``logs/`` and pcaps in ``pcaps/``.

Non-interactive sessions (:mod:`topologies.session`): ``python -m topologies up
FILE.yaml`` keeps the topology up after the command returns and prints its name, run
directory and each host's namespace; ``python -m topologies exec NAME HOST -- CMD``
runs a command in a host; ``python -m topologies down NAME`` tears it down.

Exit status: 0 when every ping succeeded (or the CLI session ended), 1 for an invalid
topology, a switch that did not start or pings that failed, 2 for usage errors. Errors
are one message (file:line: path: reason for the YAML), never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path

from topologies.p4switch import KINDS, PRIORITIES, SwitchStartError
from topologies.runner import (
    BACKENDS,
    Runner,
    RunnerError,
    cleanup,
    default_backend,
    terminate_on_sigterm,
)
from topologies.schema import Topology, TopologyError, load_topology
from topologies.session import SessionError, down, exec_in, hold, up
from topologies.tutorials import is_tutorials_file, load_exercise, place_outputs


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m topologies",
        description="Run a P4 topology (YAML, or a p4lang/tutorials topology.json) on "
                    "Mininet or plain network namespaces, one softswitch or "
                    "simple_switch_grpc process per switch.")
    p.add_argument("topology", help="topology YAML file (e.g. topologies/single.yaml) or a "
                                    "tutorials topology.json (run from the exercise folder)")
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
                   help="logs, pcaps and generated files (out/topologies/NAME; a tutorials "
                        "topology: RUN_DIR/logs and RUN_DIR/pcaps, default the current "
                        "folder's)")
    p.add_argument("--p4", type=Path, default=None, metavar="FILE",
                   help="tutorials topology: the P4 program of every switch without its "
                        "own 'program' (default: the one its runtime file names, else the "
                        "exercise folder's only .p4)")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds for all switches to answer on gRPC (120)")
    p.add_argument("--check", action="store_true", help="validate the file and exit")
    p.add_argument("--clean", action="store_true",
                   help="remove what a killed run of this topology left (mn -c for it)")
    _tm_options(p)
    return p


def _tm_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--switch-priority", choices=PRIORITIES, default="normal",
                   help="realtime: once programmed, the switches' threads run SCHED_FIFO, "
                        "ahead of the hosts' processes on the shared cores (as a switch of "
                        "its own would; what the mix does); normal (default): alike")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--allow-partial", dest="allow_partial", action="store_true",
                       default=None,
                       help="apply the intent even where the target cannot take some of "
                            "its schedulers (warnings); the default on BMv2")
    group.add_argument("--strict-tm", dest="allow_partial", action="store_false",
                       help="refuse an intent whose schedulers the target cannot take "
                            "(BMv2: DWRR weights, link rates, PFC); the default on softswitch")


def build_up_parser(prog: str) -> argparse.ArgumentParser:
    """``up`` (and the holder it starts): the options that shape the topology."""
    p = argparse.ArgumentParser(prog=prog, description="Bring a topology up and keep it up "
                                "(python -m topologies down NAME tears it down).")
    p.add_argument("topology", help="topology YAML file")
    p.add_argument("--switch", choices=KINDS, default="softswitch")
    p.add_argument("--backend", choices=BACKENDS, default=None)
    p.add_argument("--run-dir", type=Path, default=None)
    p.add_argument("--timeout", type=float, default=120.0)
    _tm_options(p)
    return p


def _up_argv(args: argparse.Namespace) -> list[str]:
    argv = [str(Path(args.topology).resolve()), "--switch", args.switch, "--timeout",
            str(args.timeout)]
    if args.backend:
        argv += ["--backend", args.backend]
    if args.run_dir:
        argv += ["--run-dir", str(args.run_dir.resolve())]
    if args.allow_partial is not None:
        argv.append("--allow-partial" if args.allow_partial else "--strict-tm")
    return [*argv, "--switch-priority", args.switch_priority]


def session_main(command: str, argv: list[str]) -> int:
    """``up``, ``exec``, ``down`` and the holder ``_hold`` (see topologies.session)."""
    try:
        if command in ("up", "_hold"):
            args = build_up_parser(f"python -m topologies {command}").parse_args(argv)
            if is_tutorials_file(args.topology):
                raise SessionError("up takes a YAML topology; run a tutorials topology.json "
                                   "with python -m topologies FILE (--cli for Mininet's CLI)")
            topo = load_topology(args.topology)
            if os.geteuid() != 0:
                raise SessionError("needs root (network namespaces)")
            runner = Runner(topo, args.switch, args.backend, args.run_dir, args.timeout,
                            allow_partial=args.allow_partial,
                            switch_priority=args.switch_priority)
            if command == "_hold":
                return hold(runner, Path(args.topology).resolve())
            state = up(_up_argv(args), topo.name, runner.run_dir, args.timeout + 60)
            print(f"{state['name']}: up ({state['switch']} on {state['backend']}), run "
                  f"directory {state['run_dir']}")
            for host, ns in state["hosts"].items():
                print(f"  {host}: {' '.join(ns['enter'])} CMD")
            print(f"python -m topologies exec {state['name']} HOST -- CMD; "
                  f"python -m topologies down {state['name']}")
            return 0
        if command == "exec":
            if len(argv) < 2 or "--" not in argv or argv.index("--") != 2:
                raise SessionError("usage: python -m topologies exec NAME HOST -- CMD ...")
            return exec_in(argv[0], argv[1], argv[3:])
        if len(argv) != 1:
            raise SessionError("usage: python -m topologies down NAME")
        down(argv[0])
        print(f"{argv[0]}: down")
        return 0
    except (TopologyError, SessionError, RunnerError, SwitchStartError) as exc:
        print(f"python -m topologies {command}: error: {exc}", file=sys.stderr)
        return 1


def _load(args: argparse.Namespace
          ) -> tuple[Topology, Path | None, Callable[[Path], None] | None]:
    """The topology, its run directory and what to do before it is built (a tutorials
    exercise compiles its programs)."""
    if not is_tutorials_file(args.topology):
        if args.p4 is not None:
            raise TopologyError("--p4 is for a tutorials topology.json (a YAML topology "
                                "names each switch's program)")
        return load_topology(args.topology), args.run_dir, None
    exercise = load_exercise(args.topology, args.p4)
    run_dir = place_outputs(exercise, args.run_dir or Path.cwd())
    return exercise.topology, run_dir, lambda where: exercise.compile(args.switch, where)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("up", "exec", "down", "_hold"):
        return session_main(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    try:
        topo, run_dir, prepare = _load(args)
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
        removed = cleanup(topo, run_dir)
        print(f"{topo.name}: {'nothing to clean' if not removed else 'clean'}")
        return 0
    if args.count < 1 or args.tcp < 0:
        print("python -m topologies: error: --count must be at least 1 and --tcp not "
              "negative", file=sys.stderr)
        return 2
    backend = args.backend or default_backend()
    runner = Runner(topo, args.switch, backend, run_dir, args.timeout,
                    allow_partial=args.allow_partial, switch_priority=args.switch_priority,
                    prepare=prepare)
    try:
        with terminate_on_sigterm(), runner:
            if args.cli:
                for sw in topo.switches:
                    print(f"{sw.name} -> gRPC port: {sw.grpc_port}, thrift port: "
                          f"{sw.thrift_port}", flush=True)
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
