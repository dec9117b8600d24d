"""The unary lane (Write, Capabilities answered inline from their own completion queue)
answers exactly as grpcio's thread-pool server does, and stops with the server.

Two servers run the same program, one with the lane and one without it (as where
grpcio's internals differ); every request below, good or bad, must get the same code,
message and per-update error details from both.
"""

from __future__ import annotations

import threading
import time

import grpc
import pytest
from p4.v1 import p4runtime_pb2
from programs import P4RT_NAMES, v1model_program

from controlplane.p4rt.client import CHANNEL_OPTIONS
from softswitch.daemon.device import Device
from softswitch.daemon.rpc import serial, unary
from softswitch.daemon.rpc.server import serve
from softswitch.devtools.p4runtime_client import StreamClient
from softswitch.p4runtime import errors, pipeline

PROGRAM = v1model_program(
    types="header eth_t { bit<48> dst; bit<48> src; bit<16> type; }", headers="eth_t eth;",
    extract=["hdr.eth"],
    ingress="""
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table route { key = { hdr.eth.dst: exact; } actions = { fwd; NoAction; } size = 16; }
    apply { route.apply(); }
""",
    emit=["hdr.eth"], names=P4RT_NAMES)


def primary_writer(channel: grpc.Channel) -> tuple[StreamClient, grpc.UnaryUnaryMultiCallable]:
    """Become primary (election id 7) on ``channel``; the stream and a raw Write."""
    stream = StreamClient(channel)
    stream.arbitrate(7)
    stream.next(timeout=10)
    return stream, channel.unary_unary("/p4.v1.P4Runtime/Write")


def answer_of(write: grpc.UnaryUnaryMultiCallable, data: bytes, timeout: float = 10) -> tuple:
    """(code, details, per-update errors) of a Write of these bytes."""
    try:
        write(data, timeout=timeout)
        return (grpc.StatusCode.OK, None, [])
    except grpc.RpcError as exc:
        per_update = [(e.canonical_code, e.message) for e in errors.details_of(exc)]
        return (exc.code(), exc.details(), per_update)


class Target:
    """A device with PROGRAM loaded behind a gRPC server, and a primary client."""

    def __init__(self, program: str, lane: bool, monkeypatch) -> None:
        compiled = pipeline.compile_file(program, {})
        self.device = Device()
        self.device.start_with(p4runtime_pb2.ForwardingPipelineConfig(
            p4_device_config=PROGRAM.encode()), compiled)
        info = compiled.p4info
        self.ids = {o.preamble.name: o.preamble.id for o in (*info.tables, *info.actions)}
        with monkeypatch.context() as m:
            if not lane:
                m.setattr(unary, "attach", lambda *args: None)
            self.server, port = serve(self.device, "127.0.0.1:0")
        assert self.server.laned == lane
        # the controller's options: a big batch's per-update errors fit in its trailers
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=CHANNEL_OPTIONS)
        self.stream, self.write = primary_writer(self.channel)

    def answer(self, data: bytes) -> tuple:
        return answer_of(self.write, data)

    def close(self) -> None:
        self.stream.close()
        self.channel.close()
        self.server.stop(0).wait(10)


@pytest.fixture
def targets(tmp_path, monkeypatch):
    program = tmp_path / "lane.p4"
    program.write_text(PROGRAM)
    made = [Target(str(program), lane, monkeypatch) for lane in (True, False)]
    yield made
    for t in made:
        t.close()


def _requests(ids: dict) -> list[bytes]:
    def entry(dst: int, port: int = 1, width: int = 2) -> p4runtime_pb2.TableEntry:
        te = p4runtime_pb2.TableEntry(table_id=ids["I.route"])
        te.match.add(field_id=1).exact.value = dst.to_bytes(6, "big")
        te.action.action.action_id = ids["I.fwd"]
        te.action.action.params.add(param_id=1, value=port.to_bytes(width, "big"))
        return te

    def request(*updates: tuple[int, p4runtime_pb2.TableEntry], election: int | None = 7,
                device: int = 0, atomicity: int = 0) -> bytes:
        req = p4runtime_pb2.WriteRequest(device_id=device, atomicity=atomicity)
        if election is not None:
            req.election_id.low = election
        for kind, te in updates:
            req.updates.add(type=kind).entity.table_entry.CopyFrom(te)
        return req.SerializeToString()

    ins, mod, dele = (p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY,
                      p4runtime_pb2.Update.DELETE)
    return [request((ins, entry(1)), (ins, entry(2))),
            request((ins, entry(1))),                                   # ALREADY_EXISTS
            request((ins, entry(3)), (ins, entry(4, width=3, port=1 << 16)),
                    (mod, entry(9))),                                   # mixed results
            request((ins, entry(5)), (dele, entry(9)), atomicity=1),    # rolled back
            request((ins, entry(6)), election=3),                       # not primary
            request((ins, entry(6)), election=None),                    # no election id
            request((ins, entry(6)), device=4),                         # unknown device
            request((ins, entry(6)), atomicity=9),                      # bad atomicity
            request(*[(ins, entry(100 + i)) for i in range(20)]),       # table full
            request(*[(dele, entry(100 + i)) for i in range(700)]),     # > INLINE_BYTES
            b"\x22\x05\x08\x01",                                        # truncated update
            b"\xff\xff",                                                # not protobuf
            b"",                                                        # empty request
            request((dele, entry(1)), (dele, entry(2)), (dele, entry(3)))]


def test_lane_answers_as_grpcio_does(targets, monkeypatch):
    laned, pooled = targets
    answered_on: list[tuple[int, str]] = []
    answer = unary.UnaryLane._answer

    def spy(handler, message, deadline):
        answered_on.append((len(message), threading.current_thread().name))
        left.append(deadline - time.time())
        return answer(handler, message, deadline)
    left: list[float] = []
    monkeypatch.setattr(unary.UnaryLane, "_answer", staticmethod(spy))
    requests = _requests(laned.ids)
    for i, data in enumerate(requests):
        assert laned.answer(data) == pooled.answer(data), f"request {i}"
    # the handlers see each call's deadline (answer_of: 10 s), as grpcio's context has it
    assert left and all(8 < s <= 10.5 for s in left), left     # (gRPC rounds it up)
    # small requests on grpcio's polling thread, big ones on the lane's own
    assert {size > unary.INLINE_BYTES for size, _ in answered_on} == {True, False}
    for size, thread in answered_on:
        assert (thread == "p4rt-unary") == (size > unary.INLINE_BYTES), size
    caps = p4runtime_pb2.CapabilitiesRequest().SerializeToString()
    for t in targets:
        got = t.channel.unary_unary("/p4.v1.P4Runtime/Capabilities")(caps, timeout=10)
        assert p4runtime_pb2.CapabilitiesResponse.FromString(got).p4runtime_api_version


def test_lane_stops_with_the_server(targets):
    laned, _ = targets
    lane = laned.server._lane._big._thread
    assert lane.is_alive() and lane.name == "p4rt-unary"
    started = time.monotonic()
    laned.close()
    assert time.monotonic() - started < 5
    lane.join(5)
    assert not lane.is_alive()


def test_lane_frees_a_request_s_garbage_after_its_reply(tmp_path, monkeypatch):
    """The lane keeps what a Write drops (its request, decoded updates, deleted
    entries: reclaim.held) while it answers, and lets it go once the reply is handed to
    gRPC, before the next request: nothing stays between requests, on the polling
    thread (small requests) or the lane's own (big ones)."""
    import contextlib

    from softswitch.memory import reclaim

    class Spy(list):
        """The lane's list; counts what was put in it."""
        appended = 0

        def append(self, item) -> None:
            Spy.appended += 1
            super().append(item)

    spies: list[Spy] = []
    real = reclaim.holding

    @contextlib.contextmanager
    def holding():
        with real() as items:
            spy = Spy()
            spies.append(spy)
            reclaim._later.items = spy
            try:
                yield spy
            finally:
                items.extend(spy)
    monkeypatch.setattr(reclaim, "holding", holding)
    program = tmp_path / "lane.p4"
    program.write_text(PROGRAM)
    laned = Target(str(program), True, monkeypatch)
    try:
        requests = _requests(laned.ids)
        for data in (requests[0], requests[-1]):          # two inserts, then deletes
            before = Spy.appended
            assert laned.answer(data)[0] in (grpc.StatusCode.OK, grpc.StatusCode.UNKNOWN)
            deadline = time.monotonic() + 5
            while any(spies) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert Spy.appended > before and not any(spies)
        records = laned.device.current.runtime.tables._records[laned.ids["I.route"]]
        assert not records
    finally:
        laned.close()


def test_concurrent_small_and_big_requests_all_answered(tmp_path, monkeypatch):
    """Small Writes from four clients (answered on grpcio's polling thread), big ones
    from a fifth (on the lane's thread) and Capabilities calls, all at once: every one
    gets its own answer, and the table ends as the writes leave it."""
    import concurrent.futures

    program = tmp_path / "lane.p4"
    program.write_text(PROGRAM)
    laned = Target(str(program), True, monkeypatch)
    ids = laned.ids

    def entry(dst: int) -> p4runtime_pb2.TableEntry:
        te = p4runtime_pb2.TableEntry(table_id=ids["I.route"])
        te.match.add(field_id=1).exact.value = dst.to_bytes(6, "big")
        te.action.action.action_id = ids["I.fwd"]
        te.action.action.params.add(param_id=1, value=(1).to_bytes(2, "big"))
        return te

    def request(kind: int, *dsts: int) -> bytes:
        req = p4runtime_pb2.WriteRequest(device_id=0)
        req.election_id.low = 7
        for dst in dsts:
            req.updates.add(type=kind).entity.table_entry.CopyFrom(entry(dst))
        return req.SerializeToString()

    ins, dele = p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.DELETE
    big = request(dele, *range(1000, 1700))             # all NOT_FOUND, > INLINE_BYTES
    assert len(big) > unary.INLINE_BYTES

    def small_writer(i: int) -> list:
        return [laned.answer(request(kind, i)) for _ in range(50) for kind in (ins, dele)]

    def big_writer() -> list:
        return [laned.answer(big) for _ in range(4)]

    def capabilities() -> int:
        caps = laned.channel.unary_unary("/p4.v1.P4Runtime/Capabilities")
        data = p4runtime_pb2.CapabilitiesRequest().SerializeToString()
        return sum(bool(caps(data, timeout=10)) for _ in range(100))

    try:
        with concurrent.futures.ThreadPoolExecutor(6) as pool:
            smalls = [pool.submit(small_writer, i) for i in range(1, 5)]
            bigs = pool.submit(big_writer)
            caps = pool.submit(capabilities)
            for f in smalls:
                assert f.result(60) == [(grpc.StatusCode.OK, None, [])] * 100
            for code, _, per_update in bigs.result(60):
                assert code == grpc.StatusCode.UNKNOWN and len(per_update) == 700
                assert {c for c, _ in per_update} == {grpc.StatusCode.NOT_FOUND.value[0]}
            assert caps.result(60) == 100
        records = laned.device.current.runtime.tables._records[ids["I.route"]]
        assert not records
    finally:
        laned.close()


def test_big_requests_past_the_queue_budget_are_refused(tmp_path, monkeypatch):
    """While big requests wait for the lane's thread, one more that would take the bytes
    waiting past QUEUE_BYTES is refused with RESOURCE_EXHAUSTED (clients flooding big
    Writes must not take the host's memory); the one taken is answered as usual."""
    import concurrent.futures

    program = tmp_path / "lane.p4"
    program.write_text(PROGRAM)
    laned = Target(str(program), True, monkeypatch)
    release = threading.Event()
    answer = unary.UnaryLane._answer

    def held(handler, message, deadline):
        if threading.current_thread().name == "p4rt-unary":
            release.wait(10)              # the lane's thread is busy with the first one
        return answer(handler, message, deadline)
    monkeypatch.setattr(unary.UnaryLane, "_answer", staticmethod(held))
    big = max(_requests(laned.ids), key=len)             # 700 deletes, > INLINE_BYTES
    assert len(big) > unary.INLINE_BYTES
    monkeypatch.setattr(serial, "QUEUE_BYTES", len(big) * 3 // 2)
    try:
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            calls = [pool.submit(laned.answer, big) for _ in range(4)]
            refused = []
            for done in concurrent.futures.as_completed(calls, timeout=20):
                code, details, _ = done.result()
                if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
                    refused.append(details)
                if len(refused) == 3:
                    release.set()
            assert len(refused) == 3, refused
            assert all("retry once they are" in d for d in refused)
            taken = [(code, len(errs)) for code, _, errs in (c.result() for c in calls)
                     if code != grpc.StatusCode.RESOURCE_EXHAUSTED]
            assert taken == [(grpc.StatusCode.UNKNOWN, 700)]
        # once answered, its bytes no longer count: the next big one is taken
        assert laned.answer(big)[0] == grpc.StatusCode.UNKNOWN
    finally:
        release.set()
        laned.close()
