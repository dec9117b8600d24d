"""The PTF suites (ptf_tests/): their packets, their runner, and a full run.

- The suites' scapy builders must produce byte for byte what the STF suite
  (tests/p4/*.stf, from tests/p4/gen_tailcc_stf.py) sends and expects for the same
  scenarios, so the PTF and STF suites test the same behaviour and an error in either
  reference shows up here.
- The runner's command line refuses what cannot work, and it always removes its
  namespace, veths and switch (after a pass, a failure, or SIGTERM).
- The full run (``ptf_tests/run.py`` on softswitch) must pass every test except those
  in ``ptf_tests/known_failures.txt``, and every listed test must still fail (a stale
  entry is an error, so the list only shrinks).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PTF_DIR = ROOT / "ptf_tests"
STF_DIR = ROOT / "tests" / "p4"
KNOWN_FAILURES = PTF_DIR / "known_failures.txt"
sys.path.insert(0, str(PTF_DIR))

import tailcc_packets as tp  # noqa: E402

NEEDS_ROOT = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (netns, veth pairs)")


# ---------------------------------------------------------------- STF cross-check
def stf_scenarios(name: str) -> dict[str, list[tuple[str, int, bytes]]]:
    """``# comment`` -> the packet/expect lines after it, as (kind, port, bytes)."""
    out: dict[str, list[tuple[str, int, bytes]]] = {}
    current: list[tuple[str, int, bytes]] | None = None
    for line in (STF_DIR / name).read_text().splitlines():
        if line.startswith("# "):
            current = out.setdefault(line[2:].strip(), [])
        elif line.startswith(("packet ", "expect ")) and current is not None:
            kind, port, data = line.split()[:3]
            if "*" in data:
                continue                   # masked expectations are not byte-exact
            current.append((kind, int(port), bytes.fromhex(data)))
    return out


def scenario(name: str, prefix: str) -> list[tuple[str, int, bytes]]:
    found = [v for k, v in stf_scenarios(name).items() if k.startswith(prefix)]
    assert len(found) == 1, f"{name}: no single scenario starting with {prefix!r}"
    return found[0]


def test_rfc6040_packets_match_stf():
    """All 16 combinations: the same tunnelled input, the same decapsulated output."""
    seen = 0
    for inner in (tp.NOT_ECT, tp.ECT0, tp.ECT1, tp.CE):
        for outer in (tp.NOT_ECT, tp.ECT0, tp.ECT1, tp.CE):
            result = tp.RFC6040[inner][outer]
            lines = scenario("rfc6040.stf", f"inner {tp.ECN_NAME[inner]}, outer "
                                            f"{tp.ECN_NAME[outer]} ->")
            sent = tp.vxlan_outer(tp.tenant_inner(inner, 64, tp.HOST1_MAC, tp.ROUTER_MAC),
                                  outer_ecn=outer)
            assert lines[0] == ("packet", 1, bytes(sent))
            if result is None:
                assert len(lines) == 1
            else:
                out = tp.tenant_inner(result, 63, tp.ROUTER_MAC, tp.NH2_MAC)
                assert lines[1] == ("expect", 2, bytes(out))
            seen += 1
    assert seen == 16


def test_cnp_matches_stf_and_scapy_cnp():
    """The CNP the PTF suite expects = the STF suite's = scapy's cnp() spelled out."""
    lines = scenario("fast_cnp.stf", "1. queue (2, 5) holds 20 packets")
    cnp = tp.cnp_packet(tp.HOST1_MAC, "10.0.2.5", "10.0.1.1", 49999, 0x456)
    assert ("expect", 1, bytes(cnp)) in lines
    assert bytes(cnp) == bytes(tp.cnp_packet_explicit(tp.HOST1_MAC, "10.0.2.5", "10.0.1.1",
                                                      49999, 0x456))
    assert len(bytes(cnp)) == 74
    data_in = tp.roce("10.0.2.5", 0x123, 256, sport=49999)
    assert lines[0] == ("packet", 1, bytes(data_in))
    tagged = scenario("fast_cnp.stf", "5. VLAN-tagged flow")
    vlan_cnp = tp.cnp_packet(tp.HOST3_MAC, "10.0.7.5", "10.0.1.2", 50001, 0x789, vlan=10)
    assert ("expect", 3, bytes(vlan_cnp)) in tagged and len(bytes(vlan_cnp)) == 78


def test_cnp_icrc_changes_with_the_qp():
    """The ICRC really covers the BTH: two CNPs that differ only in the QP differ in
    their last four bytes (so a byte-exact comparison checks the switch's ICRC)."""
    a = bytes(tp.cnp_packet(tp.HOST1_MAC, "10.0.2.5", "10.0.1.1", 49999, 0x456))
    b = bytes(tp.cnp_packet(tp.HOST1_MAC, "10.0.2.5", "10.0.1.1", 49999, 0x457))
    assert a[:-4] != b[:-4] and a[-4:] != b[-4:]


def test_classify_and_forwarding_packets_match_stf():
    small = scenario("classify.stf", "small RoCE SEND to QP 0x123")
    assert small[0] == ("packet", 1, bytes(tp.roce("10.0.2.5", 0x123, 64)))
    assert small[1] == ("expect", 2, bytes(tp.roce("10.0.2.5", 0x123, 64, ttl=63,
                                                   smac=tp.ROUTER_MAC, dmac=tp.NH2_MAC)))
    big = scenario("classify.stf", "1200-byte RoCE SEND")
    assert big[1] == ("expect", 2, bytes(tp.roce("10.0.2.5", 0x123, 1200, ttl=63, dscp=24,
                                                 smac=tp.ROUTER_MAC, dmac=tp.NH2_MAC)))
    lpm = scenario("forwarding.stf", "longest prefix")
    assert lpm == [("packet", 1, bytes(tp.udp("10.0.2.7", 5000))),
                   ("expect", 2, bytes(tp.udp("10.0.2.7", 5000, ttl=63, smac=tp.ROUTER_MAC,
                                              dmac=tp.NH2_MAC)))]
    v6 = scenario("forwarding.stf", "IPv6 2001:db8::/32")
    assert v6 == [("packet", 1, bytes(tp.udp6("2001:db8:2::2", 2000))),
                  ("expect", 2, bytes(tp.udp6("2001:db8:2::2", 2000, hlim=63,
                                              smac=tp.ROUTER_MAC, dmac=tp.NH2_MAC)))]
    pfc = scenario("robustness.stf", "PFC pausing priorities 0 and 5")
    assert pfc == [("packet", 1, bytes(tp.pfc_frame(enable=0x21)))]


def test_int_record_round_trip():
    rec = tp.int_record(0xABCD, 1, 2, 5, qdepth=17, delta_us=99)
    frame = bytes(tp.int_probe([rec], 1, 4))
    assert tp.parse_int_record(frame) == {"switch_id": 0xABCD, "ingress_port": 1,
                                          "egress_port": 2, "queue": 5, "enq_qdepth": 17,
                                          "deq_timedelta": 99}


# ---------------------------------------------------------------- the runner
def _runner(*args: str, timeout: float = 1200) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(PTF_DIR / "run.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.startswith("tailcc-ptf-")}


def _own_namespace(output: str) -> str:
    """The namespace this run created (other runs may be going on at the same time)."""
    m = re.search(r"^ptf: network namespace (\S+)$", output, re.MULTILINE)
    assert m, f"the runner did not name its namespace:\n{output[-2000:]}"
    return m.group(1)


def test_runner_refuses_bmv2_without_json():
    res = _runner("--target", "bmv2")
    assert res.returncode == 2
    assert "--bmv2-json" in res.stderr or "simple_switch_grpc" in res.stderr


def test_runner_refuses_bad_ports():
    res = _runner("--ports", "1,x")
    assert res.returncode == 2 and "--ports" in res.stderr


@NEEDS_ROOT
def test_runner_cleans_up_after_a_failing_run(tmp_path: Path):
    """A test spec that names nothing: PTF fails, and still nothing is left behind."""
    res = _runner("--keep", str(tmp_path), "--", "no_such_module.NoSuchTest", timeout=300)
    assert res.returncode != 0
    assert _own_namespace(res.stdout) not in _namespaces()
    assert (tmp_path / "switch.out").exists()


@NEEDS_ROOT
def test_runner_without_netns_removes_its_veths(tmp_path: Path):
    """--no-netns: the runner works in the namespace it is given and deletes the veth
    pairs it created there (run here inside a scratch namespace of the test's own)."""
    namespace = f"tailcc-ptf-t{os.getpid()}"
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", namespace, "ip", "link", "set", "lo", "up"],
                       check=True)
        res = subprocess.run(["ip", "netns", "exec", namespace, sys.executable,
                              str(PTF_DIR / "run.py"), "--no-netns", "--ports", "1,2",
                              "--keep", str(tmp_path), "--", "robustness_test.PfcCountedTest"],
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
        assert "PASS robustness_test.PfcCountedTest" in (tmp_path / "results.txt").read_text()
        links = subprocess.run(["ip", "netns", "exec", namespace, "ip", "-o", "link"],
                               capture_output=True, text=True, check=True).stdout
        assert "veth" not in links, links
    finally:
        subprocess.run(["ip", "netns", "del", namespace], capture_output=True)


@NEEDS_ROOT
def test_runner_cleans_up_on_sigterm(tmp_path: Path):
    """SIGTERM in the middle of a run removes the namespace and stops the switch."""
    work, log = tmp_path / "work", tmp_path / "runner.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, str(PTF_DIR / "run.py"), "--keep", str(work),
                                 "--", "classify_test"], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (work / "switch.out").exists():
            time.sleep(0.2)
        assert (work / "switch.out").exists(), f"no switch started:\n{log.read_text()[-3000:]}"
        namespace = _own_namespace(log.read_text())
        assert namespace in _namespaces()
        time.sleep(2)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    output = log.read_text()[-3000:]
    assert proc.returncode != 0, output
    assert namespace not in _namespaces(), output
    pids = subprocess.run(["pgrep", "-f", "--", f"--pcap {work}/pcap"], capture_output=True,
                          text=True).stdout.split()
    assert not pids, f"switch processes left running: {pids}"


def known_failures() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in KNOWN_FAILURES.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, reason = line.partition(" ")
            out[name] = reason.strip()
    return out


@NEEDS_ROOT
@pytest.mark.timeout(1500)
def test_ptf_suites_on_softswitch(tmp_path: Path):
    """Every PTF test passes on softswitch, except the listed known failures (which
    must still fail: a fixed one must be taken off the list)."""
    res = _runner("--keep", str(tmp_path), timeout=1400)
    assert _own_namespace(res.stdout) not in _namespaces(), "the runner left its namespace"
    results_file = tmp_path / "results.txt"
    assert results_file.exists(), res.stdout[-3000:] + res.stderr[-3000:]
    results = dict(reversed(line.split(" ", 1)) for line in
                   results_file.read_text().splitlines())
    assert len(results) >= 20, f"too few PTF tests ran: {sorted(results)}"
    known = known_failures()
    unexpected = {n: v for n, v in results.items() if v != "PASS" and n not in known}
    stale = [n for n in known if results.get(n) == "PASS"]
    missing = [n for n in known if n not in results]
    log = re.sub(r"\n{3,}", "\n\n", res.stdout[-6000:])
    assert not unexpected, f"PTF tests that do not pass: {unexpected}\n{log}"
    assert not stale, f"known failures that pass now (remove them from {KNOWN_FAILURES}): {stale}"
    assert not missing, f"known failures naming no test: {missing}"
