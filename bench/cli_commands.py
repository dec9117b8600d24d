"""Runtime CLI table commands against table size: softswitch beside BMv2 in one run.

Operators and scripts drive tables through ``simple_switch_CLI`` (or ``softswitch cli``,
the same language): ``table_add`` returns a handle, and ``table_modify`` /
``table_delete`` name entries by it. A command must cost the same in a table of 100k
entries as in one of 1k, so the bench times each kind of command at several sizes.

Each target runs tailcc.p4 (``TAILCC_ROUTE_SIZE`` large enough) as users run it, with
no ports. The routing table is filled through the CLI to each size in turn (5k, 20k,
100k by default); at each size ``--commands`` entries are modified, then deleted, then
added back, each kind as one CLI process reading the commands from a pipe, timed whole
minus the same CLI's start-up (the quickest of three empty sessions). Prints commands/s per
kind, size and target, with the softswitch/BMv2 ratio, and writes
``out/bench/cli_commands.json``. BMv2 is left out, with a note, where the reference
tools are not installed.

    python bench/cli_commands.py [--sizes 5000 20000 100000] [--commands 5000]
                                 [--targets softswitch bmv2] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from bench import veth_pps, veth_switch

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "p4src" / "tailcc.p4"
TABLE = "TailccIngress.forwarding.routing_v4"
ACTION = "TailccIngress.forwarding.set_nexthop"
HANDLE = re.compile(r"handle (\d+)")
KINDS = ("table_modify", "table_delete", "table_add")


def _route(n: int) -> str:
    """The n-th distinct /24 (VRF 1 and up, 11.x.y.0/24)."""
    vrf, net = 1 + (n >> 16), n & 0xFFFF
    return f"{vrf} 11.{net >> 8}.{net & 255}.0/24"


def _add(n: int, port: int = 2) -> str:
    return (f"table_add {TABLE} {ACTION} {_route(n)} => {port} "
            f"{veth_pps._mac(veth_pps.ROUTER_MAC)} 0x0200000000bb")


def _session(sw: veth_switch.RunningSwitch, lines: list[str]) -> tuple[str, float]:
    """Run ``lines`` in one CLI process; its output and wall seconds."""
    start = time.perf_counter()
    cli = subprocess.run(sw.cli_command, input="\n".join(lines) + "\n", text=True,
                         capture_output=True, timeout=900, env=sw.cli_env)
    seconds = time.perf_counter() - start
    if cli.returncode != 0:
        raise SystemExit(f"{sw.target}: CLI exited {cli.returncode}: {cli.stderr[-500:]}")
    return cli.stdout, seconds


def _handles(out: str, expected: int, target: str) -> list[int]:
    handles = [int(m) for m in HANDLE.findall(out)]
    if len(handles) != expected:
        raise SystemExit(f"{target}: {expected} table_add commands gave {len(handles)} "
                         f"handles: {out[-500:]}")
    return handles


def measure_target(target: str, sizes: list[int], commands: int) -> list[dict]:
    """Rows {size, kind, commands, seconds, per_s} for one target."""
    rows: list[dict] = []
    defines = {"TAILCC_ROUTE_SIZE": str(max(sizes) + commands + 16)}
    with veth_switch.running(target, PROGRAM, {}, defines) as sw:
        startup = min(_session(sw, [])[1] for _ in range(3))
        handles: list[int] = []
        for size in sizes:
            fill = list(range(len(handles), size))
            out, _ = _session(sw, [_add(n) for n in fill])
            handles += _handles(out, len(fill), target)
            probe = list(range(size - commands, size))
            batches = {
                "table_modify": [f"table_modify {TABLE} {ACTION} {handles[n]} 3 "
                                 f"{veth_pps._mac(veth_pps.ROUTER_MAC)} 0x0200000000cc"
                                 for n in probe],
                "table_delete": [f"table_delete {TABLE} {handles[n]}" for n in probe],
                "table_add": [_add(n) for n in probe]}
            for kind in KINDS:
                out, seconds = _session(sw, batches[kind])
                if "rror" in out or "Invalid" in out:
                    bad = [ln for ln in out.splitlines() if "rror" in ln or "Invalid" in ln]
                    raise SystemExit(f"{target}: {kind} at {size} entries failed: {bad[:3]}")
                if kind == "table_add":
                    for n, h in zip(probe, _handles(out, len(probe), target), strict=True):
                        handles[n] = h
                net = max(seconds - startup, 1e-6)
                rows.append({"size": size, "kind": kind, "commands": len(probe),
                             "seconds": round(net, 4), "per_s": round(len(probe) / net, 1)})
                print(f"  {target:10s} {size:>7} entries  {kind:13s} "
                      f"{len(probe) / net:9.0f} commands/s", flush=True)
        rows.append({"size": None, "kind": "cli start-up", "seconds": round(startup, 4)})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[5000, 20000, 100000])
    p.add_argument("--commands", type=int, default=5000,
                   help="entries modified, deleted and added back at each size")
    p.add_argument("--targets", nargs="+", default=["softswitch", "bmv2"],
                   choices=["softswitch", "bmv2"])
    p.add_argument("--json", type=Path, default=ROOT / "out" / "bench" / "cli_commands.json")
    args = p.parse_args(argv)
    if args.commands < 1:
        p.error("--commands must be at least 1")
    if sorted(args.sizes) != args.sizes or min(args.sizes) < args.commands:
        p.error("--sizes must be increasing and each at least --commands")
    report: dict = {"sizes": args.sizes, "commands": args.commands, "targets": {},
                    "notes": []}
    for target in args.targets:
        why = veth_switch.available(target)
        if why is not None:
            report["notes"].append(f"{target} left out: {why}")
            print(f"{target} left out: {why}")
            continue
        print(f"{target} ...", flush=True)
        report["targets"][target] = measure_target(target, args.sizes, args.commands)
    print(table(report))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"  written to {args.json}")
    return 0


def rate(report: dict, target: str, size: int, kind: str) -> float | None:
    for r in report["targets"].get(target, []):
        if r["size"] == size and r["kind"] == kind:
            return float(r["per_s"])
    return None


def table(report: dict) -> str:
    lines = [f"runtime CLI table commands, {report['commands']} per kind and size "
             "(commands/s, CLI start-up excluded)",
             f"  {'entries':>8} {'command':13s} {'softswitch':>11} {'bmv2':>9} {'ratio':>6}"]
    for size in report["sizes"]:
        for kind in KINDS:
            soft = rate(report, "softswitch", size, kind)
            bm = rate(report, "bmv2", size, kind)
            ratio = f"{soft / bm:6.2f}" if soft and bm else f"{'-':>6}"
            lines.append(f"  {size:>8} {kind:13s} {soft or 0:11.0f} {bm or 0:9.0f} {ratio}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
