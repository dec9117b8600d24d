"""``softswitch run`` queues like simple_switch: strict priority and per-queue rate limits
on a rate-limited port, configured over the runtime channel (``--thrift-port``)."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from programs import QUEUEING_NAMES, v1model_program

from softswitch import local_port
from softswitch.daemon.ports.afpacket import RawPort
from softswitch.daemon.ports.veth import veth_pairs
from softswitch.local_port import free_port

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for veth/AF_PACKET")

# Every frame goes out of port 1 in the queue named by the low 3 bits of its source MAC.
PROGRAM = v1model_program(
    types="header eth_t { bit<48> dst; bit<48> src; bit<16> type; }", headers="eth_t eth;",
    extract=["h.eth"],
    ingress="""
    apply { sm.egress_spec = 1; sm.priority = h.eth.src[2:0]; }
""",
    emit=["h.eth"], names=QUEUEING_NAMES)
ETHERTYPE = 0x88B5  # IEEE local experimental: nothing else on the veths uses it


def wait_for_port(port: int, proc: subprocess.Popen, seconds: float = 60) -> None:
    why = local_port.await_listening(port, seconds, proc)
    assert why != "exited", proc.communicate()
    assert why is None, f"port {port} did not open"


def frame(prio: int, seq: int) -> bytes:
    return bytes(6) + bytes([2, 0, 0, 0, seq, prio]) + ETHERTYPE.to_bytes(2, "big") \
        + bytes(46)


def _arrivals(rx: RawPort, count: int, seconds: float = 5) -> list[tuple[float, bytes]]:
    """Up to ``count`` test frames from ``rx`` within ``seconds``, with when each came."""
    arrivals: list[tuple[float, bytes]] = []
    deadline = time.monotonic() + seconds
    while len(arrivals) < count and time.monotonic() < deadline:
        got = rx.receive()
        if got is None:
            time.sleep(0.001)
        elif got[12:14] == ETHERTYPE.to_bytes(2, "big"):
            arrivals.append((time.monotonic(), got))
    return arrivals


@pytest.fixture()
def veths():
    with veth_pairs(2, "q") as pairs:
        yield pairs


def test_urgent_frame_overtakes_rate_limited_bulk(veths, tmp_path):
    prog = tmp_path / "prio.p4"
    prog.write_text(PROGRAM)
    grpc_port, cli_port = free_port(), free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "softswitch", "run", str(prog), "-i", f"0@{veths[0][0]}",
         "-i", f"1@{veths[1][0]}", "--thrift-port", str(cli_port), "--",
         "--grpc-server-addr", f"127.0.0.1:{grpc_port}", "--priority-queues", "8"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_port(cli_port, proc)
        wait_for_port(grpc_port, proc)
        rate = 50  # packets/s per queue of port 1: one every 20 ms
        cli = subprocess.run([sys.executable, "-m", "softswitch", "cli", "--port",
                              str(cli_port), "-c", f"set_queue_rate {rate} 1"],
                             capture_output=True, text=True, timeout=30)
        assert cli.returncode == 0, cli.stderr
        tx, rx = RawPort(veths[0][1]), RawPort(veths[1][1])
        for seq in range(8):
            assert tx.send(frame(0, seq))
        time.sleep(0.05)
        assert tx.send(frame(7, 99))
        arrivals = [(at, got[10], got[11]) for at, got in _arrivals(rx, 9)]
        order = [(seq, prio) for _, seq, prio in arrivals]
        assert len(order) == 9, order
        # the urgent frame arrives right after the bulk frames already sent, long before
        # the last bulk frame; bulk frames keep their order
        urgent_at = order.index((99, 7))
        assert urgent_at <= 4, order
        assert [s for s, p in order if p == 0] == list(range(8))
        # frames that arrived before the reader started are read in a burst, so measure
        # the rate on the bulk frames still queued behind the urgent one
        after = len(order) - 1 - urgent_at
        spread = arrivals[-1][0] - arrivals[urgent_at][0]
        assert after >= 3 and spread >= (after - 1) * (1 / rate) * 0.8, (
            f"bulk not rate limited: {after} frames in {spread:.3f}s")
    finally:
        err = _stop(proc)
    assert proc.returncode == 0 and "Traceback" not in err, err


def _start_switch(prog: Path, veths, cli_port: int, grpc_port: int,
                  *target_args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "softswitch", "run", str(prog), "-i", f"0@{veths[0][0]}",
         "-i", f"1@{veths[1][0]}", "--thrift-port", str(cli_port), "--",
         "--grpc-server-addr", f"127.0.0.1:{grpc_port}", "--priority-queues", "8",
         *target_args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _stop(proc: subprocess.Popen) -> str:
    """SIGTERM, as an operator stops the switch; its stderr."""
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    return err


def _cli(cli_port: int, *commands: str) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "softswitch", "cli", "--port", str(cli_port)]
    for c in commands:
        args += ["-c", c]
    return subprocess.run(args, capture_output=True, text=True, timeout=30)


def _pfc_frames(port: RawPort, seconds: float) -> list[dict[int, int]]:
    from softswitch.tm.pfc import parse_pfc_frame

    seen, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = port.receive()
        if got is None:
            time.sleep(0.002)
            continue
        pause = parse_pfc_frame(got)
        if pause is not None:
            seen.append(pause)
    return seen


def test_pfc_pauses_the_upstream_and_honours_received_pauses(veths, tmp_path):
    from softswitch.tm.pfc import build_pfc_frame

    prog = tmp_path / "prio.p4"
    prog.write_text(PROGRAM)
    grpc_port, cli_port = free_port(), free_port()
    proc = _start_switch(prog, veths, cli_port, grpc_port)
    try:
        wait_for_port(cli_port, proc)
        # port 1 drains 20 frames/s; XOFF for priority 0 of ingress port 0 at 3 held
        res = _cli(cli_port, "set_queue_rate 20 1", "set_pfc 0 0 3 1")
        assert res.returncode == 0, res.stderr
        up, down = RawPort(veths[0][1]), RawPort(veths[1][1])
        for seq in range(4):
            assert up.send(frame(0, seq))
        frames = _pfc_frames(up, 1.5)
        assert {0: 0xFFFF} in frames, frames                     # XOFF to the upstream
        assert frames.index({0: 0xFFFF}) < len(frames) and {0: 0} in frames, frames  # XON
        shown = _cli(cli_port, "show_pfc")
        assert shown.returncode == 0 and "0    0     3    1" in shown.stdout, shown.stdout

        # a pause received from the downstream neighbour holds queue 7 of port 1; on a
        # 10 Mb/s link the maximum quanta last 3.4 s
        res = _cli(cli_port, "set_queue_rate 0 1", "set_link_rate 10000000 1")
        assert res.returncode == 0, res.stderr
        assert down.send(build_pfc_frame(bytes(6), {7: 0xFFFF}))
        time.sleep(0.1)
        assert up.send(frame(7, 50))
        held = [f for f in _drain_eth(down, 0.3) if f[11] == 7]
        assert held == [], "a paused priority was sent"
        assert down.send(build_pfc_frame(bytes(6), {7: 0}))       # XON releases it
        released = [f for f in _drain_eth(down, 1.0) if f[11] == 7]
        assert len(released) == 1
    finally:
        err = _stop(proc)
    assert proc.returncode == 0 and "Traceback" not in err, err


def _drain_eth(port: RawPort, seconds: float) -> list[bytes]:
    out, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = port.receive()
        if got is None:
            time.sleep(0.002)
        elif got[12:14] == ETHERTYPE.to_bytes(2, "big"):
            out.append(got)
    return out


def test_packet_out_waits_in_the_egress_queues(veths, tmp_path):
    """A controller's PacketOut goes through ingress and then the egress queues, as on
    BMv2 (it once skipped them): behind a rate-limited backlog of its queue, it leaves
    after that backlog, at the queue's pace."""
    import grpc
    from p4.v1 import p4runtime_pb2

    from softswitch.devtools.p4runtime_client import StreamClient

    prog = tmp_path / "prio.p4"
    prog.write_text(PROGRAM)
    grpc_port, cli_port = free_port(), free_port()
    proc = _start_switch(prog, veths, cli_port, grpc_port, "--cpu-port", "255")
    channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}")
    try:
        wait_for_port(cli_port, proc)
        wait_for_port(grpc_port, proc)
        rate = 50
        assert _cli(cli_port, f"set_queue_rate {rate} 1").returncode == 0
        stream = StreamClient(channel)
        stream.arbitrate(1)
        stream.next()
        tx, rx = RawPort(veths[0][1]), RawPort(veths[1][1])
        for seq in range(6):
            assert tx.send(frame(0, seq))
        time.sleep(0.05)
        sent_at = time.monotonic()
        stream.send(p4runtime_pb2.StreamMessageRequest(
            packet=p4runtime_pb2.PacketOut(payload=frame(0, 77))))
        arrivals = [(at, got[10]) for at, got in _arrivals(rx, 7)]
        stream.close()
        order = [seq for _, seq in arrivals]
        assert order == [0, 1, 2, 3, 4, 5, 77], order
        # queued behind the backlog still waiting at 50/s: several intervals, not at once
        assert arrivals[-1][0] - sent_at >= 3 * (1 / rate) * 0.8, arrivals
    finally:
        channel.close()
        err = _stop(proc)
    assert proc.returncode == 0 and "Traceback" not in err, err


@pytest.mark.parametrize("fastpath", ["auto", "off"])
def test_departures_keep_a_fast_link_rate(veths, tmp_path, fastpath):
    """The port loop times departures itself (no scheduler thread): a link rate whose
    frames are 100 µs apart must hold, not fall to one frame per millisecond (epoll's
    resolution) — with batchio's ppoll and with the select fallback alike (the one
    ``SOFTSWITCH_FASTPATH=off`` runs)."""
    prog = tmp_path / "prio.p4"
    prog.write_text(PROGRAM)
    grpc_port, cli_port = free_port(), free_port()
    env = dict(os.environ, SOFTSWITCH_FASTPATH=fastpath)
    proc = subprocess.Popen(
        [sys.executable, "-m", "softswitch", "run", str(prog), "-i", f"0@{veths[0][0]}",
         "-i", f"1@{veths[1][0]}", "--thrift-port", str(cli_port), "--",
         "--grpc-server-addr", f"127.0.0.1:{grpc_port}", "--priority-queues", "8"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_for_port(cli_port, proc)
        wait_for_port(grpc_port, proc)
        size, count, bps = 1000, 400, 80_000_000      # 100 µs a frame: 40 ms for all
        res = _cli(cli_port, f"set_link_rate {bps} 1", f"set_queue_depth {count} 1")
        assert res.returncode == 0, res.stderr
        tx, rx = RawPort(veths[0][1]), RawPort(veths[1][1])
        rx.sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        big = [frame(0, seq % 256)[:14] + bytes(size - 14) for seq in range(count)]
        for f in big:
            assert tx.send(f)
        stamps = _kernel_stamps(rx, count, time.monotonic() + 5)
        assert len(stamps) == count, f"{len(stamps)} of {count} frames out"
        # first to last frame out, by the kernel's receive times (the reader's own
        # scheduling does not count): not faster than the link, not much slower
        took = (stamps[-1] - stamps[0]) / 1e9
        ideal = (count - 1) * size * 8 / bps
        assert 0.9 * ideal <= took <= 3 * ideal, f"{count} frames took {took * 1e3:.1f} ms, " \
            f"the link needs {ideal * 1e3:.1f} ms (one a millisecond: {count} ms)"
    finally:
        err = _stop(proc)
    assert proc.returncode == 0 and "Traceback" not in err, err


SO_TIMESTAMPNS = 35


def _kernel_stamps(rx: RawPort, count: int, deadline: float) -> list[int]:
    """Kernel receive times (ns) of up to ``count`` test frames arriving on ``rx``."""
    from softswitch.daemon.ports.afpacket import PACKET_OUTGOING

    stamps: list[int] = []
    while len(stamps) < count and time.monotonic() < deadline:
        try:
            data, anc, _flags, addr = rx.sock.recvmsg(2048, 256)
        except BlockingIOError:
            time.sleep(0.001)
            continue
        if addr[2] == PACKET_OUTGOING or data[12:14] != ETHERTYPE.to_bytes(2, "big"):
            continue
        for level, kind, payload in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", payload[:16])
                stamps.append(sec * 1_000_000_000 + nsec)
    return stamps


def test_show_ports_counts_the_frames_the_kernel_dropped(veths, tmp_path):
    """A port loop that falls behind loses frames in the kernel, where no pipeline counter
    sees them: ``show_ports`` gives them per port (BMv2's table, in its extra info), and
    the switch names them when it stops. The switch is stopped (SIGSTOP) while more
    frames arrive than its receive ring holds."""
    prog = tmp_path / "prio.p4"
    prog.write_text(PROGRAM)
    grpc_port, cli_port = free_port(), free_port()
    proc = _start_switch(prog, veths, cli_port, grpc_port)
    sent = 6000                     # the ring holds 4096 (8 MiB of 2 KiB slots)
    try:
        wait_for_port(cli_port, proc)
        wait_for_port(grpc_port, proc)
        before = _cli(cli_port, "show_ports")
        assert before.returncode == 0, before.stderr
        assert before.stdout.split("\n")[0].split() == ["port", "#", "iface", "name",
                                                        "status", "extra", "info"]
        rows = {line.split()[1]: line for line in before.stdout.splitlines()[2:]}
        assert set(rows) == {veths[0][0], veths[1][0]}, before.stdout
        assert all(" UP " in row and "kernel_drops=0" in row for row in rows.values())
        tx = RawPort(veths[0][1])
        proc.send_signal(signal.SIGSTOP)
        try:
            for seq in range(0, sent, 200):
                assert tx.send_batch([frame(0, s % 256) for s in range(seq, seq + 200)]) \
                    == 200
        finally:
            proc.send_signal(signal.SIGCONT)
        tx.close()
        after = _cli(cli_port, "show_ports")
        assert after.returncode == 0, after.stderr
        drops = {line.split()[0]: int(line.split("kernel_drops=")[1])
                 for line in after.stdout.splitlines()[2:]}
        assert drops["1"] == 0 and sent - 4096 <= drops["0"] < sent, after.stdout
        assert _cli(cli_port, "show_ports 1").returncode != 0
    finally:
        err = _stop(proc)
    assert proc.returncode == 0 and "Traceback" not in err, err
    assert f"port 0 ({veths[0][0]}): the kernel dropped {drops['0']} frames in" in err, err
