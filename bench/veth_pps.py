"""End-to-end packets/s through ``softswitch run`` over veth pairs, beside a baseline.

Baseline (measured in the same run): the same frames over a bare veth pair, read with
the same AF_PACKET code — what the kernel and our port I/O cost without a switch.
Then ``softswitch run`` forwards them between two veth pairs with ``l3_basic.p4`` (LPM +
checksums) and with ``tailcc.p4`` (the full tailcc pipeline), routes installed over the
runtime channel. Each figure is printed with its ratio to the baseline and the loss.
Needs root (veth pairs, AF_PACKET).

    python bench/veth_pps.py [--frames 3000]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from softswitch.ports.afpacket import RawPort
from softswitch.ports.veth import veth_pairs

ROOT = Path(__file__).resolve().parents[1]
ROUTER_MAC = "02:00:00:00:ff:01"


def _frame(i: int, dst_mac: str = "02:00:00:00:00:01") -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    return bytes(Ether(dst=dst_mac, src="02:00:00:00:00:99")
                 / IP(src="10.0.1.1", dst="10.0.2.7", ttl=64, id=i & 0xFFFF)
                 / UDP(sport=1000 + i % 1000, dport=9) / (b"x" * 64))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pump(tx: RawPort, rx: RawPort, frames: list[bytes], window: int = 256,
          idle_s: float = 1.0) -> tuple[int, float]:
    """Send with at most ``window`` frames in flight, in bursts (``send_batch``), and
    read arrivals in bursts; (received, seconds from the first send to the last
    arrival). A window that stalls is presumed lost and reopened, so a drop slows the
    run down instead of hanging it; only real arrivals are counted. The same sender
    drives the bare veth pair and the switches, so their ratio is the switch's cost."""
    received = sent = written_off = 0
    start = last = time.monotonic()
    while True:
        room = window - (sent - received - written_off)
        if sent < len(frames) and room > 0:
            burst = frames[sent:sent + min(room, 64)]
            tx.send_batch(burst)
            sent += len(burst)
        got = rx.receive_batch()
        now = time.monotonic()
        if got:
            arrived = sum(1 for frame in got if frame[12:14] == b"\x08\x00")
            if arrived:
                received += arrived
                last = now
            continue
        if received >= len(frames) or now - last > idle_s:
            return received, last - start
        if sent >= len(frames) or room <= 0:
            time.sleep(0.0001)
        if sent - received - written_off >= window and now - last > idle_s / 4:
            written_off += window // 2


def baseline(frames: list[bytes]) -> tuple[int, float]:
    with veth_pairs(1, "b") as pairs:
        sw, host = pairs[0]
        tx, rx = RawPort(host), RawPort(sw)
        try:
            return _pump(tx, rx, frames)
        finally:
            tx.close()
            rx.close()


def through_switch(program: Path, routes: list[str], frames: list[bytes]) -> tuple[int, float]:
    with veth_pairs(2, "b") as pairs:
        (sw1, h1), (sw2, h2) = pairs
        cli_port = _free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "softswitch", "run", str(program), "-i", f"1@{sw1}",
             "-i", f"2@{sw2}", "--thrift-port", str(cli_port), "--",
             "--grpc-server-addr", f"127.0.0.1:{_free_port()}", "--priority-queues", "8"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _wait(cli_port, proc)
            cli = subprocess.run([sys.executable, "-m", "softswitch", "cli", "--port",
                                  str(cli_port)], input="\n".join(routes), text=True,
                                 capture_output=True, timeout=60)
            if cli.returncode != 0:
                raise SystemExit(f"installing routes failed: {cli.stderr}")
            tx, rx = RawPort(h1), RawPort(h2)
            try:
                return _pump(tx, rx, frames)
            finally:
                tx.close()
                rx.close()
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _wait(port: int, proc: subprocess.Popen, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"softswitch run exited: {proc.stderr.read() if proc.stderr else ''}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit("softswitch run did not come up")


def _mac(mac: str) -> str:
    return "0x" + mac.replace(":", "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=3000, help="frames per measurement")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("veth_pps needs root (veth pairs, AF_PACKET)", file=sys.stderr)
        return 1
    if args.frames < 100:
        ap.error("--frames must be at least 100")
    l3_frames = [_frame(i) for i in range(args.frames)]
    tc_frames = [_frame(i, ROUTER_MAC) for i in range(args.frames)]
    rows = []
    got, secs = baseline(l3_frames)
    base_pps = got / secs if secs else 0.0
    rows.append(("bare veth pair (baseline)", got, secs, base_pps))
    l3_routes = ["table_add ipv4_lpm set_next_hop 10.0.2.0/24 => 2 0x0200000000aa "
                 "0x0200000000bb"]
    tc_routes = [f"table_add my_station set_router_mac {_mac(ROUTER_MAC)} =>",
                 "table_add routing_v4 set_nexthop 0 10.0.2.0/24 => 2 "
                 f"{_mac(ROUTER_MAC)} 0x0200000000bb"]
    for name, program, routes, frames in (
            ("softswitch run, l3_basic.p4", ROOT / "p4src/samples/l3_basic.p4", l3_routes,
             l3_frames),
            ("softswitch run, tailcc.p4", ROOT / "p4src/tailcc.p4", tc_routes, tc_frames)):
        got, secs = through_switch(program, routes, frames)
        rows.append((name, got, secs, got / secs if secs else 0.0))
    print(f"{'path':<30}{'delivered':>10}{'seconds':>9}{'pkt/s':>10}{'ratio':>8}{'loss':>7}")
    for name, got, secs, pps in rows:
        ratio = pps / base_pps if base_pps else 0.0
        loss = 1 - got / args.frames
        print(f"{name:<30}{got:>10}{secs:>9.2f}{pps:>10.0f}{ratio:>8.3f}{loss:>7.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
