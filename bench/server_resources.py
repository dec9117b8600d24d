"""Memory and shutdown of ``softswitch run`` under huge Write batches (issue 13).

Starts ``softswitch run --no-p4`` as its own process, loads ``l3_basic.p4`` with a
table big enough, becomes primary and measures the server's resident memory (VmRSS
from /proc) at each step:

1. baseline — pipeline loaded, nothing written;
2. after inserting ``--entries`` /32 routes in batches of ``--batch`` updates;
3. after reading them all back (Read builds and caches each entry's encoding);
4. after deleting them all, and a few seconds later;
5. a batch bigger than the server's request limit (refused: RESOURCE_EXHAUSTED).

Then SIGTERM (a controller's StreamChannel open, a 200k-update Write being applied),
timing how long the process takes to exit and checking that its gRPC port can be
bound again at once. Prints the figures; asserts nothing.

    python bench/server_resources.py [--entries N] [--batch B] [--json FILE]
                                     [--allocator jemalloc|glibc|pymalloc]

``--allocator`` runs the server on that allocator instead of the one ``softswitch run``
chooses (``softswitch.memory.allocator``), to compare them.

``--json`` also writes the figures as JSON (tests/test_server_resources.py bounds them).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch.devtools.p4runtime_client import StreamClient
from softswitch.local_port import free_port as _free_port
from softswitch.memory import allocator
from softswitch.p4runtime import pipeline

PROGRAM = pathlib.Path(__file__).resolve().parents[1] / "p4src" / "samples" / "l3_basic.p4"
MiB = 1 << 20


def _route(table_id: int, action_id: int, i: int) -> p4runtime_pb2.TableEntry:
    te = p4runtime_pb2.TableEntry(table_id=table_id)
    fm = te.match.add(field_id=1)
    fm.lpm.value = (0x0A000000 | i).to_bytes(4, "big")
    fm.lpm.prefix_len = 32
    te.action.action.action_id = action_id
    te.action.action.params.add(param_id=1, value=(1 + i % 8).to_bytes(2, "big"))
    te.action.action.params.add(param_id=2, value=b"\x02\x00\x00\x00\x00\x01")
    te.action.action.params.add(param_id=3, value=i.to_bytes(6, "big"))
    return te


def _write(stub, kind: int, entries: list, election_id: int = 1) -> None:
    req = p4runtime_pb2.WriteRequest(device_id=0)
    req.election_id.low = election_id
    for te in entries:
        req.updates.add(type=kind).entity.table_entry.CopyFrom(te)
    stub.Write(req, timeout=600)


HUGE_UPDATES = 1_200_000


def _huge_batch(channel: grpc.Channel, table: int, action: int,
                updates: int = HUGE_UPDATES) -> str:
    """A Write of ``updates`` distinct inserts, sent as raw bytes (building that many
    messages in pure-Python protobuf would take the client minutes)."""
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    update.entity.table_entry.CopyFrom(_route(table, action, 1))
    one = update.SerializeToString()
    value = (0x0A000001).to_bytes(4, "big")
    at = one.index(value)
    head = p4runtime_pb2.WriteRequest(device_id=0)
    head.election_id.low = 1
    parts = [head.SerializeToString()]
    for i in range(updates):                  # the route's address varies (same length)
        body = one[:at] + (0x0B000000 + i).to_bytes(4, "big") + one[at + 4:]
        parts.append(b"\x22" + bytes([len(body)]) + body)   # updates = 4, delimited
    data = b"".join(parts)
    write = channel.unary_unary("/p4.v1.P4Runtime/Write", request_serializer=lambda b: b,
                                response_deserializer=p4runtime_pb2.WriteResponse.FromString)
    try:
        write(data, timeout=600)
    except grpc.RpcError as exc:
        return f"{exc.code().name}: {exc.details()[:60]}"
    return "accepted"


def _rss(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _port_free(port: int) -> bool:
    """Whether a new server could listen on the port now (as gRPC does: SO_REUSEADDR,
    so connections the old process closed, in TIME_WAIT, do not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError:
            return False
    return True


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=150_000)
    ap.add_argument("--batch", type=int, default=50_000)
    ap.add_argument("--settle", type=float, default=3.0,
                    help="seconds to wait before the after-delete figure")
    ap.add_argument("--huge", type=int, default=HUGE_UPDATES,
                    help="updates in the batch over the server's request limit")
    ap.add_argument("--json", type=pathlib.Path, help="also write the figures here")
    ap.add_argument("--allocator", choices=allocator.CHOICES,
                    help="the server's allocator (default: softswitch run's choice)")
    args = ap.parse_args(argv)
    if not 1 <= args.entries <= 1 << 24 or args.batch < 1:
        ap.error("--entries must be 1..2^24 and --batch >= 1")
    env = None
    if args.allocator is not None:
        try:
            env = allocator.server_environment(os.environ, args.allocator)
        except allocator.AllocatorError as exc:
            ap.error(f"--allocator: {exc}")
        if env is None:
            ap.error("--allocator: PYTHONMALLOC is set, which the server would run on")

    source = PROGRAM.read_text().replace("size = 1024;", f"size = {args.entries};")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "l3_basic.p4")
        pathlib.Path(path).write_text(source)
        p4info = pipeline.compile_file(path, {}).p4info

    port = _free_port()
    addr = f"127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-m", "softswitch", "run", "--no-p4",
                               "--device-id", "0", "--", "--grpc-server-addr", addr],
                              stderr=subprocess.PIPE, text=True, env=env)
    channel = grpc.insecure_channel(addr, options=[
        ("grpc.max_send_message_length", 256 * MiB),
        ("grpc.max_receive_message_length", 256 * MiB)])
    grpc.channel_ready_future(channel).result(timeout=60)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    stream = StreamClient(channel)
    figures: list[tuple[str, float, str]] = []
    try:
        stream.arbitrate(1)
        stream.next()
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=0,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = source.encode()
        stub.SetForwardingPipelineConfig(req, timeout=300)
        ids = {o.preamble.name: o.preamble.id for o in (*p4info.tables, *p4info.actions)}
        table, action = ids["L3Ingress.ipv4_lpm"], ids["L3Ingress.set_next_hop"]
        entries = [_route(table, action, i) for i in range(args.entries)]
        pid = server.pid
        time.sleep(1)
        figures.append(("baseline (pipeline loaded)", _rss(pid), ""))
        t0 = time.perf_counter()
        for start in range(0, len(entries), args.batch):
            _write(stub, p4runtime_pb2.Update.INSERT, entries[start:start + args.batch])
        figures.append((f"after inserting {args.entries} in batches of {args.batch}",
                        _rss(pid), f"{time.perf_counter() - t0:.1f} s"))
        read = p4runtime_pb2.ReadRequest(device_id=0)
        read.entities.add().table_entry.table_id = table
        got = sum(len(r.entities) for r in stub.Read(read, timeout=600))
        figures.append((f"after reading them ({got})", _rss(pid), ""))
        for start in range(0, len(entries), args.batch):
            _write(stub, p4runtime_pb2.Update.DELETE, entries[start:start + args.batch])
        figures.append(("after deleting them", _rss(pid), ""))
        time.sleep(args.settle)
        figures.append((f"{args.settle:g} s later", _rss(pid), ""))
        verdict = _huge_batch(channel, table, action, args.huge)
        figures.append((f"a {args.huge // 1000}k-update batch "
                        f"({args.huge * 64 // MiB} MiB)", _rss(pid), verdict))
        time.sleep(args.settle)
        figures.append((f"{args.settle:g} s later", _rss(pid), ""))
        # SIGTERM with a controller's stream open and a big Write being applied
        busy = threading.Thread(target=_huge_batch, args=(channel, table, action, 200_000),
                                daemon=True)
        busy.start()
        time.sleep(3)
    finally:
        channel_open = stream
    t0 = time.perf_counter()
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(60)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    stop_s = time.perf_counter() - t0
    channel_open.close()
    channel.close()
    free = _port_free(port)

    base = figures[0][1]
    print(f"softswitch run: server RSS (MiB), {os.cpu_count()} CPUs, allocator "
          f"{args.allocator or 'default'}")
    for label, rss, note in figures:
        print(f"  {label:48s} {rss:8.1f}  {100 * (rss - base) / base:+6.0f}%  {note}")
    print(f"  SIGTERM to exit: {stop_s:.2f} s (exit code {server.returncode}); "
          f"gRPC port free at once: {'yes' if free else 'no'}")
    if args.json:
        args.json.write_text(json.dumps({
            "rss_mib": [{"step": label, "rss": rss, "note": note}
                        for label, rss, note in figures],
            "sigterm_s": stop_s, "exit_code": server.returncode, "port_free": free}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
