"""P4Runtime Write/Read throughput of ``softswitch run`` beside BMv2 ``simple_switch_grpc``.

Each target runs as its own process, as users run it, with no program (``--no-p4``); the
benchmark pushes ``p4src/samples/l3_basic.p4`` (``ipv4_lpm`` sized to the entry count)
through SetForwardingPipelineConfig (softswitch: the P4 source; BMv2: what ``p4c-bm2-ss``
compiles from it), becomes primary and times, over real gRPC on loopback:

    insert   N LPM routes (/24s in 10/8), batches of 1, 100, 1000, emptied between (untimed)
    read     all N back in one Read, twice: softswitch's first read builds the
             canonical encodings it caches, the second ("re-read") uses them
    modify, delete   all N, batches of 1000

each phase ``--rounds`` times, the targets taking turns round by round, the one waiting
stopped (SIGSTOP) (``run_rounds``). It prints, from each phase's median round, entries/s
per target and the softswitch/BMv2 ratio, each server's CPU time per entry and its rate
of no-op RPCs (``Capabilities``: one gRPC round trip), and writes them to ``--json``.

Requests are serialized before the clock starts and the entities read are counted after
it stops: the figures are the switch's and gRPC's, not this client's protobuf. Values are
padded to full width, as p4runtime-shell sends them, so softswitch's canonicalization is
part of its figure. Controllers push routes in bulk at start-up: this decides how long a
topology takes to come up. BMv2 is left out, with a note, without the reference tools.

    python bench/p4runtime_write.py [--entries N] [--insert-batch B ...] [--batch B]
                                    [--rounds R] [--targets softswitch bmv2] [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import grpc
from google.protobuf import text_format
from google.protobuf.internal import api_implementation
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from softswitch.devtools import reference_tools
from softswitch.devtools.p4runtime_client import StreamClient
from softswitch.local_port import free_port as _free_port
from softswitch.p4runtime import pipeline

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "p4src" / "samples" / "l3_basic.p4"
NOOP_CALLS = 2000
TABLE, ACTION = "L3Ingress.ipv4_lpm", "L3Ingress.set_next_hop"
DEFAULT_JSON = ROOT / "out" / "bench" / "p4runtime_write.json"
TARGETS = ("softswitch", "bmv2")


def _route(table_id: int, action_id: int, i: int, port: int) -> p4runtime_pb2.TableEntry:
    te = p4runtime_pb2.TableEntry(table_id=table_id)
    fm = te.match.add(field_id=1)
    fm.lpm.value = (0x0A000000 | (i << 8)).to_bytes(4, "big")
    fm.lpm.prefix_len = 24
    te.action.action.action_id = action_id
    te.action.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    te.action.action.params.add(param_id=2, value=b"\x02\x00\x00\x00\x00\x01")
    te.action.action.params.add(param_id=3, value=i.to_bytes(6, "big"))
    return te


def _batches(kind: int, entries: list[p4runtime_pb2.TableEntry], batch: int) -> list[bytes]:
    """Serialized WriteRequests of ``batch`` updates each."""
    out = []
    for start in range(0, len(entries), batch):
        req = p4runtime_pb2.WriteRequest(device_id=0)
        req.election_id.low = 1
        for te in entries[start:start + batch]:
            req.updates.add(type=kind).entity.table_entry.CopyFrom(te)
        out.append(req.SerializeToString())
    return out


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (from /proc): the server's share of a phase."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- targets ----------------------------------------------------------------------------------
@dataclass
class Target:
    """One switch under test: how to start it and what pipeline config it takes."""

    name: str
    command: Callable[[str, pathlib.Path], list[str]]
    config: Callable[[pathlib.Path, pathlib.Path], tuple[p4info_pb2.P4Info, bytes]]
    notes: list[str] = field(default_factory=list)


def _softswitch_command(addr: str, work: pathlib.Path) -> list[str]:
    return [sys.executable, "-m", "softswitch", "run", "--no-p4", "--",
            "--grpc-server-addr", addr]


def _softswitch_config(program: pathlib.Path,
                       work: pathlib.Path) -> tuple[p4info_pb2.P4Info, bytes]:
    return pipeline.compile_file(str(program), {}).p4info, program.read_bytes()


def _bmv2_target(tools: reference_tools.ReferenceTools) -> Target:
    def command(addr: str, work: pathlib.Path) -> list[str]:
        # Own thrift port and notification socket: other switches may run beside it.
        return [tools.simple_switch_grpc, "--no-p4", "--thrift-port", str(_free_port()),
                "--notifications-addr", f"ipc://{work}/bmv2-notifications.ipc",
                "--log-level", "off", "--", "--grpc-server-addr", addr]

    def config(program: pathlib.Path, work: pathlib.Path) -> tuple[p4info_pb2.P4Info, bytes]:
        out_json, out_info = work / "l3_basic.json", work / "l3_basic.p4info.txtpb"
        proc = subprocess.run([tools.p4c, "--p4runtime-files", str(out_info), "-o",
                               str(out_json), str(program)], capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"p4c-bm2-ss failed: {proc.stderr.strip()}")
        info = text_format.Parse(out_info.read_text(), p4info_pb2.P4Info())
        return info, out_json.read_bytes()

    return Target("bmv2", command, config)


def _start(target: Target, work: pathlib.Path) -> tuple[subprocess.Popen, str]:
    addr = f"127.0.0.1:{_free_port()}"
    log = open(work / f"{target.name}.log", "w")  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen(target.command(addr, work), stdout=log, stderr=subprocess.STDOUT)
    log.close()
    channel = grpc.insecure_channel(addr)
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
    except grpc.FutureTimeoutError:
        proc.kill()
        proc.wait()
        raise RuntimeError(f"{target.name} did not start: "
                           f"{(work / f'{target.name}.log').read_text()[-2000:]}") from None
    finally:
        channel.close()
    return proc, addr


# --- one target's run -------------------------------------------------------------------------
Phase = tuple[str, int]                       # (phase, batch size)


@dataclass
class Session:
    """One target's server, set up and programmed, between rounds: ``round()`` runs every
    phase once (and leaves the table empty); ``pid`` is the server's process."""

    pid: int
    round: Callable[[], None]
    result: Callable[[], dict]


@contextlib.contextmanager
def target_session(target: Target, program: pathlib.Path, work: pathlib.Path,
                   entries: int, insert_batches: list[int], batch: int
                   ) -> Iterator[Session]:
    """``target``'s server started, primary and programmed, its no-op RPC rate
    measured; each phase's figure is its median round, all rounds' seconds kept."""
    info, device_config = target.config(program, work)
    ids = {o.preamble.name: o.preamble.id for o in (*info.tables, *info.actions)}
    table, action = ids[TABLE], ids[ACTION]
    routes = [_route(table, action, i, 1 + i % 8) for i in range(entries)]
    changed = [_route(table, action, i, 9) for i in range(entries)]
    read_req = p4runtime_pb2.ReadRequest(device_id=0)
    read_req.entities.add().table_entry.table_id = table
    read_bytes = read_req.SerializeToString()

    server, addr = _start(target, work)
    channel = grpc.insecure_channel(addr, options=[("grpc.max_receive_message_length",
                                                    256 << 20)])
    # No (de)serializers: requests go out as the bytes built above, responses stay bytes.
    write = channel.unary_unary("/p4.v1.P4Runtime/Write")
    read = channel.unary_stream("/p4.v1.P4Runtime/Read")
    capabilities = channel.unary_unary("/p4.v1.P4Runtime/Capabilities")
    stream = StreamClient(channel)
    runs: dict[Phase, list[tuple[float, float]]] = {}     # (seconds, server CPU s)

    def timed(phase: Phase, fn: Callable[[], object]) -> object:
        cpu0, t0 = _cpu_seconds(server.pid), time.perf_counter()
        got = fn()
        secs = time.perf_counter() - t0
        runs.setdefault(phase, []).append((secs, _cpu_seconds(server.pid) - cpu0))
        return got

    def write_all(requests: list[bytes]) -> None:
        for r in requests:
            write(r, timeout=600)

    def read_all() -> list[bytes]:
        return list(read(read_bytes, timeout=600))

    def count(chunks: list[bytes]) -> int:
        return sum(len(p4runtime_pb2.ReadResponse.FromString(c).entities) for c in chunks)

    try:
        stream.arbitrate(1)
        stream.next(timeout=30)
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=0,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(info)
        req.config.p4_device_config = device_config
        channel.unary_unary("/p4.v1.P4Runtime/SetForwardingPipelineConfig")(
            req.SerializeToString(), timeout=120)

        noop = p4runtime_pb2.CapabilitiesRequest().SerializeToString()
        # NOOP_CALLS calls: enough for a steady figure on a shared machine
        t0 = time.perf_counter()
        for _ in range(NOOP_CALLS):
            capabilities(noop, timeout=30)
        noop_rate = NOOP_CALLS / (time.perf_counter() - t0)

        deletes = _batches(p4runtime_pb2.Update.DELETE, routes, batch)
        inserts = {b: _batches(p4runtime_pb2.Update.INSERT, routes, b) for b in insert_batches}
        modifies = _batches(p4runtime_pb2.Update.MODIFY, changed, batch)

        def one_round() -> None:
            for i, b in enumerate(insert_batches):
                if i:
                    write_all(deletes)                              # untimed: empty table
                timed(("insert", b), lambda ws=inserts[b]: write_all(ws))
            for phase in ("read", "re-read"):
                got = count(timed((phase, 0), read_all))
                if got != entries:
                    raise RuntimeError(f"{target.name}: read {got} entries, expected {entries}")
            timed(("modify", batch), lambda: write_all(modifies))
            timed(("delete", batch), lambda: write_all(deletes))
            if count(read_all()) != 0:
                raise RuntimeError(f"{target.name}: entries left after delete")

        def result() -> dict:
            return {"noop_rpc_per_s": noop_rate,
                    "phases": [{"phase": p, "batch": b or None, **_median(entries, r)}
                               for (p, b), r in runs.items()]}
        yield Session(server.pid, one_round, result)
    finally:
        _resume(server.pid)
        stream.close()
        channel.close()
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _pause(pid: int) -> None:
    """Stop a server between its rounds (SIGSTOP): the other target's rounds then run
    as they would alone, without this one's idle threads beside them. Returns once the
    kernel shows it stopped (a signal is delivered asynchronously)."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:         # it died: the round that saw it says why
        return
    deadline = time.monotonic() + 5
    while _state(pid) not in ("T", "t", "Z", "X") and time.monotonic() < deadline:
        time.sleep(0.001)


def _state(pid: int) -> str:
    """A process's state letter (``/proc/PID/stat``): T once stopped."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


def _resume(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def run_rounds(sessions: dict[str, Session], rounds: int) -> dict[str, dict]:
    """Each round runs every target's phases in turn, the others stopped meanwhile:
    alternating, a machine that slows down or speeds up for a while moves both
    targets' figures, not one target's whole run, so the ratio holds still."""
    for session in sessions.values():
        _pause(session.pid)
    for _ in range(rounds):
        for session in sessions.values():
            _resume(session.pid)
            try:
                session.round()
            finally:
                _pause(session.pid)
    return {name: session.result() for name, session in sessions.items()}


def _median(entries: int, runs: list[tuple[float, float]]) -> dict:
    """A phase's figures from its median round (by time), with every round's seconds:
    a round is short enough for a busy neighbour to halve it, the median is not."""
    secs, cpu = sorted(runs)[len(runs) // 2]
    return {"seconds": secs, "entries_per_s": entries / secs,
            "server_cpu_us_per_entry": cpu * 1e6 / entries,
            "rounds_seconds": [round(s, 6) for s, _ in runs]}


# --- report -----------------------------------------------------------------------------------
def _environment(entries: int) -> dict:
    def version(dist: str) -> str | None:
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            return None

    return {"entries": entries, "cpus": os.cpu_count(), "loadavg": os.getloadavg(),
            "protobuf": version("protobuf"),
            "protobuf_implementation": api_implementation.Type(),
            "grpcio": version("grpcio"), "p4runtime": version("p4runtime"),
            "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def table(report: dict) -> str:
    targets = list(report["targets"])
    env = report["environment"]
    lines = [f"P4Runtime write/read, {env['entries']} LPM entries, {env['cpus']} CPUs, "
             f"protobuf {env['protobuf']} ({env['protobuf_implementation']}), "
             f"load average {env['loadavg'][0]:.1f}"]
    for name in targets:
        lines.append(f"  {name}: {report['targets'][name]['noop_rpc_per_s']:.0f} no-op "
                     "RPCs/s (Capabilities round trips)")
    for note in report.get("notes", []):
        lines.append(f"  note: {note}")
    head = f"  {'phase':8s} {'batch':>5s}"
    for name in targets:
        head += f" {name + ' /s':>15s}"
    for name in targets:
        head += f" {name + ' CPU µs':>16s}"
    if len(targets) == 2:
        head += f" {'ratio':>7s}"
    lines.append(head)
    rows = {t: {(p["phase"], p["batch"]): p for p in report["targets"][t]["phases"]}
            for t in targets}
    for key in rows[targets[0]]:
        phase, batch = key
        line = f"  {phase:8s} {batch or '':>5}"
        for name in targets:
            line += f" {rows[name][key]['entries_per_s']:15.0f}"
        for name in targets:
            line += f" {rows[name][key]['server_cpu_us_per_entry']:16.1f}"
        if len(targets) == 2:
            a, b = (rows[t][key]["entries_per_s"] for t in targets)
            line += f" {a / b:7.2f}"
        lines.append(line)
    if len(targets) == 2:
        lines.append(f"  ratio = {targets[0]} / {targets[1]} entries/s; CPU µs = server CPU "
                     "time per entry")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=20000)
    ap.add_argument("--insert-batch", type=int, nargs="+", default=[1, 100, 1000],
                    help="batch sizes of the insert runs (1 100 1000)")
    ap.add_argument("--batch", type=int, default=1000, help="modify/delete batch (1000)")
    ap.add_argument("--rounds", type=int, default=5,
                    help="times each phase runs, the targets in turn; its median round is "
                         "reported (5)")
    ap.add_argument("--targets", nargs="+", choices=TARGETS, default=list(TARGETS))
    ap.add_argument("--json", type=pathlib.Path, default=DEFAULT_JSON,
                    help=f"where to write the figures ({DEFAULT_JSON.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    if not 1 <= args.entries <= 1 << 16:
        ap.error("--entries must be 1..65536 (the routes are distinct /24s in 10/8)")
    if any(b < 1 for b in (*args.insert_batch, args.batch)):
        ap.error("batch sizes must be >= 1")
    if args.rounds < 1:
        ap.error("--rounds must be >= 1")

    notes: list[str] = []
    targets = [Target("softswitch", _softswitch_command, _softswitch_config)]
    if "bmv2" in args.targets:
        tools = reference_tools.find()
        if tools is None:
            notes.append(f"BMv2 left out: {reference_tools.missing_reason()}")
        else:
            targets.append(_bmv2_target(tools))
    if "softswitch" not in args.targets:
        targets = targets[1:]
    if not targets:
        ap.error("no target to run")

    report: dict = {"environment": _environment(args.entries), "notes": notes, "targets": {}}
    source = PROGRAM.read_text().replace("size = 1024;", f"size = {args.entries};")
    with contextlib.ExitStack() as stack:
        sessions: dict[str, Session] = {}
        for target in targets:
            work = pathlib.Path(stack.enter_context(
                tempfile.TemporaryDirectory(prefix=f"p4rt-bench-{target.name}-")))
            program = work / "l3_basic.p4"
            program.write_text(source)
            print(f"{target.name} ...", file=sys.stderr, flush=True)
            sessions[target.name] = stack.enter_context(target_session(
                target, program, work, args.entries, args.insert_batch, args.batch))
            _pause(sessions[target.name].pid)       # while the next one is set up
        print(f"{args.rounds} rounds, the targets in turn ...", file=sys.stderr, flush=True)
        report["targets"] = run_rounds(sessions, args.rounds)
    print(table(report))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print(f"  written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
