"""Table writes leave no reference cycle in the server.

The server freezes what exists after each Write (``runtime._collector_paused``), so any
cycle a write left would wait for a full collection, and the memory reclaimer no longer
runs one after writes (it walked the whole heap, the port loop stopped for up to 460 ms
— see ``softswitch.memory.reclaim``): a cycle per write would be memory lost for
good. So this test drives a real server (in a process of its own, so that the client's
objects do not count) through every kind of write — inserts, modifies and deletes in
batches of 1, 10 and 1000, failed updates, an atomic batch rolled back, a request that
does not parse, a non-plain update, Reads — with the collector off, then asks it for a
full collection: it must find nothing unreachable.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

ROOT = pathlib.Path(__file__).resolve().parents[1]
L3_BASIC = ROOT / "p4src" / "samples" / "l3_basic.p4"
ROUTES = 2000

# The server: l3_basic on a device under serve(), collector off, its heap settled as
# softswitch run settles it; prints its port and P4Info ids, then, per line on stdin,
# how many unreachable objects a full collection finds (of the frozen heap too).
SERVER = textwrap.dedent("""
    import gc, json, sys
    from p4.v1 import p4runtime_pb2
    from softswitch.p4runtime import pipeline
    from softswitch.daemon.rpc import server
    from softswitch.daemon.device import Device
    from softswitch.daemon.ports import realtime

    program = sys.argv[1]
    compiled = pipeline.compile_file(program, {})
    device = Device()
    device.start_with(p4runtime_pb2.ForwardingPipelineConfig(
        p4_device_config=open(program, "rb").read()), compiled)
    srv, port = server.serve(device, "127.0.0.1:0")
    realtime.settle()
    gc.disable()
    info = compiled.p4info
    ids = {o.preamble.name.rsplit(".", 1)[-1]: o.preamble.id
           for o in (*info.tables, *info.actions)}
    print(json.dumps({"port": port, "ids": ids}), flush=True)
    for _line in sys.stdin:
        gc.unfreeze()
        found = gc.collect()
        gc.freeze()
        print(found, flush=True)
    srv.stop(1).wait()
""")


def _route(ids: dict[str, int], i: int, port: int = 1) -> p4runtime_pb2.TableEntry:
    te = p4runtime_pb2.TableEntry(table_id=ids["ipv4_lpm"])
    fm = te.match.add(field_id=1)
    fm.lpm.value = (0x0A000000 | (i << 8)).to_bytes(4, "big")
    fm.lpm.prefix_len = 24
    te.action.action.action_id = ids["set_next_hop"]
    for pid, value in ((1, port.to_bytes(2, "big")), (2, b"\x02\0\0\0\0\x01"),
                       (3, i.to_bytes(6, "big"))):
        te.action.action.params.add(param_id=pid, value=value)
    return te


def _request(updates: list[tuple[int, p4runtime_pb2.TableEntry]],
             atomicity: int = p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR) -> bytes:
    req = p4runtime_pb2.WriteRequest(device_id=0, atomicity=atomicity)
    req.election_id.low = 1
    for kind, entry in updates:
        req.updates.add(type=kind).entity.table_entry.CopyFrom(entry)
    return req.SerializeToString()


def _every_kind_of_write(port: int, ids: dict[str, int]) -> tuple[int, int]:
    """The writes of the module doc: (Writes accepted, Writes refused)."""
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    write = channel.unary_unary("/p4.v1.P4Runtime/Write")
    arbitration = p4runtime_pb2.StreamMessageRequest()
    arbitration.arbitration.device_id = 0
    arbitration.arbitration.election_id.low = 1
    over = threading.Event()

    def messages() -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        yield arbitration
        over.wait()                    # the stream (mastership) stays open until then

    stream = stub.StreamChannel(messages())
    assert next(stream).arbitration.status.code == 0
    routes = [_route(ids, i) for i in range(ROUTES)]
    moved = [_route(ids, i, port=2) for i in range(ROUTES)]
    U = p4runtime_pb2.Update
    requests = []
    for batch in (1, 10, 1000):
        for kind, entries in ((U.INSERT, routes), (U.MODIFY, moved), (U.INSERT, routes),
                              (U.DELETE, routes), (U.DELETE, routes)):
            requests += [_request([(kind, e) for e in entries[i:i + batch]])
                         for i in range(0, ROUTES, batch)]
    rolled_back = [(U.INSERT, e) for e in routes[:50]] + [(U.DELETE, routes[60])]
    requests.append(_request(rolled_back, p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR))
    odd = _route(ids, 7)
    odd.match[0].field_id = 99                    # not plain: parsed, then refused
    requests += [_request([(U.INSERT, odd)]), b"\x0a\xff not a request"]
    accepted = refused = 0
    for data in requests:
        try:
            write(data, timeout=30)
            accepted += 1
        except grpc.RpcError:
            refused += 1
    read = p4runtime_pb2.ReadRequest(device_id=0)
    read.entities.add().table_entry.table_id = ids["ipv4_lpm"]
    for _ in range(3):
        list(stub.Read(read, timeout=30))
    over.set()
    channel.close()
    return accepted, refused


def test_writes_leave_no_cycle_in_the_server(tmp_path):
    program = tmp_path / "l3_basic.p4"
    program.write_text(L3_BASIC.read_text().replace("size = 1024;", "size = 4096;"))
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(program)], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdin is not None
        hello = server.stdout.readline()
        assert hello, server.stderr.read() if server.stderr else ""
        started = json.loads(hello)
        server.stdin.write("\n")
        server.stdin.flush()
        assert int(server.stdout.readline()) >= 0        # what start-up left, if any
        accepted, refused = _every_kind_of_write(started["port"], started["ids"])
        assert accepted > 3000 and refused > 2000
        server.stdin.write("\n")
        server.stdin.flush()
        assert int(server.stdout.readline()) == 0
    finally:
        server.kill()
        server.wait()
