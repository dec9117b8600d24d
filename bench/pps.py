"""Packets per second through ``Switch.inject``, as a ratio to a pass-through baseline.

Absolute packet rates depend on the machine, so each figure is printed next to the
rate of a trivial program (parse Ethernet, forward to port 1, emit) measured in the
same run with the same packets: the ratio is what to compare across changes. Rates use
CPU time (``time.process_time``) so other load on the machine distorts them less.

    .venv/bin/python bench/pps.py [--seconds 2] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from softswitch.v1model.control import KeyMatch
from softswitch.v1model.switch import Switch

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
    table routes { key = { h.ipv4.dst: lpm; } actions = { fwd; drop; } default_action = drop(); }
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


def ipv4_packet(dst: int) -> bytes:
    """An Ethernet/IPv4/UDP packet with a correct IPv4 header checksum."""
    ip = bytearray(bytes.fromhex("4500002e00010000401100000a000001") + dst.to_bytes(4, "big"))
    total = sum(int.from_bytes(ip[i:i + 2], "big") for i in range(0, 20, 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    ip[10:12] = ((~total) & 0xFFFF).to_bytes(2, "big")
    eth = bytes.fromhex("00000000000200000000000108 00".replace(" ", ""))
    return eth + bytes(ip) + bytes.fromhex("04d2162e001a0000") + bytes(18)


def load(source: str) -> Switch:
    with tempfile.NamedTemporaryFile("w", suffix=".p4", delete=False) as f:
        f.write(source)
        path = f.name
    try:
        return Switch.from_file(path)
    finally:
        os.unlink(path)


def rate(sw: Switch, packets: list[bytes], seconds: float) -> float:
    """Packets per second injecting ``packets`` round-robin for about ``seconds``."""
    n = 0
    start = time.process_time()
    deadline = start + seconds
    while True:
        for p in packets:
            sw.inject(0, p)
        n += len(packets)
        now = time.process_time()
        if now >= deadline:
            return n / (now - start)


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
    ap.add_argument("--corpus", default=os.environ.get(
        "P4_CONFORMANCE_DIR", str(Path(__file__).resolve().parents[1] / "../shared/conformance")))
    ap.add_argument("--programs", type=int, default=3)
    args = ap.parse_args()

    packets = [ipv4_packet(0x0A000000 + i) for i in range(16)]
    base = rate(load(PASS_THROUGH), packets, args.seconds)
    print(f"baseline pass-through: {base:10.0f} pkt/s")
    l3 = load(L3)
    l3.table_add("routes", [KeyMatch("h.ipv4.dst", "lpm", 0x0A000000, prefix_len=8)], "fwd",
                 [0x0000000000AA, 2])
    r = rate(l3, packets, args.seconds)
    print(f"L3 forward (lpm+csum): {r:10.0f} pkt/s  ratio {r / base:.2f}")
    corpus = Path(args.corpus)
    if not (corpus / "p4_16_samples").is_dir():
        print(f"corpus not found at {corpus} (set P4_CONFORMANCE_DIR): skipping corpus programs")
        return
    for prog, pkts in corpus_programs(corpus, args.programs):
        try:
            sw = Switch.from_file(prog, (str(prog.parent),))
        except Exception as e:  # report and go on: the benchmark is not a test
            print(f"{prog.name}: cannot load ({e})")
            continue
        n = 0
        start = time.process_time()
        while time.process_time() - start < args.seconds:
            for port, data in pkts:
                sw.inject(port, data)
            n += len(pkts)
        pr = n / (time.process_time() - start)
        print(f"{prog.name:40s} {pr:10.0f} pkt/s  ratio {pr / base:.2f}")


if __name__ == "__main__":
    main()
