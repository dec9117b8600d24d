"""Reply latency of one big P4Runtime Write over real gRPC (the unary lane), in process.

``bench/p4runtime_write.py`` times back-to-back batches: its rates follow the server's
CPU per batch. This times each reply — what a controller waiting on one batch sees —
of ``--batch`` inserts, then the same deletes, ``--repeat`` times with a pause between
requests (the server is idle when each arrives), and prints the median and the
minimum. Freeing what a Write drops after its reply (``reclaim.held``) shows here and
not in the rates. The device is ``bench/p4runtime_write_inproc.py``'s (l3_basic's
``ipv4_lpm``, the server's reclaimer running); run it on ``softswitch run``'s allocator:

    PYTHONMALLOC=malloc MALLOC_ARENA_MAX=2 python bench/p4runtime_write_latency.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import grpc
from p4.v1 import p4runtime_pb2

from bench import p4runtime_write as bench  # the routes of the gRPC benchmark
from bench import p4runtime_write_inproc as inproc  # its device
from softswitch.daemon.rpc.server import serve  # noqa: E402
from softswitch.devtools.p4runtime_client import StreamClient  # noqa: E402

ELECTION = 2


def _request(kind: int, entries: list[p4runtime_pb2.TableEntry]) -> bytes:
    request = p4runtime_pb2.WriteRequest(device_id=0)
    request.election_id.low = ELECTION
    for te in entries:
        request.updates.add(type=kind).entity.table_entry.CopyFrom(te)
    return request.SerializeToString()


def run(batch: int, repeat: int, pause: float) -> dict[str, list[float]]:
    """Seconds per reply of each phase, in order."""
    device, table, action = inproc._device(batch)
    server, port = serve(device, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stream = StreamClient(channel)
    times: dict[str, list[float]] = {"insert": [], "delete": []}
    try:
        stream.arbitrate(ELECTION)
        stream.next(timeout=10)
        write = channel.unary_unary("/p4.v1.P4Runtime/Write")
        routes = [bench._route(table, action, i, 1 + i % 8) for i in range(batch)]
        requests = {"insert": _request(p4runtime_pb2.Update.INSERT, routes),
                    "delete": _request(p4runtime_pb2.Update.DELETE, routes)}
        for _ in range(repeat):
            for name, data in requests.items():
                t0 = time.perf_counter()
                write(data, timeout=30)
                times[name].append(time.perf_counter() - t0)
                time.sleep(pause)
    finally:
        stream.close()
        channel.close()
        server.stop(0).wait(5)
        device.stop()
    return times


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=40)
    ap.add_argument("--pause", type=float, default=0.02, help="seconds between requests")
    args = ap.parse_args(argv)
    if not 1 <= args.batch <= 1 << 16 or args.repeat < 1 or args.pause < 0:
        ap.error("--batch 1..65536, --repeat >= 1, --pause >= 0")
    times = run(args.batch, args.repeat, args.pause)
    print(f"P4Runtime Write reply latency over gRPC, batches of {args.batch}, "
          f"{args.repeat} each (ms):")
    for name, spent in times.items():
        print(f"  {name}: median {statistics.median(spent) * 1e3:.2f}  "
              f"min {min(spent) * 1e3:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
