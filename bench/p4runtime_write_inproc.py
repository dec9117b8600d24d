"""P4Runtime Write cost per entry inside softswitch's server, without gRPC.

``bench/p4runtime_write.py`` times real gRPC round trips beside BMv2; its figures move
with the machine's load and include gRPC's own work. This one runs the server's Write
handler (``rpc.unary``'s answer to a Write: decoding, checks, the switch, the C tables)
in process on the same routes (``p4src/samples/l3_basic.p4``'s ``ipv4_lpm``, values padded
to full width), as the primary controller, with the server's memory reclaimer (so with
its collector policy), and prints the thread CPU time per entry of insert, modify and
delete — the best of ``--rounds`` rounds, each round inserting, modifying and deleting
every entry: what a change to the write path saves, less noisy than wall-clock rates on
a shared machine. It also prints the allocator blocks each stored entry holds (after
the first insert, on pymalloc, which counts them: ``sys.getallocatedblocks``): what a
delete has to free, deterministic where the times are not.

    python bench/p4runtime_write_inproc.py [--entries N] [--batch B] [--rounds R]
"""

from __future__ import annotations

import argparse
import gc
import pathlib
import sys
import tempfile
import time

from p4.v1 import p4runtime_pb2

from bench import p4runtime_write as bench  # the routes and batches of the gRPC benchmark
from softswitch.daemon.device import Device  # noqa: E402
from softswitch.daemon.rpc import unary  # noqa: E402
from softswitch.daemon.rpc.server import P4RuntimeServicer, _write_handler  # noqa: E402
from softswitch.p4runtime import pipeline
from softswitch.p4runtime.arbitration import Connection  # noqa: E402

PHASES = ((p4runtime_pb2.Update.INSERT, "insert"), (p4runtime_pb2.Update.MODIFY, "modify"),
          (p4runtime_pb2.Update.DELETE, "delete"))


def _device(entries: int) -> tuple[Device, int, int]:
    """A device running l3_basic with ``entries`` routes of room, and the table and
    action ids of the routes."""
    source = bench.PROGRAM.read_text().replace("size = 1024;", f"size = {entries};")
    with tempfile.TemporaryDirectory(prefix="p4rt-inproc-") as tmp:
        path = pathlib.Path(tmp) / "l3_basic.p4"
        path.write_text(source)
        compiled = pipeline.compile_file(str(path), {})
    device = Device()
    device.start_with(p4runtime_pb2.ForwardingPipelineConfig(
        p4_device_config=source.encode()), compiled)
    device.start_reclaimer()
    arbitration = p4runtime_pb2.MasterArbitrationUpdate(device_id=0)
    arbitration.election_id.low = 1
    device.arbiter.arbitrate(Connection(send=lambda message: None), arbitration)
    ids = {o.preamble.name: o.preamble.id
           for o in (*compiled.p4info.tables, *compiled.p4info.actions)}
    return device, ids[bench.TABLE], ids[bench.ACTION]


def run(entries: int, batch: int, rounds: int) -> dict[str, float]:
    """µs of thread CPU per entry of each phase (best round), and ``blocks``: the
    allocator blocks per stored entry (0 where the allocator does not count them)."""
    device, table, action = _device(entries)
    routes = [bench._route(table, action, i, 1 + i % 8) for i in range(entries)]
    changed = [bench._route(table, action, i, 9) for i in range(entries)]
    requests = {name: bench._batches(kind, changed if name == "modify" else routes, batch)
                for kind, name in PHASES}
    handler = _write_handler(P4RuntimeServicer(device))
    best: dict[str, float] = {}
    blocks = 0
    try:
        for round_ in range(rounds):
            for _, name in PHASES:
                if round_ == 0 and name == "insert":
                    gc.collect()
                    blocks = sys.getallocatedblocks()
                t0 = time.thread_time()
                for data in requests[name]:
                    ops = unary.UnaryLane._answer(handler, data, None)
                    if len(ops) != 4:          # initial metadata, message, OK, close
                        raise RuntimeError(f"{name}: a Write failed")
                spent = time.thread_time() - t0
                best[name] = min(best.get(name, spent), spent)
                if round_ == 0 and name == "insert":
                    gc.collect()
                    blocks = sys.getallocatedblocks() - blocks
    finally:
        device.stop()
    out = {name: seconds * 1e6 / entries for name, seconds in best.items()}
    out["blocks"] = blocks / entries
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args(argv)
    if not 1 <= args.entries <= 1 << 16 or args.batch < 1 or args.rounds < 1:
        ap.error("--entries 1..65536, --batch and --rounds >= 1")
    figures = run(args.entries, args.batch, args.rounds)
    print(f"P4Runtime Write in process, {args.entries} LPM entries, batches of {args.batch},"
          f" best of {args.rounds} rounds (thread CPU µs per entry):")
    blocks = figures.pop("blocks")
    print("  " + "  ".join(f"{name} {us:.2f}" for name, us in figures.items()))
    if blocks:
        print(f"  allocator blocks per stored entry: {blocks:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
