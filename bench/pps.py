"""Packets per second through ``Switch.inject``: the interpreter beside the C fast path.

Each program is measured on both packet paths in one run (``fastpath="off"`` and
``"require"``, softswitch/fastpath), with the same packets, and printed with the ratio:

* pass-through (parse Ethernet, forward, emit) and an inline L3 forwarder;
* ``p4src/samples/l3_basic.p4`` (LPM + TTL + IPv4 checksums) with its sample routes;
* ``p4src/tailcc.p4`` programmed as the tail-latency lab's tailcc fabric
  (``taillab/fabric.py:tailcc()``: routes, semantic classes, ECN profiles, Fast
  CNP policy and flows, the CNP mirror session) under a RoCEv2 mix of its four classes;
* lookup cost against table size (1k/10k/100k entries; exact, LPM, ternary, range):
  ns per lookup in the interpreter's tables and in C, and the L3 forwarder's pps with
  that many routes on both paths.

Rates use CPU time (``time.process_time``), so other load distorts them less. Results
also go to ``out/bench/pps.json``.

    .venv/bin/python bench/pps.py [--seconds 2] [--sizes 1000,10000,100000] [--programs 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

from softswitch.core.control import KeyMatch  # noqa: E402
from softswitch.frontend.compiler import compile_program  # noqa: E402
from softswitch.v1model.fast_switch import load_switch  # noqa: E402
from softswitch.v1model.switch import Switch  # noqa: E402

PASS_THROUGH = r"""
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct H { eth_t eth; }
struct M { }
parser P(packet_in pk, out H h, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(h.eth); transition accept; }
}
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) { apply { sm.egress_spec = 1; } }
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out pk, in H h) { apply { pk.emit(h.eth); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

L3 = r"""
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t { bit<4> version; bit<4> ihl; bit<8> tos; bit<16> len; bit<16> id;
    bit<3> flags; bit<13> frag; bit<8> ttl; bit<8> proto; bit<16> csum;
    bit<32> src; bit<32> dst; }
struct H { eth_t eth; ipv4_t ipv4; }
struct M { bit<16> l4; }
parser P(packet_in pk, out H h, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(h.eth);
        transition select(h.eth.type) { 0x800: ipv4; default: accept; } }
    state ipv4 { pk.extract(h.ipv4); transition accept; }
}
control V(inout H h, inout M m) {
    apply { verify_checksum(h.ipv4.isValid(), { h.ipv4.version, h.ipv4.ihl, h.ipv4.tos,
        h.ipv4.len, h.ipv4.id, h.ipv4.flags, h.ipv4.frag, h.ipv4.ttl, h.ipv4.proto,
        h.ipv4.src, h.ipv4.dst }, h.ipv4.csum, HashAlgorithm.csum16); }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    counter(64, CounterType.packets_and_bytes) c;
    action drop() { mark_to_drop(sm); }
    action fwd(bit<48> dmac, bit<9> port) {
        h.eth.src = h.eth.dst; h.eth.dst = dmac; sm.egress_spec = port;
        h.ipv4.ttl = h.ipv4.ttl - 1; c.count((bit<32>)port);
    }
    table routes { key = { h.ipv4.dst: lpm; } actions = { fwd; drop; } default_action = drop();
                   size = 1048576; }
    apply { if (h.ipv4.isValid() && h.ipv4.ttl > 1) { routes.apply(); } else { drop(); } }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) {
    apply { update_checksum(h.ipv4.isValid(), { h.ipv4.version, h.ipv4.ihl, h.ipv4.tos,
        h.ipv4.len, h.ipv4.id, h.ipv4.flags, h.ipv4.frag, h.ipv4.ttl, h.ipv4.proto,
        h.ipv4.src, h.ipv4.dst }, h.ipv4.csum, HashAlgorithm.csum16); }
}
control D(packet_out pk, in H h) { apply { pk.emit(h.eth); pk.emit(h.ipv4); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

#: one table per lookup structure, keyed on an IPv4-like 32-bit field
LOOKUP = r"""
#include <core.p4>
#include <v1model.p4>
header k_t { bit<32> k; bit<32> res; }
struct H { k_t k; }
struct M { }
parser P(packet_in pk, out H h, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(h.k); transition accept; }
}
control V(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action set(bit<32> v) { h.k.res = v; }
    table exact_t { key = { h.k.k : exact; } actions = { set; } size = 1048576; }
    table lpm_t { key = { h.k.k : lpm; } actions = { set; } size = 1048576; }
    table ternary_t { key = { h.k.k : ternary; } actions = { set; } size = 1048576; }
    table range_t { key = { h.k.k : range; } actions = { set; } size = 1048576; }
    apply { exact_t.apply(); lpm_t.apply(); ternary_t.apply(); range_t.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H h, inout M m) { apply { } }
control D(packet_out pk, in H h) { apply { pk.emit(h.k); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def ipv4_packet(dst: int, payload: int = 18) -> bytes:
    """An Ethernet/IPv4/UDP packet with a correct IPv4 header checksum."""
    total = 28 + payload
    ip = bytearray(bytes.fromhex("4500") + total.to_bytes(2, "big")
                   + bytes.fromhex("00010000401100000a000001") + dst.to_bytes(4, "big"))
    s = sum(int.from_bytes(ip[i:i + 2], "big") for i in range(0, 20, 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    ip[10:12] = ((~s) & 0xFFFF).to_bytes(2, "big")
    eth = bytes.fromhex("0000000000020000000000010800")
    udp = (1234).to_bytes(2, "big") + (5678).to_bytes(2, "big") + (8 + payload).to_bytes(2, "big")
    return eth + bytes(ip) + udp + bytes(2) + bytes(payload)


def checked_source(source: str) -> Any:
    with tempfile.NamedTemporaryFile("w", suffix=".p4", delete=False) as f:
        f.write(source)
        path = f.name
    try:
        return compile_program(path)
    finally:
        os.unlink(path)


def both(checked: Any) -> dict[str, Switch]:
    """The program on each packet path (fails if C refuses it: the numbers would lie)."""
    return {"interpreter": Switch.from_program(checked),
            "C": load_switch(checked, fastpath="require")}


def rate(sw: Any, packets: list[tuple[int, bytes]], seconds: float,
         inject: Any = None) -> float:
    """Packets per CPU second injecting ``packets`` round-robin for about ``seconds``."""
    inject = inject or sw.inject
    n = 0
    start = time.process_time()
    deadline = start + seconds
    while True:
        for port, p in packets:
            inject(port, p)
        n += len(packets)
        now = time.process_time()
        if now >= deadline:
            return n / (now - start)


def measure(name: str, switches: dict[str, Switch], packets: list[tuple[int, bytes]],
            seconds: float, results: dict[str, Any]) -> None:
    outs = {k: [sw.inject(p, d) for p, d in packets] for k, sw in switches.items()}
    same = [[(o.port, o.data) for o in x] for x in outs["interpreter"]] == \
        [[(o.port, o.data) for o in x] for x in outs["C"]]
    r = {k: rate(sw, packets, seconds) for k, sw in switches.items()}
    ratio = r["C"] / r["interpreter"] if r["interpreter"] else 0.0
    print(f"{name:<34}{r['interpreter']:>12.0f}{r['C']:>12.0f}{ratio:>8.1f}x"
          f"{'' if same else '   OUTPUTS DIFFER'}")
    results[name] = {"interpreter_pps": r["interpreter"], "c_pps": r["C"], "ratio": ratio,
                     "identical_outputs": same}


# ---------------------------------------------------------------- programs
def l3_basic() -> tuple[dict[str, Switch], list[tuple[int, bytes]]]:
    from softswitch.stf import parse_stf_file
    from softswitch.stf.session import CommandSession
    from softswitch.stf.stf import PacketCmd
    prog = ROOT / "p4src" / "samples" / "l3_basic.p4"
    cmds = parse_stf_file(prog.with_suffix(".stf"))
    sws = both(compile_program(str(prog)))
    for sw in sws.values():
        session = CommandSession(sw)
        for c in cmds:
            if not isinstance(c, PacketCmd) and type(c).__name__ not in ("ExpectCmd", "WaitCmd"):
                session.execute(c)
    pkts = [(c.port, c.data) for c in cmds if isinstance(c, PacketCmd)][:2]
    return sws, pkts


def l3_routes(routes: int) -> tuple[dict[str, Switch], list[tuple[int, bytes]]]:
    """The inline L3 forwarder with ``routes`` /24 routes; packets to random routes."""
    sws = both(checked_source(L3))
    rng = random.Random(1)
    dsts = []
    for i in range(routes):
        dst = (0x0B000000 + (i << 8)) & 0xFFFFFFFF
        for sw in sws.values():
            sw.table_add("routes", [KeyMatch("h.ipv4.dst", "lpm", dst, prefix_len=24)],
                         "fwd", [0xBB0000000000 + i, 1 + i % 8])
        dsts.append(dst)
    pkts = [(0, ipv4_packet(rng.choice(dsts) | rng.randrange(1, 255))) for _ in range(64)]
    return sws, pkts


def tailcc_lab() -> tuple[dict[str, Switch], list[tuple[int, bytes]]]:
    from softswitch.daemon.cli_channel.commands import RuntimeChannel
    from softswitch.tm import TrafficManager
    from taillab.fabric import CNP_RECIRCULATION_PORT, CNP_SESSION, tailcc
    from taillab.programs import TAILCC_P4
    from taillab.roce import OPCODE_RC_WRITE_MIDDLE, RoceFlowAddr, build_roce
    from taillab.sim import RECEIVER_PORT, RECEIVER_QP_OFFSET, SWITCH_MAC, host_ip, host_mac
    from taillab.workload import BULK, HOT_KV, MOE, SCHED_SIGNAL

    hosts = 8
    sws = both(compile_program(str(TAILCC_P4)))
    for sw in sws.values():
        sw.priority_queues = 8
        channel = RuntimeChannel(sw, TrafficManager(num_queues=8, link_rate_bps=100e9))
        for line in tailcc(hosts):
            ok, out = channel.execute(line)
            if not ok:
                raise SystemExit(f"tailcc lab configuration: {line!r}: {out}")
        sw.mirroring_add(CNP_SESSION, CNP_RECIRCULATION_PORT)
    pkts = []
    for port in range(1, hosts + 1):
        for spec, size in ((SCHED_SIGNAL, 256), (HOT_KV, 1024), (MOE, 1024), (BULK, 1024)):
            qp = spec.qp_base + port - 1
            addr = RoceFlowAddr(host_mac(port), SWITCH_MAC, host_ip(port),
                                host_ip(RECEIVER_PORT), 49152 + qp % 16384,
                                qp + RECEIVER_QP_OFFSET)
            pkts.append((port, build_roce(addr, OPCODE_RC_WRITE_MIDDLE, port, size, 26)))
    return sws, pkts


# ---------------------------------------------------------------- lookup cost
def lookup_cost(sizes: list[int], seconds: float, results: dict[str, Any]) -> None:
    checked = checked_source(LOOKUP)
    rng = random.Random(5)
    print("\nlookup cost against table size (ns per lookup; one table filled at a time)")
    print(f"{'table':<10}{'entries':>9}{'interpreter':>13}{'C':>9}{'ratio':>8}")
    rows = []
    for kind in ("exact", "lpm", "ternary", "range"):
        for size in sizes:
            if kind == "range" and size > 10000:
                continue   # sorted scan: linear by design, measured up to 10k
            sw = load_switch(checked, fastpath="require")
            table = f"{kind}_t"
            keys = fill(sw, table, kind, size, rng)
            state = sw.pb.tables[sw.table_info(table).name]
            probe = [(rng.choice(keys),) for _ in range(1000)]
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < seconds / 4:
                for k in probe:
                    state.lookup(k)
                n += len(probe)
            py_ns = (time.perf_counter() - t0) / n * 1e9
            c_ns = sw.lookup_cost_ns(table, probe, max(1, int(200000 / len(probe))))
            rows.append({"table": kind, "entries": size, "interpreter_ns": py_ns, "c_ns": c_ns})
            print(f"{kind:<10}{size:>9}{py_ns:>13.0f}{c_ns:>9.0f}{py_ns / c_ns:>7.0f}x")
    results["lookup_cost"] = rows


def fill(sw: Switch, table: str, kind: str, size: int, rng: random.Random) -> list[int]:
    """``size`` entries of the kind a real table holds; keys that hit them."""
    keys = []
    masks = [0xFFFFFFFF ^ ((1 << s) - 1) for s in range(0, 32, 2)]  # 16 distinct masks
    for i in range(size):
        v = rng.getrandbits(32)
        if kind == "exact":
            km = KeyMatch("h.k.k", "exact", v)
        elif kind == "lpm":
            plen = rng.randrange(8, 33)
            v &= 0xFFFFFFFF ^ ((1 << (32 - plen)) - 1)
            km = KeyMatch("h.k.k", "lpm", v, prefix_len=plen)
        elif kind == "ternary":
            m = rng.choice(masks)
            v &= m
            km = KeyMatch("h.k.k", "ternary", v, mask=m)
        else:
            lo = i * 4096
            km = KeyMatch("h.k.k", "range", lo, high=lo + 4095)
            v = lo + 7
        try:
            sw.table_add(table, [km], "set", [i], priority=None if kind in ("exact", "lpm")
                         else rng.randrange(1 << 20))
        except Exception:  # noqa: BLE001 - a random duplicate
            continue
        keys.append(v)
    return keys


def l3_scale(sizes: list[int], seconds: float, results: dict[str, Any]) -> None:
    print("\nL3 forward with N /24 routes, packets to random routes (pps)")
    print(f"{'routes':>9}{'interpreter':>13}{'C':>12}{'ratio':>8}")
    rows = []
    for size in sizes:
        sws, pkts = l3_routes(size)
        r = {k: rate(sw, pkts, seconds / 2) for k, sw in sws.items()}
        rows.append({"routes": size, "interpreter_pps": r["interpreter"], "c_pps": r["C"]})
        print(f"{size:>9}{r['interpreter']:>13.0f}{r['C']:>12.0f}"
              f"{r['C'] / r['interpreter']:>7.1f}x")
    results["l3_routes"] = rows


def corpus_programs(corpus: Path, limit: int) -> list[tuple[Path, list[tuple[int, bytes]]]]:
    """The largest corpus programs with STF tests, with the packets their STF injects."""
    if limit <= 0:
        return []
    samples = corpus / "p4_16_samples"
    stfs = sorted(samples.glob("*.stf"), key=lambda p: -(p.with_suffix(".p4").stat().st_size
                                                         if p.with_suffix(".p4").exists()
                                                         else 0))
    out = []
    for stf in stfs:
        prog = stf.with_suffix(".p4")
        if not prog.exists():
            continue
        pkts = []
        for line in stf.read_text().splitlines():
            w = line.split()
            if len(w) >= 3 and w[0] == "packet":
                pkts.append((int(w[1]), bytes.fromhex("".join(w[2:]))))
        if pkts:
            out.append((prog, pkts))
        if len(out) >= limit:
            break
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--corpus", default=os.environ.get(
        "P4_CONFORMANCE_DIR", str(ROOT.parent / "shared" / "conformance")))
    ap.add_argument("--programs", type=int, default=3)
    ap.add_argument("--json", default=str(ROOT / "out" / "bench" / "pps.json"))
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    results: dict[str, Any] = {}

    print(f"{'program (Switch.inject)':<34}{'interpreter':>12}{'C':>12}{'ratio':>9}")
    v4 = [(0, ipv4_packet(0x0A000000 + i)) for i in range(16)]
    measure("pass-through", both(checked_source(PASS_THROUGH)), v4, args.seconds, results)
    l3 = both(checked_source(L3))
    for sw in l3.values():
        sw.table_add("routes", [KeyMatch("h.ipv4.dst", "lpm", 0x0A000000, prefix_len=8)],
                     "fwd", [0x0000000000AA, 2])
    measure("L3 forward (lpm+csum)", l3, v4, args.seconds, results)
    sws, pkts = l3_basic()
    measure("l3_basic.p4 (sample routes)", sws, pkts, args.seconds, results)
    sws, pkts = tailcc_lab()
    measure("tailcc.p4 (lab tailcc config)", sws, pkts, args.seconds, results)

    corpus = Path(args.corpus)
    if (corpus / "p4_16_samples").is_dir():
        for prog, cpkts in corpus_programs(corpus, args.programs):
            try:
                sw2 = both(compile_program(str(prog), (str(prog.parent),)))
            except Exception as e:  # noqa: BLE001 - report and go on: not a test
                print(f"{prog.name}: not measured ({str(e).splitlines()[0]})")
                continue
            measure(prog.name, sw2, cpkts, args.seconds / 2, results)

    lookup_cost(sizes, args.seconds, results)
    l3_scale(sizes, args.seconds, results)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(results, indent=1))
    print(f"\nwritten to {args.json}")


if __name__ == "__main__":
    main()
