"""Idle timeouts in real time, as ``simple_switch_grpc`` keeps them, on both targets.

One scenario runs against real BMv2 and against ``softswitch run`` (C fast path and
interpreter): an entry with a 1 s idle timeout, read back (``time_since_last_hit``)
before any packet, hit by two PacketOuts, read back again while idle, then watched.
BMv2 sweeps every second, reports an entry idle for its timeout unless the previous
sweep reported it, and PI sends 0.1 s later: the first notification comes 1.1-2.1 s
after the last hit and repeats every 2 s; ``time_since_last_hit`` reads the time since
the hit (or insert), at most the timeout. Each target must show that timing; softswitch
must also be within 1 s of BMv2's first notification and within 10% of its idle reads.
Unit tests: a switch that keeps idle time in real time measures it on the wall clock
while its own clock stands still at a packet's arrival (as ``QueuedSwitch`` freezes it).
"""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from bmv2_process import compile_bmv2, start_bmv2, wait_for_port
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch.core.control import KeyMatch
from softswitch.devtools.p4runtime_client import StreamClient
from softswitch.local_port import free_port

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }
struct headers_t { ethernet_t eth; }
struct meta_t { }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.eth); transition accept; }
}
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    table watched {
        key = { h.eth.dst : exact; }
        actions = { drop; NoAction; }
        default_action = NoAction();
        support_timeout = true;
    }
    apply { watched.apply(); mark_to_drop(sm); }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
TIMEOUT_S = 1.0
DST = bytes(5) + b"\x01"
FRAME = DST + bytes(5) + b"\x02" + b"\x88\xb5" + bytes(46)
WATCH_S = 4.4            # after the last hit: the first notification and one repeat
SWEEP_S, BUFFER_S = 1.0, 0.1      # BMv2's ageing sweep, PI's notification buffering


@dataclass
class Observed:
    """What the scenario saw on one target (seconds)."""

    idle_reads: list[tuple[float, float]] = field(default_factory=list)  # (read, elapsed)
    notified: list[float] = field(default_factory=list)   # after the last hit
    entries: list[p4runtime_pb2.TableEntry] = field(default_factory=list)


def _source(tmp: Path) -> Path:
    path = tmp / "idle.p4"
    path.write_text(PROGRAM)
    return path


def _session(address: str, device_id: int, p4info: p4info_pb2.P4Info,
             device_config: bytes) -> tuple[p4runtime_pb2_grpc.P4RuntimeStub, StreamClient]:
    channel = grpc.insecure_channel(address)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    stream = StreamClient(channel)
    stream.arbitrate(1, device_id)
    assert stream.next(timeout=10).arbitration.status.code == 0
    request = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=device_id, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.
        VERIFY_AND_COMMIT)
    request.election_id.low = 1
    request.config.p4info.CopyFrom(p4info)
    request.config.p4_device_config = device_config
    stub.SetForwardingPipelineConfig(request, timeout=60)
    return stub, stream


def _entry(p4info: p4info_pb2.P4Info) -> tuple[p4runtime_pb2.TableEntry, int]:
    table = next(t for t in p4info.tables if t.preamble.name.endswith("watched"))
    action = next(a for a in p4info.actions if a.preamble.name.endswith("drop"))
    entry = p4runtime_pb2.TableEntry(table_id=table.preamble.id,
                                     idle_timeout_ns=int(TIMEOUT_S * 1e9))
    entry.match.add(field_id=1).exact.value = b"\x01"
    return entry, action.preamble.id


class Notifications:
    """Idle-timeout notifications off a stream, each with the time it arrived."""

    def __init__(self, stream: StreamClient) -> None:
        self.arrived: list[tuple[float, p4runtime_pb2.IdleTimeoutNotification]] = []
        self._stream = stream
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while not self._done.is_set():
            try:
                message = self._stream.next(timeout=0.05)
            except queue.Empty:
                continue
            if isinstance(message, p4runtime_pb2.StreamMessageResponse) and \
                    message.HasField("idle_timeout_notification"):
                self.arrived.append((time.monotonic(), message.idle_timeout_notification))

    def stop(self) -> None:
        self._done.set()
        self._thread.join(5)


def run_scenario(address: str, device_id: int, p4info: p4info_pb2.P4Info,
                 device_config: bytes) -> Observed:
    stub, stream = _session(address, device_id, p4info, device_config)
    notifications = Notifications(stream)
    seen = Observed()
    try:
        entry, action_id = _entry(p4info)
        written = p4runtime_pb2.TableEntry()
        written.CopyFrom(entry)
        written.action.action.action_id = action_id
        write = p4runtime_pb2.WriteRequest(device_id=device_id)
        write.election_id.low = 1
        write.updates.add(type=p4runtime_pb2.Update.INSERT).entity.table_entry.CopyFrom(
            written)
        stub.Write(write, timeout=10)
        inserted = time.monotonic()
        read = p4runtime_pb2.ReadRequest(device_id=device_id)
        query = read.entities.add().table_entry
        query.CopyFrom(entry)
        query.ClearField("idle_timeout_ns")
        query.time_since_last_hit.SetInParent()

        def idle_read(since: float) -> None:
            (reply,) = stub.Read(read, timeout=10)
            got = reply.entities[0].table_entry.time_since_last_hit.elapsed_ns / 1e9
            seen.idle_reads.append((got, time.monotonic() - since))

        time.sleep(0.4)
        idle_read(inserted)                          # never hit: since the insert
        for _ in range(2):
            packet = p4runtime_pb2.PacketOut(payload=FRAME)
            stream.send(p4runtime_pb2.StreamMessageRequest(packet=packet))
            last = time.monotonic()
            time.sleep(0.3)
        time.sleep(0.2)
        idle_read(last)                              # 0.5 s after the last hit
        time.sleep(1.0)
        idle_read(last)                              # 1.5 s: idle past the timeout
        time.sleep(max(0.0, last + WATCH_S - time.monotonic()))
    finally:
        notifications.stop()
        stream.close()
    for at, notification in notifications.arrived:
        seen.notified.append(at - last)
        seen.entries.extend(notification.table_entry)
    return seen


def check_bmv2_timing(seen: Observed) -> None:
    """BMv2's behaviour: reported within a sweep (plus buffering) of the timeout, every
    two sweeps after; idle reads within 10% of the time since the hit (or insert)
    while that is under the timeout."""
    assert len(seen.notified) >= 2, seen
    first, second = seen.notified[:2]
    assert TIMEOUT_S <= first <= TIMEOUT_S + SWEEP_S + BUFFER_S + 0.15, seen
    assert abs(second - first - 2 * SWEEP_S) <= 0.15, seen
    for got, elapsed in seen.idle_reads[:2]:         # before the timeout
        assert abs(got - elapsed) <= 0.1 * elapsed + 0.02, seen.idle_reads
    for entry in seen.entries:
        assert entry.match[0].exact.value == b"\x01"
        assert entry.idle_timeout_ns == int(TIMEOUT_S * 1e9)
        assert not entry.HasField("action")          # PI leaves the action out


# --- the targets --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bmv2_seen(reference_tools, tmp_path_factory) -> Observed:
    tmp = tmp_path_factory.mktemp("idle-bmv2")
    json_path, p4info_path = compile_bmv2(reference_tools, _source(tmp), tmp)
    p4info = text_format.Parse(p4info_path.read_text(), p4info_pb2.P4Info())
    switch = start_bmv2(reference_tools, tmp)
    try:
        return run_scenario(switch.address, switch.device_id, p4info,
                            json_path.read_bytes())
    finally:
        switch.stop()


@pytest.fixture(scope="module", params=["require", "off"], ids=["c", "interpreter"])
def softswitch_seen(request, tmp_path_factory) -> Observed:
    """``softswitch run`` with the C fast path (``require``) or the interpreter."""
    from softswitch.frontend.compiler import compile_program
    from softswitch.p4info import generate
    from softswitch.p4runtime.pipeline import make_artifact

    source = _source(tmp_path_factory.mktemp("idle-softswitch"))
    port = free_port()
    address = f"127.0.0.1:{port}"
    env = {**os.environ, "SOFTSWITCH_FASTPATH": request.param}
    proc = subprocess.Popen([sys.executable, "-m", "softswitch", "run", "--no-p4",
                             "--device-id", "5", "--", "--grpc-server-addr", address,
                             "--cpu-port", "255"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, proc)
        return run_scenario(address, 5, generate(compile_program(str(source))),
                            make_artifact(str(source)).to_bytes())
    finally:
        proc.terminate()
        proc.communicate(timeout=15)


def test_bmv2_idle_timeouts(bmv2_seen):
    check_bmv2_timing(bmv2_seen)


def test_softswitch_idle_timeouts(softswitch_seen):
    check_bmv2_timing(softswitch_seen)


def test_softswitch_as_bmv2(bmv2_seen, softswitch_seen):
    assert abs(softswitch_seen.notified[0] - bmv2_seen.notified[0]) <= 1.0
    for (ours, _), (theirs, _) in zip(softswitch_seen.idle_reads[:2],
                                      bmv2_seen.idle_reads[:2], strict=True):
        assert abs(ours - theirs) <= 0.1 * theirs, (softswitch_seen, bmv2_seen)


def check_read_capped(seen: Observed) -> None:
    """PI reports ``time_since_last_hit`` as at most the entry's idle timeout."""
    got, elapsed = seen.idle_reads[2]
    assert elapsed > TIMEOUT_S + 0.3 and abs(got - TIMEOUT_S) <= 0.01, seen.idle_reads


def test_bmv2_read_capped_at_the_timeout(bmv2_seen):
    check_read_capped(bmv2_seen)


def test_softswitch_read_capped_at_the_timeout(softswitch_seen):
    check_read_capped(softswitch_seen)


# --- units: the wall clock while the switch clock stands still ----------------------------
@pytest.mark.parametrize("fastpath", ["require", "off"])
def test_idle_time_grows_while_the_switch_clock_stands_still(tmp_path, fastpath):
    from softswitch.frontend.compiler import compile_program
    from softswitch.v1model.fast_switch import load_switch

    switch = load_switch(compile_program(str(_source(tmp_path))), fastpath=fastpath)

    def idle_us(handle: int) -> int:
        return switch.entry_idle_us("I.watched", handle)

    hit = switch.table_add("I.watched", [KeyMatch("h.eth.dst", "exact", 1)], "I.drop", [])
    switch.clock.freeze(10**12)          # a packet's time, on a clock of another origin
    switch.inject(0, FRAME)              # the hit is stamped with it: past the wall clock
    switch.idle_in_real_time()           # ... and brought back to now
    assert idle_us(hit) < 20_000
    idle = switch.table_add("I.watched", [KeyMatch("h.eth.dst", "exact", 2)], "I.drop", [])
    time.sleep(0.05)                     # the switch clock stays frozen meanwhile
    assert 50_000 <= idle_us(hit) < 1_000_000
    assert 50_000 <= idle_us(idle) < 1_000_000      # never hit: since the insert
    switch.inject(0, FRAME)              # a hit under the frozen clock
    assert idle_us(hit) < 20_000 and idle_us(idle) >= 50_000


def test_pna_learned_entry_expires_in_real_time():
    """A PNA NIC kept in real time (the daemon's ``keep_real_time``) expires a learned
    entry by the wall clock while its own clock stands still."""
    from test_pna_samples import HOST, _flow_id, _nic, _udp

    from softswitch.daemon.idle_timeouts import keep_real_time

    nic = _nic("pna_learn.p4")                # its clock frozen at 0
    keep_real_time(nic)
    nic.set_expire_profile(1, 30_000)
    flow = _udp(src="10.0.0.1", tos=1 << 2)
    assert _flow_id(nic.inject(HOST, flow)) == 1        # learned
    assert _flow_id(nic.inject(HOST, flow)) == 1        # hit
    time.sleep(0.05)
    assert _flow_id(nic.inject(HOST, flow)) == 2        # expired, learned again
