"""End-to-end packets/s through a switch over veth pairs, beside a baseline.

Baseline (measured in the same run): the same frames over a bare veth pair, sent and
read by the same sender (bursts of ``send_batch``/``receive_batch``, at most 256 frames
in flight) — what the kernel and the sender cost without a switch. Then each target
(``softswitch run``; BMv2 ``simple_switch_grpc`` with ``--targets softswitch bmv2`` when
the reference tools are installed, ``veth_switch.py``) forwards them between two veth
pairs with ``l3_basic.p4`` (LPM + checksums) and with ``tailcc.p4`` (the full tailcc
pipeline) — on softswitch also with ``tailcc.p4`` compiled by p4c-bm2-ss, run from its
JSON —, routes installed over the CLI channel. Each figure is printed with its
ratio to the baseline and the loss; each path is run ``--repeats`` times and the best
run counts (on a shared machine a slow run measures the other processes). Needs root.

    python bench/veth_pps.py [--frames 3000] [--targets softswitch bmv2] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import veth_switch
from softswitch.daemon.ports.afpacket import RawPort  # noqa: E402
from softswitch.daemon.ports.veth import veth_pairs  # noqa: E402
from softswitch.devtools import reference_tools

ROOT = Path(__file__).resolve().parents[1]
ROUTER_MAC = "02:00:00:00:ff:01"


def _frame(i: int, dst_mac: str = "02:00:00:00:00:01") -> bytes:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    return bytes(Ether(dst=dst_mac, src="02:00:00:00:00:99")
                 / IP(src="10.0.1.1", dst="10.0.2.7", ttl=64, id=i & 0xFFFF)
                 / UDP(sport=1000 + i % 1000, dport=9) / (b"x" * 64))


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


def _best(tx: RawPort, rx: RawPort, frames: list[bytes], repeats: int) -> tuple[int, float]:
    """The best of ``repeats`` runs (highest rate): on a shared machine a run that other
    processes slowed down measures them, not the path."""
    runs = [_pump(tx, rx, frames) for _ in range(repeats)]
    return max(runs, key=lambda r: r[0] / r[1] if r[1] else 0.0)


def _best_between(tx_if: str, rx_if: str, frames: list[bytes],
                  repeats: int) -> tuple[int, float]:
    """``_best`` from interface ``tx_if`` to ``rx_if``, their ports closed after."""
    tx, rx = RawPort(tx_if), RawPort(rx_if)
    try:
        return _best(tx, rx, frames, repeats)
    finally:
        tx.close()
        rx.close()


def baseline(frames: list[bytes], repeats: int = 3) -> tuple[int, float]:
    with veth_pairs(1, "b") as pairs:
        sw, host = pairs[0]
        return _best_between(host, sw, frames, repeats)


def through_switch(target: str, program: Path, routes: list[str],
                   frames: list[bytes], repeats: int = 3) -> tuple[int, float]:
    with veth_pairs(2, "b") as pairs:
        (sw1, h1), (sw2, h2) = pairs
        with veth_switch.running(target, program, {1: sw1, 2: sw2}) as switch:
            switch.configure(routes)
            return _best_between(h1, h2, frames, repeats)


def _mac(mac: str) -> str:
    return "0x" + mac.replace(":", "")


L3_ROUTES = ["table_add L3Ingress.ipv4_lpm L3Ingress.set_next_hop 10.0.2.0/24 => 2 "
             "0x0200000000aa 0x0200000000bb"]
TAILCC_ROUTES = [
    "table_add TailccIngress.forwarding.my_station TailccIngress.forwarding.set_router_mac "
    f"{_mac(ROUTER_MAC)} =>",
    "table_add TailccIngress.forwarding.routing_v4 TailccIngress.forwarding.set_nexthop "
    f"0 10.0.2.0/24 => 2 {_mac(ROUTER_MAC)} 0x0200000000bb"]


def _from_p4c_json(frames: list[bytes], repeats: int, notes: list[str]) -> list[dict]:
    """softswitch running tailcc.p4 from p4c-bm2-ss's JSON (``softswitch run PROG.json``),
    the row to hold beside the one from source; none without the reference tools."""
    tools = reference_tools.find()
    if tools is None:
        notes.append("softswitch from p4c's JSON left out: " + reference_tools.missing_reason())
        return []
    with tempfile.TemporaryDirectory(prefix="veth-json-") as tmp:
        program = Path(tmp) / "tailcc.json"
        comp = subprocess.run([tools.p4c, "-o", str(program), str(ROOT / "p4src/tailcc.p4")],
                              capture_output=True, text=True)
        if comp.returncode != 0:
            raise SystemExit(f"p4c-bm2-ss tailcc.p4: {comp.stderr.strip()[:2000]}")
        print("veth: softswitch tailcc (p4c's JSON) ...", file=sys.stderr, flush=True)
        got, secs = through_switch("softswitch", program, TAILCC_ROUTES, frames, repeats)
    return [{"path": "softswitch, tailcc.json (p4c)", "target": "softswitch",
             "program": "tailcc-json", "delivered": got, "seconds": secs,
             "pps": got / secs if secs else 0.0}]


def measure(frames_count: int, targets: list[str], repeats: int = 3) -> dict:
    """Every row of the benchmark: {"rows": [{path, target, program, delivered,
    seconds, pps, ratio, loss}], "notes": [...]}."""
    l3_frames = [_frame(i) for i in range(frames_count)]
    tc_frames = [_frame(i, ROUTER_MAC) for i in range(frames_count)]
    notes: list[str] = []
    got, secs = baseline(l3_frames, repeats)
    base_pps = got / secs if secs else 0.0
    rows = [{"path": "bare veth pair (baseline)", "target": "veth", "program": None,
             "delivered": got, "seconds": secs, "pps": base_pps}]
    for target in targets:
        why = veth_switch.available(target)
        if why is not None:
            notes.append(f"{target} left out: {why}")
            continue
        for prog, program, routes, frames in (
                ("l3_basic", ROOT / "p4src/samples/l3_basic.p4", L3_ROUTES, l3_frames),
                ("tailcc", ROOT / "p4src/tailcc.p4", TAILCC_ROUTES, tc_frames)):
            print(f"veth: {target} {prog} ...", file=sys.stderr, flush=True)
            got, secs = through_switch(target, program, routes, frames, repeats)
            rows.append({"path": f"{target}, {prog}.p4", "target": target, "program": prog,
                         "delivered": got, "seconds": secs,
                         "pps": got / secs if secs else 0.0})
        if target == "softswitch":
            rows += _from_p4c_json(tc_frames, repeats, notes)
    for row in rows:
        row["ratio"] = row["pps"] / base_pps if base_pps else 0.0
        row["loss"] = 1 - row["delivered"] / frames_count
    return {"frames": frames_count, "repeats": repeats, "rows": rows, "notes": notes,
            "loadavg": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=3000, help="frames per measurement")
    ap.add_argument("--targets", nargs="+", choices=veth_switch.TARGETS,
                    default=["softswitch"], help="switches to run (softswitch; bmv2 too "
                    "when the reference tools are installed)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="runs per path, the best one counts (3)")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args(argv)
    if veth_switch.lacks_root("veth_pps"):
        return 1
    if args.frames < 100:
        ap.error("--frames must be at least 100")
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    report = measure(args.frames, args.targets, args.repeats)
    print(f"{'path':<30}{'delivered':>10}{'seconds':>9}{'pkt/s':>10}{'ratio':>8}{'loss':>7}")
    for r in report["rows"]:
        print(f"{r['path']:<30}{r['delivered']:>10}{r['seconds']:>9.2f}{r['pps']:>10.0f}"
              f"{r['ratio']:>8.3f}{r['loss']:>7.1%}")
    for note in report["notes"]:
        print(f"  {note}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
