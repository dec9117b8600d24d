"""How fast ``tailcc apply`` brings switches to an intent, over real gRPC.

Starts N ``softswitch run --no-p4`` processes (as users run them), writes an intent
with the default QoS profile, a tenant and R routes per switch, then times:
validate + compile, the first apply (pipeline load + every entry), a second apply
(read + diff; must write nothing), an apply after changing one route (must write
exactly one entry), and the same first apply on all switches concurrently vs. one
after another. Controllers push intent to a whole fabric at start-up and after every
change, so these decide how fast a change reaches the network.

    python bench/tailcc_apply.py [--switches N] [--routes R]
    python bench/tailcc_apply.py --default-intent
    python bench/tailcc_apply.py --intent topologies/leaf_spine_intent.yaml

``--intent PATH``: that intent, its switches started as ``softswitch run
p4src/tailcc.p4`` on free ports (the file's addresses rewritten to them), applied once,
then the unchanged re-apply timed as the whole ``tailcc apply`` command (a fresh
process: interpreter, imports, YAML, every switch read and diffed); best of
``--repeat``, against a bound of 0.5 s.

``--default-intent`` (``make bench``): ``tailcc apply`` of the shipped default profile
(``base: default``, Fast CNP on) on 4 switches already running ``p4src/tailcc.p4`` (as a
deployed fabric is: no pipeline push), first apply and re-apply, as the ``tailcc``
command and in-process, beside a baseline from the same run: one wildcard Read of every
table on the 4 switches, concurrently.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

from controlplane.compile import compile_switch
from controlplane.intent import load_intent
from controlplane.p4rt import P4InfoIndex
from controlplane.reconcile import load_pipeline, reconcile_all
from softswitch.local_port import free_port as _free_port

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "p4src" / "tailcc.p4"


def start_switch(addr: str, device_id: int) -> subprocess.Popen:
    """``softswitch run --no-p4`` serving P4Runtime on ``addr``, once it answers."""
    proc = subprocess.Popen([sys.executable, "-m", "softswitch", "run", "--no-p4",
                             "--device-id", str(device_id), "--", "--grpc-server-addr", addr],
                            stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    channel = grpc.insecure_channel(addr)
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
    finally:
        channel.close()
    return proc


def _intent_text(addresses: list[str], routes: int, changed: bool) -> str:
    lines = ["base: default", "switches:"]
    for i, addr in enumerate(addresses, start=1):
        lines += [f"  - name: leaf{i}", f"    address: {addr}", f"    device_id: {i}",
                  f"    router_mac: \"00:aa:00:00:00:{i:02x}\"",
                  "    ports: [{port: 1, tenant: t}, {port: 2}, {port: 3}, {port: 4}]",
                  "    next_hops:"]
        lines += [f"      - {{name: h{p}, port: {p}, dst_mac: \"00:00:00:00:0{i}:0{p}\"}}"
                  for p in range(1, 5)]
        lines.append("    routes:")
        for r in range(routes):
            hop = 1 + (r % 4)
            if changed and r == 0:
                hop = 1 + (hop % 4)
            lines.append(f"      - {{prefix: 10.{r >> 8}.{r & 255}.0/24, next_hop: h{hop}}}")
    lines += ["tenants:", "  - name: t", "    vrf: 1", "    default: deny", "    rules:",
              "      - {src: 10.1.1.0/24, dst: 10.1.2.0/24, action: allow}"]
    return "\n".join(lines) + "\n"


def _apply(intent, pipeline, label: str, table: list, sequential: bool = False) -> None:
    t0 = time.perf_counter()
    if sequential:
        results = [r for s in intent.switches
                   for r in reconcile_all(intent, pipeline, switches=[s.name])]
    else:
        results = reconcile_all(intent, pipeline)
    seconds = time.perf_counter() - t0
    failed = [r for r in results if r.error]
    if failed:
        raise SystemExit(f"{label}: {failed[0].switch}: {failed[0].error}")
    written = sum(r.written for r in results)
    rate = f"{written / seconds:,.0f}/s" if written else "-"
    table.append((label, written, seconds, rate))


def _start_with_program(addr: str, device_id: int) -> subprocess.Popen:
    """``softswitch run p4src/tailcc.p4``: the switch compiles and runs the program."""
    proc = subprocess.Popen([sys.executable, "-m", "softswitch", "run", str(PROGRAM),
                             "--device-id", str(device_id), "--", "--grpc-server-addr",
                             addr], stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    channel = grpc.insecure_channel(addr)
    try:
        grpc.channel_ready_future(channel).result(timeout=120)
    finally:
        channel.close()
    from controlplane.p4rt import Client
    client = Client(addr, device_id, election_id=1)
    deadline = time.monotonic() + 120
    try:
        client.connect(require_primary=False)
        while client.get_p4info() is None:     # the program is still compiling
            if time.monotonic() > deadline:
                raise SystemExit(f"{addr}: tailcc.p4 never came up")
            time.sleep(0.2)
    finally:
        client.close()
    return proc


def _default_intent_text(addresses: list[str]) -> str:
    lines = ["base: default", "fast_cnp: {enabled: true}", "switches:"]
    for i, addr in enumerate(addresses, start=1):
        lines += [f"  - name: leaf{i}", f"    address: {addr}", f"    device_id: {i}",
                  "    ports: [1, 2, 3, 4]"]
    return "\n".join(lines) + "\n"


def _read_all(addresses: list[str]) -> tuple[float, int]:
    """Baseline: one wildcard Read of every table entry on every switch, concurrently
    (connect, arbitrate as backup, Read, close: what the cheapest apply must do)."""
    from concurrent.futures import ThreadPoolExecutor

    from p4.v1 import p4runtime_pb2

    from controlplane.p4rt import Client

    def one(i_addr: tuple[int, str]) -> int:
        client = Client(i_addr[1], i_addr[0], election_id=1)
        try:
            client.connect(require_primary=False)
            return len(list(client.read([p4runtime_pb2.TableEntry()])))
        finally:
            client.close()

    t0 = time.perf_counter()
    with ThreadPoolExecutor(len(addresses)) as pool:
        n = sum(pool.map(one, enumerate(addresses, start=1)))
    return time.perf_counter() - t0, n


def _user_env() -> dict[str, str]:
    """The environment of a user's shell for the timed ``tailcc`` commands: bytecode
    caching on, as for any installed package (PYTHONDONTWRITEBYTECODE, which sandboxes
    and some CI set, would make every run recompile the command's modules), the cache
    under out/bench/pycache rather than in the source tree."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(ROOT / "out" / "bench" / "pycache")
    return env


def _warm_bytecode() -> None:
    """Compile the command's modules once (untimed), as installing the package does."""
    subprocess.run([sys.executable, "-c", "import controlplane.cli"], cwd=ROOT, check=True,
                   env=_user_env())


def _cli_apply(path: Path) -> tuple[float, str]:
    seconds, _cpu, line = _cli_apply_cpu(path)
    return seconds, line


def _cli_apply_cpu(path: Path) -> tuple[float, float, str]:
    """One ``tailcc apply`` command: wall seconds, its CPU seconds (user + system: what
    it costs on an idle machine, whatever the load here), first line of output."""
    env = _user_env()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "controlplane.cli", "apply", str(path), "-q"],
                         capture_output=True, text=True, cwd=ROOT, env=env)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode != 0:
        raise SystemExit(f"tailcc apply failed: {out.stdout}{out.stderr}")
    return seconds, cpu, out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""


def default_intent(repeat: int) -> int:
    """``--default-intent``: the benchmark ``make bench`` runs (module docstring)."""
    addrs = [f"127.0.0.1:{_free_port()}" for _ in range(4)]
    procs: list[subprocess.Popen] = []
    rows: list[tuple[str, float]] = []
    try:
        t0 = time.perf_counter()
        procs = [_start_with_program(a, i) for i, a in enumerate(addrs, start=1)]
        t_start = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "default.yaml"
            path.write_text(_default_intent_text(addrs))
            base = [_read_all(addrs) for _ in range(repeat)]
            rows.append((f"baseline: Read all tables, 4 switches ({base[0][1]} entries)",
                         min(b[0] for b in base)))
            _warm_bytecode()
            first, line = _cli_apply(path)
            rows.append(("tailcc apply (command), first apply", first))
            again = min(_cli_apply(path)[0] for _ in range(repeat))
            rows.append(("tailcc apply (command), re-apply", again))
            base = [_read_all(addrs) for _ in range(repeat)]
            rows.append((f"baseline: Read all tables, 4 switches ({base[0][1]} entries)",
                         min(b[0] for b in base)))
            intent = load_intent(path)
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                results = reconcile_all(intent, None)
                times.append(time.perf_counter() - t0)
                if any(r.error or r.plan for r in results):
                    raise SystemExit(f"re-apply not in sync: {results}")
            rows.append(("reconcile_all in-process, re-apply", min(times)))
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "import controlplane.cli"], cwd=ROOT,
                           check=True, env=_user_env())
            rows.append(("python -c 'import controlplane.cli' (startup)",
                         time.perf_counter() - t0))
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait()
    print(f"tailcc apply of the default intent on 4 switches running tailcc.p4 "
          f"(started in {t_start:.1f} s); first apply wrote: {line}")
    print(f"{'measurement':<58} {'seconds':>8}")
    for label, seconds in rows:
        print(f"{label:<58} {seconds:>8.3f}")
    return 0


def given_intent(intent: Path, repeat: int, out: Path) -> int:
    """``--intent``: the unchanged re-apply of a shipped intent (module docstring)."""
    import re

    text = intent.read_text()
    old = sorted(set(re.findall(r"address:\s*(\S+)", text)))
    if not old:
        raise SystemExit(f"{intent}: no switch addresses")
    new = {a: f"127.0.0.1:{_free_port()}" for a in old}
    ids = [int(d) for d in re.findall(r"device_id:\s*(\d+)", text)]
    if len(ids) != len(old):
        raise SystemExit(f"{intent}: every switch needs its own address and device_id")
    for a, b in new.items():
        text = re.sub(rf"address:\s*{re.escape(a)}\b", f"address: {b}", text)
    procs: list[subprocess.Popen] = []
    try:
        t0 = time.perf_counter()
        procs = [_start_with_program(new[a], i) for a, i in zip(old, ids, strict=True)]
        t_start = time.perf_counter() - t0
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / intent.name
            path.write_text(text)
            _warm_bytecode()
            first, line = _cli_apply(path)
            runs = [_cli_apply_cpu(path) for _ in range(repeat)]
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait()
    best = min(t for t, _, _ in runs)
    cpu = min(c for _, c, _ in runs)
    print(f"tailcc apply {intent} on {len(old)} switches running tailcc.p4 (started in "
          f"{t_start:.1f} s); first apply {first:.3f} s: {line}")
    print(f"unchanged re-apply, whole command: best {best:.3f} s wall of {repeat} "
          f"({', '.join(f'{t:.3f}' for t, _, _ in runs)}), {cpu:.3f} s CPU (user+sys); "
          f"load average {os.getloadavg()[0]:.1f}; says: {runs[0][2]}")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "intent": str(intent), "switches": len(old), "first_apply_s": first,
        "reapply_s": [t for t, _, _ in runs], "reapply_cpu_s": [c for _, c, _ in runs],
        "reapply_best_s": best, "bound_s": 0.5, "within_bound": best <= 0.5,
        "loadavg": os.getloadavg()}, indent=2) + "\n")
    print(f"written to {out}")
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--switches", type=int, default=2, help="softswitch processes (2)")
    ap.add_argument("--routes", type=int, default=500, help="routes per switch (500)")
    ap.add_argument("--default-intent", action="store_true",
                    help="the default profile on 4 switches already running tailcc.p4")
    ap.add_argument("--intent", type=Path,
                    help="time the unchanged re-apply of this intent (e.g. "
                         "topologies/leaf_spine_intent.yaml) as the whole command")
    ap.add_argument("--json", type=Path, default=ROOT / "out" / "bench" / "tailcc_apply.json",
                    help="--intent: where the figures go (out/bench/tailcc_apply.json)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="--default-intent/--intent: repetitions, best taken (3)")
    args = ap.parse_args(argv)
    if args.intent is not None:
        if args.repeat < 1:
            ap.error("--repeat must be >= 1")
        if not args.intent.is_file():
            ap.error(f"--intent: no file {args.intent}")
        return given_intent(args.intent, args.repeat, args.json)
    if args.default_intent:
        if args.repeat < 1:
            ap.error("--repeat must be >= 1")
        return default_intent(args.repeat)
    if not 1 <= args.switches <= 16 or not 1 <= args.routes <= 16000:
        ap.error("--switches must be 1..16 and --routes 1..16000")
    addrs = [f"127.0.0.1:{_free_port()}" for _ in range(args.switches)]
    procs = [start_switch(a, i) for i, a in enumerate(addrs, start=1)]
    table: list[tuple[str, int, float, str]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path, changed = Path(tmp) / "intent.yaml", Path(tmp) / "changed.yaml"
            path.write_text(_intent_text(addrs, args.routes, False))
            changed.write_text(_intent_text(addrs, args.routes, True))
            t0 = time.perf_counter()
            pipeline = load_pipeline(None, str(PROGRAM))
            t_p4 = time.perf_counter() - t0
            t0 = time.perf_counter()
            intent = load_intent(path)
            index = P4InfoIndex(pipeline.p4info)
            entities = sum(len(compile_switch(intent, s, index).entities)
                           for s in intent.switches)
            table.append(("validate + compile intent", entities, time.perf_counter() - t0,
                          "-"))
            _apply(intent, pipeline, "first apply (pipeline + entries)", table)
            _apply(intent, pipeline, "re-apply, unchanged", table)
            _apply(load_intent(changed), pipeline, "apply, one route changed", table)
            _apply(intent, pipeline, "apply, route changed back", table)
        # fresh switches for concurrent vs sequential first applies
        for proc in procs:
            proc.terminate()
            proc.wait()
        for label, sequential in (("first apply, switches concurrently", False),
                                  ("first apply, switches one by one", True)):
            procs = [start_switch(a, i) for i, a in enumerate(addrs, start=1)]
            _apply(intent, pipeline, label, table, sequential)
            for proc in procs:
                proc.terminate()
                proc.wait()
    finally:
        for proc in procs:
            proc.terminate()
    print(f"tailcc apply: {args.switches} softswitch processes, {args.routes} routes each; "
          f"compiling tailcc.p4 for its P4Info took {t_p4:.2f} s")
    print(f"{'phase':<40} {'entries':>8} {'seconds':>8} {'write rate':>11}")
    for label, n, seconds, rate in table:
        print(f"{label:<40} {n:>8} {seconds:>8.2f} {rate:>11}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
