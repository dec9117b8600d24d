"""P4Runtime Write/Read throughput of ``softswitch run``, over real gRPC.

Starts ``softswitch run --no-p4`` as its own process (as users run it), loads
``p4src/samples/l3_basic.p4`` (with a table large enough) through
SetForwardingPipelineConfig, becomes primary, inserts N LPM routes in batches of B
updates, reads them all back twice (the first read builds the canonical encodings the
server caches), modifies and deletes them, and prints entries per second per phase —
for batches of 1, 100 and 1000 by default. The baseline, measured in the same run
against the same server, is the rate of no-op RPCs (``Capabilities``): what one gRPC
round trip costs here, so "ratio" tells how much of a write is gRPC and how much is
the switch.
Controllers push routes in bulk at start-up, so this decides how long a topology
takes to come up. Values are sent padded to full width, as p4runtime-shell 0.0.4
does, so the server's canonicalization is part of the figure.

    python bench/p4runtime_write.py [--entries N] [--batch B ...]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch.p4runtime import pipeline
from softswitch.p4runtime.client import StreamClient

PROGRAM = pathlib.Path(__file__).resolve().parents[1] / "p4src" / "samples" / "l3_basic.p4"


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


def _batches(kind: int, entries: list[p4runtime_pb2.TableEntry],
             batch: int) -> list[p4runtime_pb2.WriteRequest]:
    out = []
    for start in range(0, len(entries), batch):
        req = p4runtime_pb2.WriteRequest(device_id=0)
        req.election_id.low = 1
        for te in entries[start:start + batch]:
            req.updates.add(type=kind).entity.table_entry.CopyFrom(te)
        out.append(req)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start_server(addr: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "softswitch", "run", "--no-p4", "--",
                             "--grpc-server-addr", addr], stderr=subprocess.PIPE, text=True)
    channel = grpc.insecure_channel(addr)
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
    finally:
        channel.close()
    return proc


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (from /proc), to tell the server's cost
    apart from the client's: both run pure-Python protobuf."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _timed(phase: str, results: dict[str, tuple[float, float]], pid: int,
           fn) -> None:  # noqa: ANN001
    cpu0, t0 = _cpu_seconds(pid), time.perf_counter()
    fn()
    results[phase] = (time.perf_counter() - t0, _cpu_seconds(pid) - cpu0)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=3000)
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 100, 1000])
    args = ap.parse_args(argv)
    if not 1 <= args.entries <= 1 << 16:
        ap.error("--entries must be 1..65536 (the routes are distinct /24s in 10/8)")
    if any(b < 1 for b in args.batch):
        ap.error("--batch sizes must be >= 1")

    source = PROGRAM.read_text().replace("size = 1024;", f"size = {args.entries};")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "l3_basic.p4")
        pathlib.Path(path).write_text(source)
        p4info = pipeline.compile_file(path, {}).p4info

    addr = f"127.0.0.1:{_free_port()}"
    server = _start_server(addr)
    channel = grpc.insecure_channel(addr, options=[("grpc.max_receive_message_length",
                                                    64 << 20)])
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    stream = StreamClient(channel)
    try:
        stream.arbitrate(1)
        stream.next()
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=0,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = source.encode()
        stub.SetForwardingPipelineConfig(req)

        ids = {o.preamble.name: o.preamble.id for o in (*p4info.tables, *p4info.actions)}
        table, action = ids["L3Ingress.ipv4_lpm"], ids["L3Ingress.set_next_hop"]
        entries = [_route(table, action, i, 1 + i % 8) for i in range(args.entries)]
        changed = [_route(table, action, i, 9) for i in range(args.entries)]
        read = p4runtime_pb2.ReadRequest(device_id=0)
        read.entities.add().table_entry.table_id = table

        def read_all() -> None:
            got = sum(len(r.entities) for r in stub.Read(read))
            assert got == args.entries, got

        noop_rate = _noop_rpc_rate(stub)
        all_results: dict[int, dict[str, tuple[float, float]]] = {}
        for batch in args.batch:
            inserts = _batches(p4runtime_pb2.Update.INSERT, entries, batch)
            modifies = _batches(p4runtime_pb2.Update.MODIFY, changed, batch)
            deletes = _batches(p4runtime_pb2.Update.DELETE, entries, batch)
            results: dict[str, tuple[float, float]] = {}
            pid = server.pid
            _timed("insert", results, pid, lambda ws=inserts: [stub.Write(w) for w in ws])
            _timed("read", results, pid, read_all)
            _timed("re-read", results, pid, read_all)
            _timed("modify", results, pid, lambda ws=modifies: [stub.Write(w) for w in ws])
            _timed("delete", results, pid, lambda ws=deletes: [stub.Write(w) for w in ws])
            all_results[batch] = results
    finally:
        stream.close()
        channel.close()
        server.terminate()
        server.wait(10)

    print(f"softswitch run, P4Runtime: {args.entries} LPM entries, {os.cpu_count()} CPUs")
    print(f"  baseline: {noop_rate:.0f} no-op RPCs/s (Capabilities round trips)")
    print(f"  {'batch':>5s} {'phase':8s} {'wall s':>8s} {'entries/s':>10s} "
          f"{'ratio':>7s} {'server CPU µs/entry':>20s}")
    for batch, results in all_results.items():
        for phase, (secs, cpu) in results.items():
            rate = args.entries / secs
            print(f"  {batch:>5d} {phase:8s} {secs:8.3f} {rate:10.0f} {rate / noop_rate:7.2f} "
                  f"{cpu * 1e6 / args.entries:20.0f}")
    return 0


def _noop_rpc_rate(stub: p4runtime_pb2_grpc.P4RuntimeStub, count: int = 300) -> float:
    """Round trips per second of the cheapest RPC, against the same server."""
    t0 = time.perf_counter()
    for _ in range(count):
        stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
    return count / (time.perf_counter() - t0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
