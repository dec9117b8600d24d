"""p4lang/tutorials' ``topology.json`` run as written: ``python -m topologies topology.json``.

``topologies/triangle`` is a tutorials exercise of the project's own: three switches
(s1 programmed from a runtime JSON, s2 from a runtime JSON and a ``program``, s3 from a
``cli_input`` file of simple_switch_CLI commands), hosts whose ``commands`` are the
tutorials' ``route``/``arp`` lines on ``eth0``, links with bandwidth and zero latency.
Run from the exercise folder as ``make run`` is, it comes up on softswitch and on BMv2
and every host pair pings; logs land in ``logs/`` and pcaps in ``pcaps/``; a link
with latency comes up where the kernel has netem and is refused with that reason where
it has not; ``--cli`` opens Mininet's CLI. Ports are moved to free ones (the
``grpc_port``/``thrift_port`` extension keys) so the runs never meet another switch.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_topologies import mininet_missing

from softswitch.local_port import free_port
from topologies.runner import kernel_has_netem, leftovers_of
from topologies.schema import TopologyError
from topologies.tutorials import load_exercise

ROOT = Path(__file__).resolve().parent.parent
TRIANGLE = ROOT / "topologies" / "triangle"

needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ping") is None,
                                reason="needs root and iputils-ping")


needs_mininet = pytest.mark.skipif(mininet_missing(), reason="Debian's mininet is not installed")


@pytest.fixture
def kind(request: pytest.FixtureRequest) -> str:
    """softswitch, or real BMv2 (reference_tools: skips without it, fails under CI=true)."""
    if request.param == "bmv2":
        request.getfixturevalue("reference_tools")
    return request.param


def exercise(tmp_path: Path, latency: str | None = None) -> Path:
    """A copy of topologies/triangle on free ports (its P4 paths made absolute), with
    ``latency`` on the s2-s3 link when given."""
    ex = tmp_path / "triangle"
    shutil.copytree(TRIANGLE, ex)
    for f in ex.glob("*.json"):
        f.write_text(f.read_text().replace("../../p4src/", f"{ROOT}/p4src/"))
    topo = json.loads((ex / "topology.json").read_text())
    for sw in topo["switches"].values():
        sw.update(grpc_port=free_port(), thrift_port=free_port())
    if latency is not None:
        [link] = [lk for lk in topo["links"] if lk[:2] == ["s2-p3", "s3-p3"]]
        link[2:] = [latency]
    (ex / "topology.json").write_text(json.dumps(topo, indent=4))
    return ex


def run(ex: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "topologies", "topology.json", *args],
                          cwd=ex, input=stdin, capture_output=True, text=True, timeout=240)


PAIR = re.compile(r"^(h\d) -> (h\d) \([\d.]+\): (\d+)/(\d+), rtt min/avg/max "
                  r"([\d.]+)/([\d.]+)/([\d.]+) ms$", re.M)


@needs_root
@needs_mininet
@pytest.mark.timeout(300)
@pytest.mark.parametrize("kind", ["softswitch", "bmv2"], indirect=True)
def test_triangle_comes_up_and_every_pair_pings(tmp_path: Path, kind: str):
    """As written, from the exercise folder: compiled, programmed three ways, 6/6 pairs.
    With netem the s2-s3 link also carries 5 ms, and the pairs across it show it."""
    netem = kernel_has_netem()
    ex = exercise(tmp_path, "5ms" if netem else None)
    done = run(ex, "--switch", kind, "--count", "2")
    print(done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr
    pairs = {(m[1], m[2]): (int(m[3]), int(m[4]), float(m[5])) for m in PAIR.finditer(
        done.stdout)}
    assert len(pairs) == 6 and all(got == sent == 2 for got, sent, _ in pairs.values()), pairs
    assert "triangle: 6/6 host pairs reachable" in done.stdout
    if netem:           # h2 -> h3 crosses the delayed link both ways
        assert pairs[("h2", "h3")][2] >= 10.0 and pairs[("h1", "h2")][2] < 10.0
    assert "loaded s1-runtime.json: 4 entries" in done.stderr
    assert "loaded s2-runtime.json: 4 entries" in done.stderr
    assert (ex / "logs" / "s3.cli.log").exists()
    assert (ex / "logs" / "build" / "l3_basic.json").exists()
    assert (ex / "pcaps" / "s1-eth1_in.pcap").stat().st_size > 24        # packets, not a header
    assert leftovers_of(load_exercise(ex / "topology.json", exercise_dir=ex).topology,
                        ex / "logs") == []


@needs_root
@pytest.mark.timeout(120)
@pytest.mark.skipif(kernel_has_netem(), reason="the kernel has netem: the latency test "
                    "above runs the delayed link")
def test_latency_without_netem_is_refused_with_its_reason(tmp_path: Path):
    ex = exercise(tmp_path, "5ms")
    done = run(ex)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "triangle: error: links with delay/loss/max_queue_size need the kernel's netem "
        "qdisc (sch_netem), which this kernel does not have: remove them or run on a "
        "kernel with netem")
    assert not (ex / "logs" / "s1.out").exists()          # refused before anything started


@needs_root
@needs_mininet
@pytest.mark.timeout(300)
def test_cli_opens_mininets_cli(tmp_path: Path):
    """``--cli``: Mininet's CLI on the exercise, where the host commands run (here from
    stdin, as a user types them); leaving it tears the topology down."""
    ex = exercise(tmp_path)
    done = run(ex, "--cli", stdin="h1 ping -c 1 -W 2 h3\nh2 ip -br addr show eth0\n")
    print(done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("mininet> ") == 3            # two commands, then end of input
    out = done.stderr                                      # Mininet's log: command output
    assert "1 packets transmitted, 1 received" in out
    assert re.search(r"eth0@\S+\s+UP\s+10\.0\.2\.2/24", out)
    assert leftovers_of(load_exercise(ex / "topology.json", exercise_dir=ex).topology,
                        ex / "logs") == []


# --- reading the file ----------------------------------------------------------------------
def test_the_tutorials_layout_is_found_from_the_exercise_folder_and_from_elsewhere(
        tmp_path: Path):
    """exercises/basic as the tutorials lay it out: basic.p4 beside build/, pod-topo/ with
    the topology and runtime files whose bmv2_json names build/basic.json."""
    ex = tmp_path / "basic"
    (ex / "pod-topo").mkdir(parents=True)
    shutil.copy(ROOT / "p4src/samples/l3_basic.p4", ex / "basic.p4")
    (ex / "pod-topo/s1-runtime.json").write_text(json.dumps(
        {"target": "bmv2", "p4info": "build/basic.p4.p4info.txtpb",
         "bmv2_json": "build/basic.json", "table_entries": []}))
    (ex / "pod-topo/topology.json").write_text(json.dumps({
        "hosts": {"h1": {"ip": "10.0.1.1/24", "mac": "08:00:00:00:01:11"}},
        "switches": {"s1": {"runtime_json": "pod-topo/s1-runtime.json"},
                     "s2": {"cpu_port": "510"}},
        "links": [["h1", "s1-p1"], ["s1-p2", "s2-p1", "0", 0.5]]}))
    for folder in (ex, tmp_path, ex / "pod-topo"):      # make run's folder, and elsewhere
        loaded = load_exercise(ex / "pod-topo/topology.json", exercise_dir=folder)
        assert loaded.sources == {"s1": ex / "basic.p4", "s2": ex / "basic.p4"}
    topo = load_exercise(ex / "pod-topo/topology.json", exercise_dir=ex).topology
    assert topo.name == "pod-topo" and topo.host_intf("h1") == "eth0"
    assert [(s.name, s.grpc_port, s.thrift_port, s.device_id, s.cpu_port)
            for s in topo.switches] == [("s1", 50051, 9090, 0, 255), ("s2", 50052, 9091, 1, 510)]
    [_, trunk] = topo.links
    assert (trunk.a.node, trunk.a.port, trunk.b.port, trunk.delay, trunk.bw) == \
        ("s1", 2, 1, None, 0.5)


BAD = [
    ('"links": [["h1", "s1-x1"]]',
     'topology.json:4: links[0][1]: \'s1-x1\' is neither a host nor a switch port sN-pK '
     '(hosts: h1; switches: s1)'),
    ('"links": [["h1", "s1-p1", "5"]]',
     "topology.json:4: links[0][2]: '5': give the latency's unit (e.g. '5ms')"),
    ('"links": [["h1", "s1-p1", "0ms", 0]]',
     "topology.json:4: links[0][3]: 0 is not in 0.001..100000"),
    ('"links": [["h1", "s1-p1"], ["h1", "s1-p2"]]',
     "topology.json:4: links[1]: h1 is already used by links[0] (a host has one interface)"),
]


@pytest.mark.parametrize("links,message", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_files_name_the_files_own_paths_and_lines(tmp_path: Path, links: str,
                                                      message: str):
    (tmp_path / "a.p4").write_text("")
    path = tmp_path / "topology.json"
    path.write_text('{\n"hosts": {"h1": {"ip": "10.0.1.1/24", "mac": "08:00:00:00:01:11"}},\n'
                    '"switches": {"s1": {}},\n' + links + "\n}\n")
    with pytest.raises(TopologyError) as err:
        load_exercise(path, exercise_dir=tmp_path)
    assert str(err.value).replace(f"{tmp_path}/", "") == message


def test_a_switch_without_a_program_is_told_how_to_name_one(tmp_path: Path):
    path = tmp_path / "topology.json"
    path.write_text('{"hosts": {},\n "switches": {"s1": {"cli_input": "s1.txt"}}, '
                    '"links": []}\n')
    (tmp_path / "s1.txt").write_text("")
    with pytest.raises(TopologyError) as err:
        load_exercise(path, exercise_dir=tmp_path)
    assert str(err.value) == (f"{path}:2: switches.s1: no P4 program: no folder of "
                              f"{tmp_path}, {tmp_path.parent} has a .p4 file of its own; "
                              "name one with --p4 FILE")
    (tmp_path / "x.p4").write_text("")
    (tmp_path / "y.p4").write_text("")
    assert load_exercise(path, tmp_path / "y.p4", tmp_path).sources == {"s1": tmp_path / "y.p4"}
