"""The PTF suites (ptf_tests/): their packets, their runner, and a full run.

- The suites' scapy builders must produce byte for byte what the STF suite
  (tests/p4/*.stf, from tests/p4/gen_tailcc_stf.py) sends and expects for the same
  scenarios, so the PTF and STF suites test the same behaviour and an error in either
  reference shows up here.
- The runner's command line refuses what cannot work, and it always removes its
  namespace, veths and switch (after a pass, a failure, or SIGTERM).
- The full run (``ptf_tests/run.py``), on softswitch and on BMv2 (real p4c and
  simple_switch_grpc, from the ``reference_tools`` fixture), must pass every test
  except those listed for that target: known failures in
  ``ptf_tests/known_failures.txt``, skips for a softswitch extension in the "Target
  differences" table of ``ptf_tests/README.md`` (both read by
  ``ptf_tests/expectations.py``). Every listed test must still fail or skip (a stale
  entry is an error, so the lists only shrink).
"""

from __future__ import annotations

import ast
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

from ptf_tests import expectations  # noqa: E402
from ptf_tests import tailcc_packets as tp  # noqa: E402

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
    assert len(bytes(rec)) == 16
    frame = bytes(tp.int_probe([rec, tp.int_record(0x1111, 7, 8, 3)], max_hops=4))
    assert frame[tp.INT_RECORD_OFFSET - 4:tp.INT_RECORD_OFFSET] == bytes([2, 4, 0, 0])
    hop = tp.parse_int_record(frame)
    assert (hop.switch_id, hop.ingress_port, hop.egress_port, hop.queue_id, hop.enq_qdepth,
            hop.deq_timedelta) == (0xABCD, 1, 2, 5, 17, 99)
    assert tp.parse_int_record(frame, 1).switch_id == 0x1111
    assert bytes(tp.Ether(frame)[tp.IntShim].payload) == b"\x77" * 24


def _stf_lines(name: str, prefix: str) -> list[tuple[str, int, str]]:
    """The packet/expect lines of one scenario as hex strings, masks (``*``) kept."""
    out: list[tuple[str, int, str]] = []
    current = None
    for line in (STF_DIR / name).read_text().splitlines():
        if line.startswith("# "):
            current = line[2:].startswith(prefix)
        elif line.startswith(("packet ", "expect ")) and current:
            kind, port, data = line.split()[:3]
            out.append((kind, int(port), data.upper()))
    assert out, f"{name}: no scenario starting with {prefix!r}"
    return out


def _masked_equal(stf_hex: str, data: bytes) -> bool:
    ours = data.hex().upper()
    return len(ours) == len(stf_hex) and all(a in ("*", b) for a, b in zip(stf_hex, ours,
                                                                           strict=True))


def test_int_probes_match_stf():
    """INT probes and hop records through the scapy layers = the STF suite's bytes
    (the record's varying queue fields are masked there, and only there)."""
    earlier = tp.int_record(0x1111, 7, 8, 5)
    mine = tp.int_record(0xABCD, 1, 2, 0)
    out = dict(ttl=63, smac=tp.ROUTER_MAC, dmac=tp.NH2_MAC)
    for prefix, records, max_hops, records_out in (
            ("probe with no records", [], 4, [mine]),
            ("probe with one record", [earlier], 4, [mine, earlier]),
            ("probe at its max_hops", [earlier], 1, [earlier])):
        (k1, p1, sent), (k2, p2, expect) = _stf_lines("packetio_int.stf", prefix)
        assert (k1, p1, sent) == ("packet", 1, bytes(tp.int_probe(records, max_hops=max_hops))
                                  .hex().upper())
        assert (k2, p2) == ("expect", 2)
        assert _masked_equal(expect, bytes(tp.int_probe(records_out, max_hops=max_hops,
                                                        **out))), prefix


def test_pause_and_pfc_frames_are_scapy_mac_control():
    """PFC and PAUSE come from scapy.contrib.mac_control and read back as such."""
    from scapy.contrib.mac_control import MACControlClassBasedFlowControl, MACControlPause

    pfc = tp.Ether(bytes(tp.pfc_frame(enable=0x21, quanta=7)))
    assert len(bytes(pfc)) == 60 and pfc.type == 0x8808
    body = pfc[MACControlClassBasedFlowControl]
    assert [getattr(body, f"c{i}_enabled") for i in range(8)] == [1, 0, 0, 0, 0, 1, 0, 0]
    assert {getattr(body, f"c{i}_pause_time") for i in range(8)} == {7}
    pause = tp.Ether(bytes(tp.pause_frame(quanta=0x100)))
    assert len(bytes(pause)) == 60 and pause[MACControlPause].pause_time == 0x100


def _ptf_test_names() -> set[str]:
    """module.Class of every PTF test class (by source, without importing PTF)."""
    names = set()
    for path in PTF_DIR.glob("*_test.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(n, ast.FunctionDef) and n.name == "runTest" for n in node.body):
                names.add(f"{path.stem}.{node.name}")
    return names


def test_expectation_lists_name_real_tests_and_extensions():
    """known_failures.txt and the README's table parse, and name existing tests and
    (for skips) a softswitch extension the suites' base knows."""
    from ptf_tests.tailcc_base import TARGET_EXTENSIONS

    tests = _ptf_test_names()
    assert len(tests) >= 20
    for target in expectations.TARGETS:
        listed = expectations.expected(target)
        assert set(listed) <= tests, f"{target}: {sorted(set(listed) - tests)}"
        for name, e in listed.items():
            assert e.reason, name
            if e.verdict == "SKIP":
                assert e.extension in TARGET_EXTENSIONS, (name, e.extension)
    assert "scheduling_test.StrictPriorityOrderTest" in expectations.documented_skips()["bmv2"]


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


def test_runner_refuses_bmv2_without_the_tools(tmp_path: Path):
    """No p4c/BMv2 anywhere (and no bundle to install them from): a usage error that
    says how to get them."""
    env = dict(os.environ, P4LANG_PREFIX=str(tmp_path), P4LANG_INSTALLER=str(tmp_path / "no"),
               PATH=os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                                    if not (Path(d) / "simple_switch_grpc").exists()))
    res = subprocess.run([sys.executable, str(PTF_DIR / "run.py"), "--target", "bmv2"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert res.returncode == 2, res.stderr
    assert "reference p4c/BMv2" in res.stderr


def test_runner_refuses_a_bmv2_json_for_softswitch(tmp_path: Path):
    res = _runner("--bmv2-json", str(tmp_path / "x.json"))
    assert res.returncode == 2 and "--target bmv2" in res.stderr


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


def _run_whole_suite(target: str, tmp_path: Path, *args: str) -> None:
    """The whole suite on ``target``; every test passes or is listed for the target."""
    res = _runner("--target", target, "--keep", str(tmp_path), *args, timeout=1400)
    assert _own_namespace(res.stdout) not in _namespaces(), "the runner left its namespace"
    results_file = tmp_path / "results.txt"
    assert results_file.exists(), res.stdout[-3000:] + res.stderr[-3000:]
    results = expectations.read_results(results_file)
    assert len(results) >= 20, f"too few PTF tests ran: {sorted(results)}"
    verdict = expectations.check(target, results)
    log = re.sub(r"\n{3,}", "\n\n", res.stdout[-6000:])
    assert verdict.ok, f"{target}:\n{verdict.describe()}\n{log}"


@NEEDS_ROOT
@pytest.mark.timeout(1500)
def test_ptf_suites_on_softswitch(tmp_path: Path):
    """Every PTF test passes on softswitch, except the listed ones (which must still
    fail or skip: a fixed one must be taken off the list)."""
    _run_whole_suite("softswitch", tmp_path)


@NEEDS_ROOT
@pytest.mark.timeout(1500)
def test_ptf_suites_on_bmv2(tmp_path: Path, reference_tools):
    """The same suite on real BMv2: tailcc.p4 compiled by p4c-bm2-ss, simple_switch_grpc
    as the switch, p4c's P4Info; every test passes except the ones listed for bmv2."""
    build = tmp_path / "build"
    build.mkdir()
    json, p4info = build / "tailcc.json", build / "tailcc.p4info.txtpb"
    proc = subprocess.run([reference_tools.p4c, "--arch", "v1model", "-o", str(json),
                           "--p4runtime-files", str(p4info),
                           str(ROOT / "p4src" / "tailcc.p4")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _run_whole_suite("bmv2", tmp_path / "run", "--bmv2-json", str(json), "--p4info",
                     str(p4info))


@NEEDS_ROOT
@pytest.mark.timeout(600)
def test_nic_ptf_suite_on_softswitch(tmp_path: Path):
    """ptf_tests/nic/ against the tailcc NIC under `softswitch run` (host port 1,
    network port 2, loopback 9): every test passes."""
    res = _runner("--suite", "nic", "--keep", str(tmp_path), timeout=500)
    assert _own_namespace(res.stdout) not in _namespaces(), "the runner left its namespace"
    results = expectations.read_results(tmp_path / "results.txt")
    assert len(results) >= 8, f"too few NIC PTF tests ran: {sorted(results)}"
    failed = {name: v for name, v in results.items() if v.verdict != "PASS"}
    assert not failed, f"{failed}\n{res.stdout[-4000:]}"


def test_nic_suite_refuses_bmv2_and_other_ports():
    for args, message in ((["--suite", "nic", "--target", "bmv2"], "softswitch only"),
                          (["--suite", "nic", "--ports", "1,2,3"], "the NIC's ports")):
        res = _runner(*args, timeout=60)
        assert res.returncode != 0 and message in res.stderr, res.stderr
