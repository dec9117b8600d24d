"""The controller on real BMv2 (``simple_switch_grpc``), beside softswitch.

BMv2 grants only CONTINUE_ON_ERROR writes, so ``tailcc apply`` rolls back a failed apply
itself (``controlplane/p4rt/rollback.py``). These tests: apply the shipped intent files
and read them back (a second apply writes nothing); inject a refusal in a late phase
(a routing table compiled with 4 entries) and check that the switch reads exactly as
before — empty, or holding a previous intent, so DELETE and MODIFY are undone too — on
BMv2, on softswitch (atomic batches) and on softswitch with the controller's own
rollback forced; the same intent leaves the same entries on both targets; queue
settings reach BMv2 over Thrift and what BMv2 cannot do is refused or warned.

Fast CNP is on in the shipped intents: its one clone session (to the recirculation
port, no class of service) is taken by BMv2 as by softswitch.

Every switch is started by the test on free ports and stopped by its pid.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from bmv2_process import (
    bmv2_switches,
    compile_bmv2,
    free_port,
    read_everything,
    start_bmv2,
    wait_for_port,
)
from intents import forwarding

from controlplane.cli import main
from controlplane.intent import parse_intent_text
from controlplane.p4rt import Client, P4InfoIndex
from controlplane.p4rt.p4info import load_p4info
from controlplane.reconcile import Pipeline, reconcile_all

ROOT = Path(__file__).resolve().parents[1]
TAILCC = ROOT / "p4src/tailcc.p4"
SMALL = {"TAILCC_ROUTE_SIZE": "4"}       # routing_v4 holds 4 entries: a 5th is refused


def _understated(small: Pipeline, full: Pipeline) -> Pipeline:
    """The small device config under the full program's P4Info: the controller's
    capacity check sees room for 16384 routes, the target holds 4, so the refusal
    comes half-way through the writes (what a rollback must survive)."""
    return Pipeline(full.p4info, small.device_config)


# --- units: the schema and the traffic-manager plan ----------------------------------------
def test_target_key() -> None:
    from controlplane.intent import IntentError

    text = "switches: [{name: s, address: '127.0.0.1:1', device_id: 1%s}]\n"
    assert parse_intent_text(text % "", "t.yaml").switches[0].target == "softswitch"
    assert parse_intent_text(text % ", target: bmv2", "t.yaml").switches[0].target == "bmv2"
    with pytest.raises(IntentError) as info:
        parse_intent_text(text % ", target: tofino", "t.yaml")
    assert "switches[0].target: 'tofino' is not one of: softswitch, bmv2" in str(
        info.value.problems[0].format("t.yaml"))


def test_bmv2_plan_takes_rates_and_depths_and_refuses_the_rest() -> None:
    from controlplane.compile import compile_switch
    from controlplane.reconcile.tm_channel import plan_tm

    text = (ROOT / "controlplane/examples/two_leaf.yaml").read_text().replace(
        "    device_id: 1\n", "    device_id: 1\n    target: bmv2\n", 1)
    intent = parse_intent_text(text, "two_leaf.yaml")
    leaf1, leaf2 = intent.switches
    pipeline = _softswitch_pipeline()
    index = P4InfoIndex(pipeline.p4info)
    plan = plan_tm(leaf1, compile_switch(intent, leaf1, index))
    assert plan.target == "bmv2"
    assert plan.commands == [f"set_queue_rate 200000 {p} 5" for p in (1, 2, 3, 4)]
    assert len(plan.refused) == 3
    # ports refused alike are named once: a fabric's refusal is a line per reason
    assert plan.refused[0].startswith("link rates ports 1, 2 speed_gbps 100; ports 3, 4 "
                                      "speed_gbps 400: BMv2 has no port shaper")
    assert plan.refused[1].startswith("DWRR weights ports 1-4 (scheduler default) queue 4 "
                                      "weight 50, queue 3 weight 30, queue 2 weight 15, "
                                      "queue 1 weight 5, queue 0 weight 20: BMv2 serves")
    assert plan.refused[2].startswith("PFC thresholds ports 1-4 (scheduler default) "
                                      "priorities 3, 4, 5 xoff 48 xon 32: BMv2 has no PFC")
    # softswitch: the runtime channel's commands, as before
    soft = plan_tm(leaf2, compile_switch(intent, leaf2, index))
    assert soft.target == "softswitch" and not soft.refused
    assert "set_queue_weight 50 1 4" in soft.commands


# --- pipelines ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bmv2_build(reference_tools, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("build")
    compile_bmv2(reference_tools, TAILCC, out, "tailcc")
    compile_bmv2(reference_tools, TAILCC, out, "tailcc_small", SMALL)
    return out


def _bmv2_pipeline(build: Path, name: str) -> Pipeline:
    return Pipeline(load_p4info(str(build / f"{name}.p4.p4info.txtpb")),
                    (build / f"{name}.json").read_bytes())


def _softswitch_pipeline(defines: dict[str, str] | None = None) -> Pipeline:
    from softswitch.frontend.compiler import compile_program
    from softswitch.p4info import generate
    from softswitch.p4runtime.pipeline import make_artifact

    return Pipeline(generate(compile_program(str(TAILCC), defines=defines)),
                    make_artifact(str(TAILCC), defines).to_bytes())


@pytest.fixture()
def softswitch_server():
    from softswitch.daemon.device import Device
    from softswitch.daemon.rpc.server import serve

    srv, port = serve(Device(device_id=1, cpu_port=255), "127.0.0.1:0")
    yield f"127.0.0.1:{port}", 1
    srv.stop(0).wait()


# --- intents -----------------------------------------------------------------------------
def derived_intent(path: Path, switches: dict[str, tuple[str, int]], tmp_path: Path,
                   extra: dict | None = None, name: str | None = None) -> Path:
    """A shipped intent file with the test's switch addresses."""
    data = yaml.safe_load(path.read_text())
    base = data.get("base")
    if isinstance(base, str) and (path.parent / base).is_file():
        data["base"] = str((path.parent / base).resolve())
    for entry in data["switches"]:
        entry["address"], entry["device_id"] = switches[entry["name"]]
        entry.update((extra or {}).get(entry["name"], {}))
    out = tmp_path / (name or path.name)
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


INTENT_A = """
base: default
switches:
  - name: sw
    address: {address}
    device_id: {device_id}
    router_mac: "00:aa:00:00:00:01"
    ports: [1, 2, 3]
""" + forwarding([("h1", 1, "00:00:00:00:00:01"), ("h2", 2, "00:00:00:00:00:02"),
                ("h3", 3, "00:00:00:00:00:03")],
               [("10.0.1.0/24", "h1"), ("10.0.2.0/24", "h2"), ("10.0.3.0/24", "h3")])

# B deletes 10.0.3/24 and an ECN profile entry (phase 1), adds ECMP members and a group
# (phases 2-3), modifies 10.0.1/24, the default class and the classes whose ECN profile
# id changes, adds a tenant and 3 routes (phase 5): 2 + 3 routes do not fit in 4
# entries, so a route insert is refused after most of the rest went in.
INTENT_B = """
base: default
ecn_profiles:
  - {{name: latency,   id: 1, kmin: 3,  kmax: 8,  pmax: 0.5}}
  - {{name: inference, id: 2, kmin: 5,  kmax: 20, pmax: 0.2}}
  - {{name: early,     id: 3, kmin: 4,  kmax: 32, pmax: 0.1}}
  - {{name: bulk,      id: 4, kmin: 20, kmax: 50, pmax: 0.1}}
  - {{name: lossy,     id: 6, kmin: 30, kmax: 60, pmax: 0.05, drop_not_ect: 48}}
tenants:
  - {{name: t, vrf: 7, default: deny, rules: [{{src: 10.7.0.1/32, action: allow}}]}}
switches:
  - name: sw
    address: {address}
    device_id: {device_id}
    router_mac: "00:aa:00:00:00:01"
    ports: [1, 2, {{port: 3, tenant: t}}]
""" + forwarding([("h1", 1, "00:00:00:00:00:01"), ("h2", 2, "00:00:00:00:00:02"),
                ("h3", 3, "00:00:00:00:00:03")],
               [("10.0.1.0/24", "h2"), ("10.0.2.0/24", "h2"), ("10.0.4.0/24", "h1"),
                ("10.0.5.0/24", "g"), ("10.0.6.0/24", "h3")],
               {"g": ["h1", "h3"]})


def _intent(text: str, address: str, device_id: int):
    return parse_intent_text(text.format(address=address, device_id=device_id), "t.yaml")


def _everything(address: str, device_id: int) -> list[str]:
    with Client(address, device_id, election_id=50) as c:
        p4info = c.get_p4info()
        assert p4info is not None
        return read_everything(c, P4InfoIndex(p4info))


def _load(address: str, device_id: int, pipeline: Pipeline) -> None:
    with Client(address, device_id, election_id=50) as c:
        c.set_pipeline(pipeline.p4info, pipeline.device_config)


# --- apply / diff / watch with the shipped intent files ----------------------------------
@pytest.mark.parametrize("intent_file", [
    "topologies/single_intent.yaml", "topologies/leaf_spine_intent.yaml",
    "controlplane/examples/two_leaf.yaml"])
def test_shipped_intents_apply_on_bmv2_and_reapply_writes_nothing(
        reference_tools, bmv2_build, tmp_path, capsys, intent_file) -> None:
    path = ROOT / intent_file
    names = [s["name"] for s in yaml.safe_load(path.read_text())["switches"]]
    pipe = ["--pipeline", str(bmv2_build / "tailcc.json"),
            "--p4info", str(bmv2_build / "tailcc.p4.p4info.txtpb")]
    with bmv2_switches(reference_tools, tmp_path, len(names)) as switches:
        where = {n: (sw.address, sw.device_id) for n, sw in zip(names, switches, strict=True)}
        intent = derived_intent(path, where, tmp_path)
        assert main(["diff", str(intent), *pipe]) == 0
        assert "pipeline would be (re)loaded" in capsys.readouterr().out
        assert main(["apply", str(intent), *pipe, "-q"]) == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        assert out.count("pipeline loaded") == len(names), out
        # read back: exactly the entities the intent compiles to, on every switch
        results = reconcile_all(parse_intent_text(intent.read_text(), str(intent)), None,
                                dry_run=True)
        for r in results:
            assert r.error is None, r.error
            assert not r.plan, [c.kind for c in r.plan.changes]
            held = _everything(*where[r.switch])
            assert len(held) >= len(r.desired.entities), (r.switch, held)
        assert main(["apply", str(intent)]) == 0
        out = capsys.readouterr().out
        assert out.count("in sync, nothing to write") == len(names), out
        assert main(["diff", str(intent)]) == 0
        assert "would write" not in capsys.readouterr().out
        assert main(["watch", "-i", str(intent), "-s", names[0], "--count", "1",
                     "--interval", "0.2"]) == 0
        assert "(no traffic)" in capsys.readouterr().out


# --- a refusal midway rolls everything back --------------------------------------------------
TARGETS = ["bmv2", "softswitch", "softswitch-self-rollback"]


@pytest.fixture(params=TARGETS)
def small_switch(request, tmp_path):
    """(address, device id, pipeline with a 4-entry routing_v4, atomic_writes option,
    target name)."""
    if request.param == "bmv2":
        tools = request.getfixturevalue("reference_tools")
        build = request.getfixturevalue("bmv2_build")
        sw = start_bmv2(tools, tmp_path)
        try:
            yield (sw.address, sw.device_id,
                   _understated(_bmv2_pipeline(build, "tailcc_small"),
                                _bmv2_pipeline(build, "tailcc")), None, request.param)
        finally:
            sw.stop()
        return
    address, device_id = request.getfixturevalue("softswitch_server")
    atomic = False if request.param == "softswitch-self-rollback" else None
    yield (address, device_id, _understated(_softswitch_pipeline(SMALL),
                                            _softswitch_pipeline()), atomic, request.param)


@pytest.mark.parametrize("previous", ["empty", "previous-intent"])
def test_refused_update_midway_leaves_the_switch_exactly_as_before(small_switch,
                                                                   previous) -> None:
    address, device_id, pipeline, atomic, target = small_switch
    _load(address, device_id, pipeline)
    if previous == "previous-intent":
        [first] = reconcile_all(_intent(INTENT_A, address, device_id), pipeline,
                                atomic_writes=atomic)
        assert first.error is None and first.written > 20, first.error
    before = _everything(address, device_id)

    intent_b = _intent(INTENT_B, address, device_id)
    [plan] = reconcile_all(intent_b, pipeline, dry_run=True)
    kinds = {c.kind for c in plan.plan.changes}
    phases = len(plan.plan.phases)
    [result] = reconcile_all(intent_b, pipeline, atomic_writes=atomic)

    assert result.error is not None
    # the message names the refused update and the target's reason ...
    assert "the switch refused INSERT" in result.error, result.error
    assert "routing_v4" in result.error and "10.0." in result.error, result.error
    assert _everything(address, device_id) == before
    if "nothing was written" in result.error:
        # an atomic target refused the whole batch: the first phase, on an empty switch
        assert target == "softswitch", result.error
    else:
        # the controller's own rollback: other updates had gone in, were taken back,
        # and the rollback was verified by reading the switch back
        assert "the switch reads as before" in result.error, result.error
        undone = re.search(r"rolled back the (\d+) update", result.error)
        assert phases >= 2 and undone and int(undone.group(1)) > 0, result.error
    if previous == "previous-intent":
        assert kinds == {"INSERT", "MODIFY", "DELETE"}

    # the switch is still usable: the fitting intent applies after the failure
    [again] = reconcile_all(_intent(INTENT_A, address, device_id), pipeline,
                            atomic_writes=atomic)
    assert again.error is None, again.error


def test_bmv2_is_learned_as_not_granting_atomic_writes(reference_tools, bmv2_build,
                                                      tmp_path, softswitch_server) -> None:
    sw = start_bmv2(reference_tools, tmp_path)
    try:
        _load(sw.address, sw.device_id, _bmv2_pipeline(bmv2_build, "tailcc"))
        with Client(sw.address, sw.device_id, election_id=3) as c:
            assert c.grants_atomic_writes() is False
        with Client(sw.address, sw.device_id, election_id=3) as c:
            # no probe: the first atomic batch's UNIMPLEMENTED answer teaches it
            c.atomic_writes = True
            index = P4InfoIndex(c.get_p4info())
            from controlplane.p4rt import EntityBuilder
            from controlplane.p4rt.client import update
            from controlplane.p4rt.rollback import Transaction
            b = EntityBuilder(index)
            tx = Transaction(c, index)
            tx.write([update("INSERT", b.table_entry(
                "routing_v4", match={"vrf": 0, "ipv4_dst": f"10.9.{i}.0/24"},
                action="drop")) for i in range(3)])
            assert c.atomic_writes is False and tx.written == 3
    finally:
        sw.stop()
    address, device_id = softswitch_server
    with Client(address, device_id) as c:
        assert c.grants_atomic_writes() is True


def test_a_batch_with_many_refused_updates_names_each_on_bmv2(reference_tools, bmv2_build,
                                                              tmp_path) -> None:
    """BMv2 too answers 500 refused updates with ~50 KB of per-update errors in the
    trailers: the controller's channel takes them (gRPC's default 16 KiB did not)."""
    from controlplane.p4rt import EntityBuilder
    from controlplane.p4rt.client import update
    from controlplane.p4rt.errors import P4RuntimeWriteError

    sw = start_bmv2(reference_tools, tmp_path)
    try:
        _load(sw.address, sw.device_id, _bmv2_pipeline(bmv2_build, "tailcc"))
        with Client(sw.address, sw.device_id, election_id=3) as c:
            b = EntityBuilder(P4InfoIndex(c.get_p4info()))
            absent = [update("DELETE", b.table_entry(
                "routing_v4", match={"vrf": 0, "ipv4_dst": f"10.{i >> 8}.{i & 255}.0/24"},
                action="drop")) for i in range(500)]
            with pytest.raises(P4RuntimeWriteError) as info:
                c.write(absent)
            assert len(info.value.errors) == 500
            assert {code for _, code, _ in info.value.errors} == {"NOT_FOUND"}
    finally:
        sw.stop()


def test_a_table_over_4_mib_reads_back_from_bmv2(reference_tools, tmp_path) -> None:
    """BMv2 answers a Read in one message: 60k routes with their next hop come to
    ~5 MB, over gRPC's default 4 MiB for a received message. The controller's channel
    takes it, so `tailcc apply` can read (and reconcile) a switch with a big table."""
    from controlplane.p4rt import EntityBuilder
    from controlplane.p4rt.client import update

    compile_bmv2(reference_tools, TAILCC, tmp_path / "build", "tailcc_big",
                 {"TAILCC_ROUTE_SIZE": "65536"})
    sw = start_bmv2(reference_tools, tmp_path)
    try:
        _load(sw.address, sw.device_id, _bmv2_pipeline(tmp_path / "build", "tailcc_big"))
        with Client(sw.address, sw.device_id, election_id=3) as c:
            b = EntityBuilder(P4InfoIndex(c.get_p4info()))
            nexthop = {"port": 1, "smac": "02:00:00:00:00:01", "dmac": "02:00:00:00:00:02"}
            routes = [update("INSERT", b.table_entry(
                "routing_v4", match={"vrf": 0, "ipv4_dst": f"10.{i >> 8}.{i & 255}.0/24"},
                action="set_nexthop", params=nexthop)) for i in range(60_000)]
            for start in range(0, len(routes), 5000):
                c.write(routes[start:start + 5000])
            got = list(c.read([b.table_wildcard("routing_v4")]))
            assert len(got) == 60_000
            assert sum(e.ByteSize() for e in got) > 4 << 20
            assert _read_through_shell_client(sw, b.table_wildcard("routing_v4")) == 60_000
    finally:
        sw.stop()


def _read_through_shell_client(sw, table_entry) -> int:
    """Entities read by p4runtime-shell's own client (what `tailcc shell` runs), its
    channel opened under ``shell_channel_limits`` as `tailcc shell` opens it."""
    from p4.v1 import p4runtime_pb2
    from p4runtime_sh.p4runtime import P4RuntimeClient

    from controlplane.commands.interactive import shell_channel_limits

    with shell_channel_limits():
        client = P4RuntimeClient(sw.device_id, sw.address, (0, 2))   # a backup: reads
    try:
        request = p4runtime_pb2.ReadRequest(
            device_id=sw.device_id, entities=[p4runtime_pb2.Entity(table_entry=table_entry)])
        return sum(len(r.entities) for r in client.stub.Read(request))
    finally:
        client.tear_down()


# --- one intent, the same entries on softswitch and on BMv2 ---------------------------------
@pytest.fixture()
def softswitch_process(tmp_path):
    grpc_port, thrift_port = free_port(), free_port()
    log = open(tmp_path / "softswitch.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "softswitch", "run", "--no-p4", "--thrift-port",
         str(thrift_port), "--", "--grpc-server-addr", f"127.0.0.1:{grpc_port}",
         "--cpu-port", "255", "--priority-queues", "8"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(grpc_port, proc, 60)
        yield f"127.0.0.1:{grpc_port}", f"127.0.0.1:{thrift_port}"
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


def test_same_intent_same_entries_on_softswitch_and_bmv2(reference_tools, bmv2_build,
                                                        softswitch_process, tmp_path,
                                                        capsys) -> None:
    soft_address, _ = softswitch_process
    path = ROOT / "controlplane/examples/two_leaf.yaml"
    with bmv2_switches(reference_tools, tmp_path) as [bm]:
        nowhere = ("127.0.0.1:1", 9)       # leaf2 is not applied (-s leaf1)
        bm_intent = derived_intent(path, {"leaf1": (bm.address, bm.device_id),
                                          "leaf2": nowhere}, tmp_path, name="bm.yaml")
        soft_intent = derived_intent(path, {"leaf1": (soft_address, 0), "leaf2": nowhere},
                                     tmp_path, name="soft.yaml")
        assert main(["apply", str(bm_intent), "-s", "leaf1", "-q", "--pipeline",
                     str(bmv2_build / "tailcc.json"), "--p4info",
                     str(bmv2_build / "tailcc.p4.p4info.txtpb")]) == 0
        assert main(["apply", str(soft_intent), "-s", "leaf1", "-q", "--pipeline",
                     str(TAILCC)]) == 0, capsys.readouterr().err
        on_bmv2 = _everything(bm.address, bm.device_id)
    on_softswitch = _everything(soft_address, 0)
    assert len(on_bmv2) > 30
    assert on_bmv2 == on_softswitch


# --- queue settings on BMv2 ---------------------------------------------------------------------
QUEUE_INTENT = """
base: default
schedulers:
  - name: tiny
    queues: {{0: {{mode: strict, rate_pps: 50, depth_pkts: {depth}}}}}
  - name: shared
    queues: {{0: {{mode: dwrr, weight: 10}}, 1: {{mode: dwrr, weight: 30}}}}
switches:
  - name: bm
    target: bmv2
    address: {address}
    device_id: {device_id}
    runtime_address: {thrift}
    router_mac: "00:aa:00:00:00:01"
    ports: [1, {{port: 2, scheduler: {scheduler}}}]
""" + forwarding([("h2", 2, "00:00:00:00:00:02")],
               [("10.0.2.0/24", "h2")])


def _queue_intent(tmp_path: Path, sw, depth: int, scheduler: str = "tiny") -> Path:
    path = tmp_path / f"q-{depth}-{scheduler}.yaml"
    path.write_text(QUEUE_INTENT.format(address=sw.address, device_id=sw.device_id,
                                        thrift=sw.thrift_address, depth=depth,
                                        scheduler=scheduler))
    return path


def _frame(seq: int) -> bytes:
    """UDP 10.0.1.1 -> 10.0.2.2 to the router MAC, best effort (queue 0)."""
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether

    return bytes(Ether(dst="00:aa:00:00:00:01", src="00:00:00:00:00:01")
                 / IP(src="10.0.1.1", dst="10.0.2.2", tos=0) / UDP(sport=1000 + seq,
                                                                  dport=7777)
                 / bytes(60))


def _burst_through(port_in: str, port_out: str, count: int) -> int:
    from softswitch.daemon.ports.afpacket import RawPort

    tx, rx = RawPort(port_in), RawPort(port_out)
    for seq in range(count):
        assert tx.send(_frame(seq))
    got, deadline = 0, time.monotonic() + 4
    while time.monotonic() < deadline:
        frame = rx.receive()
        if frame is None:
            time.sleep(0.002)
        elif frame[12:14] == b"\x08\x00" and frame[36:38] == (7777).to_bytes(2, "big"):
            got += 1
    return got


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for veth/AF_PACKET")
def test_queue_depth_and_rate_reach_bmv2_over_thrift(reference_tools, bmv2_build,
                                                     tmp_path, capsys) -> None:
    from softswitch.daemon.ports.veth import veth_pairs

    pipe = ["--pipeline", str(bmv2_build / "tailcc.json"),
            "--p4info", str(bmv2_build / "tailcc.p4.p4info.txtpb")]
    with veth_pairs(2, "tq") as pairs:
        sw = start_bmv2(reference_tools, tmp_path, {1: pairs[0][0], 2: pairs[1][0]})
        try:
            # queue 0 of port 2 drains 50 packets/s and holds 4: a burst of 40 mostly drops
            assert main(["apply", str(_queue_intent(tmp_path, sw, 4)), *pipe, "-q"]) == 0
            assert "2 queue/link settings" in capsys.readouterr().out
            shallow = _burst_through(pairs[0][1], pairs[1][1], 40)
            # the same with a deep queue: every packet gets through (at 50/s)
            assert main(["apply", str(_queue_intent(tmp_path, sw, 64)), "-q"]) == 0
            capsys.readouterr()
            time.sleep(0.5)
            deep = _burst_through(pairs[0][1], pairs[1][1], 40)
            # 4 held + 1 in service + what drains at 50/s while BMv2 takes the burst in
            # (11 seen with the machine's load at 6: ingress spreads the burst); without
            # the depth every one of the 40 gets through, as with the deep queue below
            assert 2 <= shallow <= 20, shallow
            assert deep >= 38, deep
            # the queue's watermark register, read over Thrift (P4Runtime cannot on BMv2)
            intent = _queue_intent(tmp_path, sw, 64)
            assert main(["watch", "-i", str(intent), "--count", "1", "--interval",
                         "0.2"]) == 0
            assert "not read" not in capsys.readouterr().out
            from controlplane.reconcile.bmv2_thrift import Bmv2Thrift
            with Bmv2Thrift(sw.thrift_address) as thrift:
                name = P4InfoIndex(load_p4info(pipe[3])).register(
                    "queue_depth_watermark").preamble.name
                watermark = thrift.register_read(name, 2 * 8 + 0)
            assert watermark >= 20, watermark    # the deep queue built up
        finally:
            sw.stop()


def test_queue_beyond_the_priority_queues_rolls_the_apply_back(reference_tools, bmv2_build,
                                                               tmp_path, capsys) -> None:
    """BMv2 started with 1 priority queue: setting queue 5 fails over Thrift after the
    P4Runtime writes went in, so the whole apply is rolled back."""
    pipe = ["--pipeline", str(bmv2_build / "tailcc.json"),
            "--p4info", str(bmv2_build / "tailcc.p4.p4info.txtpb")]
    sw = start_bmv2(reference_tools, tmp_path, priority_queues=1)
    try:
        intent = _queue_intent(tmp_path, sw, 8)
        intent.write_text(intent.read_text().replace("queues: {0: {mode: strict",
                                                     "queues: {5: {mode: strict"))
        _load(sw.address, sw.device_id, _bmv2_pipeline(bmv2_build, "tailcc"))
        before = _everything(sw.address, sw.device_id)
        assert main(["apply", str(intent), *pipe, "-q"]) == 1
        out = capsys.readouterr().out
        assert "set_queue_rate 50 2 5 refused: TApplicationException" in out, out
        assert "start simple_switch_grpc with -- --priority-queues 8" in out
        assert "rolled back the" in out and "the switch reads as before" in out
        assert _everything(sw.address, sw.device_id) == before
    finally:
        sw.stop()


def test_dwrr_on_bmv2_is_refused_or_warned_with_allow_partial(reference_tools, bmv2_build,
                                                             tmp_path, capsys) -> None:
    pipe = ["--pipeline", str(bmv2_build / "tailcc.json"),
            "--p4info", str(bmv2_build / "tailcc.p4.p4info.txtpb")]
    sw = start_bmv2(reference_tools, tmp_path)
    try:
        intent = _queue_intent(tmp_path, sw, 8, "shared")
        assert main(["apply", str(intent), *pipe]) == 1
        out = capsys.readouterr().out
        assert "bm: FAILED: switch bm (target bmv2) cannot take these settings" in out
        assert "DWRR weights port 2 (scheduler shared) queue 1 weight 30, queue 0 " \
               "weight 10: BMv2 serves its priority queues in strict priority only" in out
        assert "strict priority only" in out and "nothing was written" in out
        # nothing was written: the pipeline was not even loaded
        with Client(sw.address, sw.device_id) as c:
            assert c.get_p4info() is None
        assert main(["apply", str(intent), *pipe, "--allow-partial"]) == 0
        out = capsys.readouterr().out
        assert "warning: not applied on bmv2: DWRR weights port 2 (scheduler shared) " \
               "queue 1 weight 30" in out
        assert "pipeline loaded" in out
        # an unreachable Thrift port fails before any write
        sw_thrift = sw.thrift_address
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            dead = f"127.0.0.1:{s.getsockname()[1]}"
        intent.write_text(intent.read_text().replace(sw_thrift, dead).replace(
            "10.0.2.0/24", "10.0.9.0/24"))
        before = _everything(sw.address, sw.device_id)
        assert main(["apply", str(intent), "--allow-partial"]) == 1
        assert "does not answer" in capsys.readouterr().out
        assert _everything(sw.address, sw.device_id) == before
    finally:
        sw.stop()


def test_bmv2_target_on_softswitch_applies_over_its_thrift_api(softswitch_process,
                                                                tmp_path, capsys) -> None:
    """``target: bmv2`` whose runtime_address is softswitch's --thrift-port: softswitch
    answers BMv2's Thrift runtime API there beside its own channel, so the controller's
    BMv2 way (the Thrift check, the PRE, queue depths and rates) applies the intent. A
    runtime_address that does not speak Thrift (here the gRPC port) fails the check
    before the pipeline or any entry is written."""
    pytest.importorskip("bm_runtime.standard", reason="BMv2's generated Thrift modules "
                        "are not installed")
    address, channel = softswitch_process

    class Fake:
        pass
    sw = Fake()
    sw.address, sw.device_id, sw.thrift_address = address, 0, address
    intent = _queue_intent(tmp_path, sw, 8)
    assert main(["apply", str(intent), "--pipeline", str(TAILCC), "--timeout", "3"]) == 1
    out = capsys.readouterr().out
    assert "is this simple_switch's --thrift-port?" in out, out
    with Client(address, 0) as c:
        assert c.get_p4info() is None
    sw.thrift_address = channel
    intent = _queue_intent(tmp_path, sw, 8)
    code = main(["apply", str(intent), "--pipeline", str(TAILCC), "--timeout", "10"])
    assert code == 0, capsys.readouterr().out
    with Client(address, 0) as c:
        assert c.get_p4info() is not None


def test_new_pipeline_on_bmv2_leaves_one_clone_replica(reference_tools, bmv2_build,
                                                       tmp_path) -> None:
    """BMv2's P4Runtime server forgets its clone sessions when a pipeline is loaded, but
    its replication engine keeps their nodes: written again, the Fast CNP session would
    replicate every clone twice. The controller empties the PRE over Thrift after each
    pipeline load, so after two loads there is exactly one replica (port 510)."""
    import json

    from controlplane.reconcile.bmv2_thrift import Bmv2Thrift

    sw = start_bmv2(reference_tools, tmp_path)
    try:
        text = INTENT_A.replace("    router_mac:", "    runtime_address: {thrift}\n"
                                "    target: bmv2\n    router_mac:")
        intent = parse_intent_text(text.format(address=sw.address, device_id=sw.device_id,
                                                thrift=sw.thrift_address), "t.yaml")
        for name in ("tailcc", "tailcc_small", "tailcc"):      # three pipeline loads
            [result] = reconcile_all(intent, _bmv2_pipeline(bmv2_build, name))
            assert result.error is None and result.pipeline_loaded, result.error
        with Bmv2Thrift(sw.thrift_address) as thrift:
            dump = json.loads(thrift._pre.bm_mc_get_entries(0))
        assert [len(g["l1_handles"]) for g in dump["mgrps"]] == [1], dump
        assert [n["ports"] for n in dump["l2_handles"]] == [[510]], dump
    finally:
        sw.stop()


@pytest.mark.parametrize("dry_run", [True, False])
def test_an_intent_that_does_not_fit_is_refused_before_writing(softswitch_server,
                                                                dry_run: bool) -> None:
    """Table sizes come from the P4Info: 5 routes into a 4-entry routing_v4 are refused
    up front, naming the table and the numbers, by --dry-run too, with nothing written."""
    address, device_id = softswitch_server
    pipeline = _softswitch_pipeline(SMALL)
    _load(address, device_id, pipeline)
    before = _everything(address, device_id)
    [result] = reconcile_all(_intent(INTENT_B, address, device_id), pipeline,
                             dry_run=dry_run)
    assert result.error is not None
    assert "TailccIngress.forwarding.routing_v4: 5 entries needed, the table holds 4" \
        in result.error, result.error
    assert "nothing was written" in result.error
    assert _everything(address, device_id) == before
