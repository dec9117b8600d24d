"""``softswitch run -- --p4runtime-process``: P4Runtime served by a front end process.

The front end answers every request as the in-process server does (Writes over the
link to the port loop, the rest passed through), ends with the switch, and takes the
switch down with it if it dies; the link refuses what is not a frame without stopping
the loop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2
from test_ingress_priority import running_priority_plane, urgent_and_bulk, wait_for
from test_p4runtime_unary_lane import PROGRAM, Target, _requests, answer_of, primary_writer

from controlplane.p4rt.client import CHANNEL_OPTIONS
from softswitch.daemon.main import parse_args
from softswitch.daemon.ports import batchio
from softswitch.daemon.ports.loop_calls import LoopCalls
from softswitch.daemon.process import link
from softswitch.daemon.process import writes as process_writes
from softswitch.daemon.process.link import LinkError, Reply
from softswitch.daemon.process.writes import LoopWrites
from softswitch.local_port import free_port


class LiveSwitch:
    """``softswitch run PROGRAM -- --p4runtime-process`` and a primary client."""

    def __init__(self, program: Path) -> None:
        self.address = f"127.0.0.1:{free_port()}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "softswitch", "run", str(program), "--",
             "--grpc-server-addr", self.address, "--p4runtime-process"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.channel = grpc.insecure_channel(self.address, options=CHANNEL_OPTIONS)
        ready = grpc.channel_ready_future(self.channel)
        try:
            deadline = time.monotonic() + 60
            while True:
                assert self.proc.poll() is None, self.proc.communicate()
                try:
                    ready.result(timeout=0.5)
                    break
                except grpc.FutureTimeoutError:
                    assert time.monotonic() < deadline, "the front end did not come up"
        finally:
            ready.cancel()
        self.stream, self.write = primary_writer(self.channel)

    def answer(self, data: bytes) -> tuple:
        return answer_of(self.write, data, timeout=20)

    def frontend_pid(self) -> int:
        children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text()
        pids = [int(p) for p in children.split()]
        assert len(pids) == 1, pids
        return pids[0]

    def stop(self) -> str:
        self.stream.close()
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.communicate(timeout=30)[1]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def program(tmp_path):
    path = tmp_path / "frontend.p4"
    path.write_text(PROGRAM)
    return path


def _read_all(channel: grpc.Channel, table_id: int) -> list[bytes]:
    request = p4runtime_pb2.ReadRequest(device_id=0)
    request.entities.add().table_entry.table_id = table_id
    read = channel.unary_stream("/p4.v1.P4Runtime/Read")
    return sorted(entity.SerializeToString(deterministic=True)
                  for data in read(request.SerializeToString(), timeout=10)
                  for entity in p4runtime_pb2.ReadResponse.FromString(data).entities)


def test_front_end_answers_as_the_in_process_server(program, monkeypatch):
    """Every Write of the unary lane's test (errors per update, atomic rollback, not
    primary, no election id, table full, > INLINE_BYTES, not protobuf, empty), then
    Capabilities, Read and GetForwardingPipelineConfig: the same answers, live."""
    local = Target(str(program), True, monkeypatch)
    live = LiveSwitch(program)
    try:
        for i, data in enumerate(_requests(local.ids)):
            assert live.answer(data) == local.answer(data), f"request {i}"
        table = local.ids["I.route"]
        assert _read_all(live.channel, table) == _read_all(local.channel, table)
        caps = p4runtime_pb2.CapabilitiesRequest().SerializeToString()
        got = live.channel.unary_unary("/p4.v1.P4Runtime/Capabilities")(caps, timeout=10)
        assert p4runtime_pb2.CapabilitiesResponse.FromString(got).p4runtime_api_version
        get = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=0)
        config = p4runtime_pb2.GetForwardingPipelineConfigResponse.FromString(
            live.channel.unary_unary("/p4.v1.P4Runtime/GetForwardingPipelineConfig")(
                get.SerializeToString(), timeout=10)).config
        assert {t.preamble.name for t in config.p4info.tables} == {"I.route"}
        with pytest.raises(grpc.RpcError) as refused:      # a passed-through error
            live.channel.unary_unary("/p4.v1.P4Runtime/GetForwardingPipelineConfig")(
                p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=9)
                .SerializeToString(), timeout=10)
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND
        frontend = live.frontend_pid()
        err = live.stop()
    finally:
        live.kill()
        local.close()
    assert live.proc.returncode == 0, err
    deadline = time.monotonic() + 10
    while Path(f"/proc/{frontend}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{frontend}").exists(), "the front end outlived the switch"


def test_switch_stops_when_its_front_end_dies(program):
    live = LiveSwitch(program)
    try:
        os.kill(live.frontend_pid(), signal.SIGKILL)
        err = live.proc.communicate(timeout=30)[1]
    finally:
        live.kill()
    assert "P4Runtime front end exited" in err, err
    assert "Traceback" not in err, err


def test_option_parses():
    assert parse_args(["--no-p4", "--", "--p4runtime-process"]).p4runtime_process
    assert not parse_args(["--no-p4"]).p4runtime_process


class _Loop:
    """The port loop's watch, run by hand."""

    def __init__(self) -> None:
        self.ready: dict[int, object] = {}
        self.calls = LoopCalls()

    def watch(self, fd, ready, lost) -> bool:
        self.ready[fd] = ready
        return True

    def unwatch(self, fd) -> None:
        self.ready.pop(fd, None)

    def turn(self) -> None:
        for ready in list(self.ready.values()):
            ready()


def _behave(request: bytes, context) -> bytes:
    if request == b"fail":
        context.set_trailing_metadata((("grpc-status-details-bin", b"\x08\x05"),))
        context.abort(grpc.StatusCode.NOT_FOUND, "no such entry")
    return request[::-1]


def _link(tmp_path, limit: int = 1 << 20) -> tuple[LoopWrites, _Loop]:
    handlers = {link.WRITE: (lambda data: data, _behave, lambda out: out)}
    writes = LoopWrites(str(tmp_path / "link.sock"), handlers, limit)
    loop = _Loop()
    writes.attach(loop)
    return writes, loop


def _client(writes: LoopWrites, loop: _Loop) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(writes.path)
    sock.settimeout(10)
    loop.turn()                                   # accepted
    return sock


def _exchange(sock: socket.socket, loop: _Loop, method: int, data: bytes) -> Reply:
    sock.sendall(link.frame(bytes([method]) + data))
    time.sleep(0.05)
    loop.turn()
    buffer = bytearray()
    while (body := link.take_frame(buffer, 1 << 20)) is None:
        buffer += sock.recv(1 << 16)
    return Reply.decode(body)


def test_link_answers_refuses_and_survives_bad_frames(tmp_path):
    writes, loop = _link(tmp_path, limit=64 << 10)
    try:
        sock = _client(writes, loop)
        assert _exchange(sock, loop, link.WRITE, b"abc") == Reply(0, "", (), b"cba")
        failed = _exchange(sock, loop, link.WRITE, b"fail")
        assert (failed.code, failed.details) == (grpc.StatusCode.NOT_FOUND.value[0],
                                                 "no such entry")
        assert failed.trailing == (("grpc-status-details-bin", b"\x08\x05"),)
        other = _exchange(sock, loop, 77, b"x")
        assert other.code == grpc.StatusCode.UNIMPLEMENTED.value[0]
        big = bytes(range(256)) * 100                      # > INLINE_BYTES: its thread
        assert _exchange(sock, loop, link.WRITE, big).response == big[::-1]
        # a frame past the limit, then an empty one: each ends its connection only
        for bad in (b"\x00\x10\x00\x00", b"\x00\x00\x00\x00"):
            sock.sendall(bad)
            time.sleep(0.05)
            loop.turn()
            assert sock.recv(16) == b""                    # closed by the switch
            sock.close()
            sock = _client(writes, loop)
        assert _exchange(sock, loop, link.WRITE, b"ok").response == b"ko"
        sock.close()
    finally:
        writes.close()
    assert not os.path.exists(writes.path)


def test_reply_frames_round_trip_and_bad_ones_are_refused():
    reply = Reply(6, "déjà là", (("a", b"\x00\x01"), ("b-bin", b"")), b"\x10\x20")
    buffer = bytearray(reply.encode() + b"\x00\x00")
    body = link.take_frame(buffer, 1 << 10)
    assert body is not None and Reply.decode(body) == reply and buffer == b"\x00\x00"
    with pytest.raises(LinkError):
        link.take_frame(bytearray(b"\x00\x00\x10\x00" + b"x" * 10), 1 << 10)
    with pytest.raises(LinkError):
        Reply.decode(b"\x06\x00\x00\x00\x09ab")


def test_stale_socket_directories_are_swept(tmp_path, monkeypatch):
    """A switch killed while it started leaves its sockets' directory; the next one
    removes it (its pid is gone), and leaves a running switch's alone."""
    import tempfile

    from softswitch.daemon.process import host

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{host.RUNDIR_PREFIX}{dead.pid}-abc"
    live = tmp_path / f"{host.RUNDIR_PREFIX}{os.getpid()}-def"
    other = tmp_path / "softswitch-p4rt-notapid"
    for path in (stale, live, other):
        path.mkdir()
        (path / "link.sock").write_text("")
    host._sweep_stale()
    assert not stale.exists() and live.exists() and other.exists()


def test_an_address_in_use_is_a_clean_error():
    """The front end cannot listen: one error line, exit 1, nothing left behind."""
    import glob

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    address = f"127.0.0.1:{taken.getsockname()[1]}"
    before = set(glob.glob("/tmp/softswitch-p4rt-*"))
    try:
        done = subprocess.run([sys.executable, "-m", "softswitch", "run", "--no-p4", "--",
                               "--grpc-server-addr", address, "--p4runtime-process"],
                              capture_output=True, text=True, timeout=60)
    finally:
        taken.close()
    assert done.returncode == 1, done.stderr
    assert f"cannot listen on {address}" in done.stderr and "Traceback" not in done.stderr
    assert "internal" not in done.stderr, done.stderr
    assert set(glob.glob("/tmp/softswitch-p4rt-*")) <= before


def test_front_end_ends_cleanly_on_sigterm(tmp_path):
    """SIGTERM (the switch stopping it, or PR_SET_PDEATHSIG) ends the front end at once
    and cleanly. (It used to set an Event from a signal handler, which deadlocks when the
    signal lands while the main thread holds that Event's lock: seen once, a front end
    living on for an hour; a race this test does not reproduce on demand.)"""
    proc = subprocess.Popen(
        [sys.executable, "-m", "softswitch.daemon.process.service", "--listen",
         f"127.0.0.1:{free_port()}", "--switch-grpc", f"unix:{tmp_path}/grpc.sock",
         "--link", str(tmp_path / "link.sock"), "--max-request-bytes", "4096"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("ready ")
        time.sleep(0.2)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() - started < 3
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_write_checkpoints_sit_outside_the_device_lock(program, monkeypatch):
    """A Write on the general path offers the port loop two checkpoints
    (Device.checkpoint): before it takes the device lock and after it lets go, where the
    switch's state is whole. A small one (p4runtime.write's shortcut: up to 16 plain entries) is
    applied in one hold, without any."""
    local = Target(str(program), True, monkeypatch)
    held: list[bool] = []
    local.device.checkpoint = lambda: held.append(local.device.lock._is_owned())  # noqa: SLF001
    try:
        assert local.answer(_requests(local.ids)[0])[0] == grpc.StatusCode.OK
        assert held == []
        assert local.answer(_requests(local.ids)[8])[0] == grpc.StatusCode.UNKNOWN  # table full
    finally:
        local.close()
    assert held == [False, False]


def test_a_write_the_loop_answers_lets_urgent_frames_through_at_its_checkpoints(
        tmp_path, monkeypatch):
    """A Write from the front end runs on the port loop; at its checkpoints the loop
    forwards the urgent frames that came meanwhile, and only those (the others wait
    for the Write to end), as for a runtime-channel command; the last checkpoint comes
    once the reply is ready, before it is sent."""
    if batchio.native() is None:
        pytest.skip("batchio is not built here")
    if os.geteuid() != 0:
        pytest.skip("needs root for veth/AF_PACKET")
    urgent, bulk = urgent_and_bulk()
    late = urgent[:-1] + bytes([urgent[-1] ^ 0xFF])     # another urgent frame
    holder: list[LoopWrites] = []
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        with running_priority_plane("fw") as (plane, tx, got):
            def write(request: bytes, context) -> bytes:
                assert tx.send(bulk) and tx.send(urgent)
                time.sleep(0.05)                        # both wait in the kernel now
                before = len(got)
                plane.calls.checkpoint()                # as Device.checkpoint does
                answer = b"|".join(got[before:])
                assert tx.send(late)                    # after the Write's last checkpoint
                time.sleep(0.05)
                return answer

            writes = LoopWrites(str(tmp_path / "link.sock"),
                                {link.WRITE: (lambda d: d, write, lambda o: o)},
                                1 << 20)
            holder.append(writes)
            send_now = process_writes._Connection._send_now   # noqa: SLF001

            def noted(conn, reply: Reply) -> None:          # on the loop, as the frames
                got.append(b"the reply")
                send_now(conn, reply)
            monkeypatch.setattr(process_writes._Connection, "_send_now", noted)  # noqa: SLF001
            plane.calls.call(lambda: writes.attach(plane))      # on the loop's thread
            sock.connect(writes.path)
            sock.settimeout(10)
            sock.sendall(link.frame(bytes([link.WRITE]) + b"w"))
            buffer = bytearray()
            while (body := link.take_frame(buffer, 1 << 20)) is None:
                buffer += sock.recv(1 << 16)
            wait_for(got, 4)
    finally:                                # once the loop has stopped
        sock.close()
        for writes in holder:
            writes.close()
    assert Reply.decode(body).response == urgent, "the checkpoint forwarded the urgent frame"
    assert got == [urgent, late, b"the reply", bulk]



def test_a_write_the_loop_answers_is_applied_a_slice_at_a_time(program, monkeypatch):
    """Where the port loop answers a CONTINUE_ON_ERROR Write (Device.checkpointing), it
    is applied LOOP_WRITE_SLICE updates per hold of the device lock, a checkpoint after
    each, with the same per-update results; other Writes in one hold. A pipeline set
    between two slices ends the batch: the updates after it are ABORTED, and none goes
    to the new pipeline."""
    from softswitch.p4runtime import pipeline
    from softswitch.p4runtime import write as entrance

    local = Target(str(program), True, monkeypatch)
    # the general way's slices: small Writes take the shortcut, in one hold
    # (test_write_checkpoints_sit_outside_the_device_lock, test_p4runtime_small_writes)
    monkeypatch.setattr(entrance, "SMALL_UPDATES", 0)

    def write(keys: range, kind: int = p4runtime_pb2.Update.INSERT,
              atomicity: int = 0) -> bytes:
        req = p4runtime_pb2.WriteRequest(device_id=0, atomicity=atomicity)
        req.election_id.low = 7
        for key in keys:
            te = req.updates.add(type=kind).entity.table_entry
            te.table_id = local.ids["I.route"]
            te.match.add(field_id=1).exact.value = key.to_bytes(6, "big")
            te.action.action.action_id = local.ids["I.fwd"]
            te.action.action.params.add(param_id=1, value=(1).to_bytes(2, "big"))
        return req.SerializeToString()

    def codes(data: bytes) -> list[int]:
        code, _, per_update = local.answer(data)
        return [c for c, _ in per_update] if code != grpc.StatusCode.OK else []

    device, held = local.device, []
    device.checkpoint = lambda: held.append(1)
    try:
        assert entrance.LOOP_WRITE_SLICE == 4
        device.checkpointing = lambda: True
        assert codes(write(range(3))) == []
        assert len(held) == 2                        # before, and after its one slice
        held.clear()
        # the table holds 16: 3 ALREADY_EXISTS, 13 in, 4 RESOURCE_EXHAUSTED
        assert codes(write(range(20))) == [6] * 3 + [0] * 13 + [8] * 4
        assert len(held) == 1 + 5                    # before, and after each slice
        held.clear()
        assert codes(write(range(20, 26), atomicity=1)) == [8] + [10] * 5
        assert len(held) == 2                        # atomic: one hold
        held.clear()
        device.checkpointing = lambda: False
        assert codes(write(range(30, 36))) == [8] * 6
        assert len(held) == 2                        # not answered on the loop
        device.checkpointing = lambda: True
        held.clear()
        old = device.current
        assert old is not None
        new = device._wrap(old.config, pipeline.compile_file(str(program), {}))  # noqa: SLF001

        def set_pipeline_after_the_first_slice() -> None:
            held.append(1)
            if len(held) == 2:
                device.current = new
        device.checkpoint = set_pipeline_after_the_first_slice
        assert codes(write(range(9), p4runtime_pb2.Update.DELETE)) == [0] * 4 + [10] * 5
        assert not list(new.runtime.read_wire([p4runtime_pb2.Entity(
            table_entry=p4runtime_pb2.TableEntry())]))
    finally:
        local.close()


def test_front_end_lane_handlers_answer_over_the_link_within_the_deadline(tmp_path):
    """The front end's Write on the unary lane (grpcio's polling thread, no pool): the
    link's reply is the call's answer, its trailing metadata kept; a switch that does
    not answer within the call's deadline (the lane's context carries it) ends the call
    DEADLINE_EXCEEDED instead of holding the polling thread."""
    from softswitch.daemon.process.service import Frontend
    from softswitch.daemon.rpc.unary import run_handler

    path = str(tmp_path / "link")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    replies = [Reply(0, trailing=(("x-k", b"v"),), response=b"\x08\x01"), None]

    def serve() -> None:
        conn, _ = listener.accept()
        buffer = bytearray()
        with conn:
            for reply in replies:
                while link.take_frame(buffer, 1 << 20) is None:
                    buffer += conn.recv(1 << 16)
                if reply is None:
                    time.sleep(1.5)           # later than the second call's deadline
                    return
                conn.sendall(reply.encode())

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    frontend = Frontend("127.0.0.1:1", path, 1 << 20)
    write = frontend.lane_handlers()["/p4.v1.P4Runtime/Write"]
    try:
        response, code, _details, trailing = run_handler(write, b"\x08\x00",
                                                         time.time() + 10)
        assert (response, code, trailing) == (b"\x08\x01", grpc.StatusCode.OK,
                                              (("x-k", b"v"),))
        began = time.monotonic()
        response, code, _details, _ = run_handler(write, b"\x08\x00", time.time() + 0.3)
        assert (response, code) == (None, grpc.StatusCode.DEADLINE_EXCEEDED)
        assert time.monotonic() - began < 1.2
    finally:
        frontend.close()
        server.join(5)
        listener.close()
