"""topologies/: YAML topologies brought up with one softswitch process per switch.

End to end, as a user runs them: Mininet (and the plain-namespace fallback) builds the
hosts and links, softswitch runs the program on the switch's interfaces, the runner
programs it (tailcc intent or tutorials runtime JSON), and ``ping`` between the hosts
must succeed through the P4 pipeline. After every run — including a failed start —
nothing of the topology may remain: no interface, namespace or process. Ports are
moved to free ones so the tests never meet another switch on the machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

from softswitch.devtools import reference_tools  # noqa: E402
from softswitch.local_port import free_port  # noqa: E402
from topologies import Runner, RunnerError, load_topology  # noqa: E402
from topologies.runner import leftovers_of  # noqa: E402
from topologies.schema import Topology, TopologyError  # noqa: E402

needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None
                                or shutil.which("ping") is None,
                                reason="needs root, iproute2 and iputils-ping")


def mininet_missing() -> bool:
    """Whether Debian's mininet (its Python package and mnexec) is not installed."""
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        return True
    return shutil.which("mnexec") is None


def on_free_ports(topo: Topology) -> Topology:
    """The same topology with every switch's gRPC/thrift port moved to a free one."""
    for sw in topo.switches:
        sw.grpc_port, sw.thrift_port = free_port(), free_port()
    return topo


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def run_and_ping(topo: Topology, backend: str, run_dir: Path, tcp: list | None = None,
                 kind: str = "softswitch") -> list:
    """Up, ping every pair (and TCP first -> last host into ``tcp``), down; returns the
    ping results and checks nothing is left."""
    runner = Runner(topo, kind, backend, run_dir, start_timeout=120,
                    log=lambda msg: print(msg))
    with runner:
        pids = [p.proc.pid for p in runner.processes if p.proc is not None]
        assert len(pids) == len(topo.switches)
        results = runner.pingall(count=3)
        if tcp is not None:
            tcp.append(runner.tcp_throughput(topo.hosts[0].name, topo.hosts[-1].name, 2.0))
            print(f"[{backend}] {tcp[-1].line()}")
    for r in results:
        print(f"[{backend}] {r.line()}")
    assert not any(pid_alive(pid) for pid in pids), "a switch process survived teardown"
    assert leftovers_of(topo, run_dir) == []
    return results


@pytest.fixture
def kind(request: pytest.FixtureRequest) -> str:
    """The parametrised switch: softswitch, or real BMv2 (reference_tools: skips without
    it, fails under CI=true)."""
    if request.param == "bmv2":
        request.getfixturevalue("reference_tools")
    return request.param


KINDS = pytest.mark.parametrize("kind", ["softswitch", "bmv2"], indirect=True)


@needs_root
@pytest.mark.timeout(300)
@pytest.mark.skipif(mininet_missing(), reason="Debian's mininet is not installed")
@KINDS
def test_single_tailcc_on_mininet_pings(tmp_path: Path, kind: str):
    """single.yaml as shipped: tailcc.p4 on softswitch or on BMv2 (compiled by p4c),
    routes and queues from the tailcc intent applied by tailcc apply."""
    topo = on_free_ports(load_topology(ROOT / "topologies" / "single.yaml"))
    results = run_and_ping(topo, "mininet", tmp_path, kind=kind)
    assert len(results) == 6
    assert all(r.ok for r in results), [r.line() for r in results]
    assert all(r.rtt_avg is not None and r.rtt_avg < 500 for r in results)
    applied = (tmp_path / "intent.apply.log").read_text()
    assert "s1: wrote" in applied


@needs_root
@pytest.mark.timeout(300)
def test_single_l3_basic_on_netns_pings(tmp_path: Path):
    """The Mininet-free backend: l3_basic.p4 programmed from a tutorials runtime JSON."""
    topo = on_free_ports(load_topology(ROOT / "topologies" / "single_l3.yaml"))
    assert topo.switches[0].program.name == "l3_basic.p4"
    tcp: list = []
    results = run_and_ping(topo, "netns", tmp_path, tcp)
    assert [r.ok for r in results] == [True, True], [r.line() for r in results]
    # TCP with offloads off: every byte sent arrives through the pipeline.
    assert tcp[0].sent > 0 and tcp[0].received == tcp[0].sent


@needs_root
@pytest.mark.timeout(300)
def test_no_route_means_no_reply(tmp_path: Path):
    """Replies really come through the P4 tables: without entries nothing gets across."""
    topo = on_free_ports(load_topology(ROOT / "topologies" / "single_l3.yaml"))
    topo.switches[0].runtime_json = None
    runner = Runner(topo, "softswitch", "netns", tmp_path, log=print)
    with runner:
        result = runner.ping("h1", "h2", count=2)
    assert result.sent == 2 and result.received == 0
    assert leftovers_of(topo, tmp_path) == []


def _policies(pid: int) -> set[int]:
    """The scheduling policy of every thread of ``pid``."""
    policies = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            policies.add(os.sched_getscheduler(int(tid)))
        except ProcessLookupError:
            pass
    return policies


def test_realtime_refused_without_the_kernels_throttling(tmp_path: Path):
    """SCHED_FIFO switch threads only where the kernel still throttles real-time time:
    with sched_rt_runtime_us -1 a spinning switch thread would hold its core forever."""
    from topologies.p4switch import realtime_unbounded

    knob = tmp_path / "sched_rt_runtime_us"
    knob.write_text("950000\n")
    assert realtime_unbounded(str(knob)) is None
    knob.write_text("-1\n")
    assert "throttling is off" in realtime_unbounded(str(knob))
    assert "cannot be read" in realtime_unbounded(str(tmp_path / "missing"))


@needs_root
@pytest.mark.timeout(300)
def test_realtime_switch_priority_moves_every_switch_thread(tmp_path: Path):
    """``switch_priority="realtime"``: once programmed, every thread of every switch is
    SCHED_FIFO (the mix's default), the hosts' processes are not, and the pipeline
    still forwards; an unknown priority is refused before anything starts."""
    topo = on_free_ports(load_topology(ROOT / "topologies" / "single_l3.yaml"))
    with Runner(topo, "softswitch", "netns", tmp_path, log=print,
                switch_priority="realtime") as runner:
        pid = runner.processes[0].proc.pid
        assert _policies(pid) == {os.SCHED_FIFO}
        assert os.sched_getparam(pid).sched_priority == 20
        assert runner.ping("h1", "h2", count=2).received == 2
        code, out = runner.host_run("h1", ["python3", "-c",
                                           "import os; print(os.sched_getscheduler(0))"])
        assert code == 0 and int(out.split()[-1]) == os.SCHED_OTHER
    assert leftovers_of(topo, tmp_path) == []
    with pytest.raises(RunnerError, match="unknown switch priority 'urgent'"):
        Runner(topo, "softswitch", "netns", tmp_path, switch_priority="urgent")


@needs_root
@pytest.mark.timeout(300)
def test_failed_start_tears_down(tmp_path: Path):
    """A switch that cannot start fails the run with its error, and leaves nothing."""
    bad = tmp_path / "broken.p4"
    bad.write_text("#include <core.p4>\ncontrol C() { apply { x = 1; } }\n")
    topo = on_free_ports(load_topology(ROOT / "topologies" / "single_l3.yaml"))
    topo.switches[0].program = bad
    with pytest.raises(RunnerError) as err:
        Runner(topo, "softswitch", "netns", tmp_path, start_timeout=60, log=print).up()
    assert "s1: softswitch exited with status 1" in str(err.value)
    assert "broken.p4:2" in str(err.value)
    assert leftovers_of(topo, tmp_path) == []


BAD_TOPOLOGIES = [
    ("hosts: [\n  {name: h1\n", "bad.yaml:3: YAML syntax error"),
    ("switches: [{name: s1, colour: red}]\nhosts: []\n",
     "bad.yaml:1: switches[0].colour: unknown key"),
    ("switches: [{name: s1, program: nowhere.p4}]\n",
     "bad.yaml:1: switches[0].program: no such file 'nowhere.p4'"),
    ("switches: [{name: s1}]\nhosts:\n  - {name: h1, ip: 10.0.0.1, mac: '00:00:00:00:00:01'}\n"
     "links: [[h1, s1:1]]\n",
     "bad.yaml:3: hosts[0].ip: '10.0.0.1' needs a prefix length"),
    ("switches: [{name: s1}]\nhosts:\n"
     "  - {name: h1, ip: 10.0.0.1/24, mac: '00:00:00:00:00:01'}\n"
     "  - {name: h2, ip: 10.0.0.2/24, mac: '00:00:00:00:00:02'}\n"
     "links:\n  - [h1, s1:1]\n  - [h2, s1:1]\n",
     "bad.yaml:7: links[1]: s1:1 is already used by links[0]"),
    ("switches: [{name: s1}]\nhosts:\n  - {name: h1, ip: 10.0.0.1/24, mac: 'zz'}\n"
     "links:\n  - [h1, s9:1]\n",
     "bad.yaml:5: links[0].ends[1]: unknown node 's9'"),
    ("switches: [{name: s1, grpc_port: 70000}]\n",
     "bad.yaml:1: switches[0].grpc_port: 70000 is not in 1..65535"),
    ("switches: [{name: s1}]\nlinks:\n  - [s1:255, s1:2]\n",
     "bad.yaml:3: links[0].ends[0]: port 255 is s1's CPU port"),
    ("switches: [{name: averylongname}]\nlinks:\n  - [averylongname:1, averylongname:2]\n",
     "exceed 15 characters"),
    ("- just a list\n", "bad.yaml:1: expected a mapping, got a list"),
]


@pytest.mark.parametrize("text,message", BAD_TOPOLOGIES,
                         ids=[f"bad{i}" for i in range(len(BAD_TOPOLOGIES))])
def test_bad_yaml_is_a_clean_error(tmp_path: Path, text: str, message: str):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(TopologyError) as err:
        load_topology(path)
    assert message in str(err.value).replace(str(tmp_path) + "/", "")
    done = subprocess.run([sys.executable, "-m", "topologies", str(path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert message in done.stderr.replace(str(tmp_path) + "/", "")
    assert "Traceback" not in done.stderr


def test_every_problem_is_reported_at_once(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text("switches: [{name: s1, cpu_port: 600, pcap: maybe}]\n"
                    "hosts:\n  - {name: h1, ip: 10.0.0.1/24, mac: '00:00:00:00:00:01',"
                    " gateway: 10.9.0.1}\n")
    with pytest.raises(TopologyError) as err:
        load_topology(path)
    text = str(err.value)
    assert "switches[0].cpu_port: 600 is not in 0..511" in text
    assert "switches[0].pcap: expected true or false" in text
    assert "hosts[0].gateway: gateway 10.9.0.1 is not in the host's subnet" in text
    assert "hosts: host h1 has no link" in text


def test_shipped_topologies_are_valid():
    for name, hosts, switches, links in (("single", 3, 1, 3), ("leaf_spine", 4, 4, 8),
                                         ("single_l3", 2, 1, 2), ("nic_single", 2, 3, 4)):
        topo = load_topology(ROOT / "topologies" / f"{name}.yaml")
        assert (len(topo.hosts), len(topo.switches), len(topo.links)) == \
            (hosts, switches, links)
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "tailcc"), "validate",
                           "topologies/leaf_spine_intent.yaml"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_cli_usage_errors(tmp_path: Path):
    done = subprocess.run([sys.executable, "-m", "topologies", str(tmp_path / "none.yaml")],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "none.yaml: cannot read: No such file or directory" in done.stderr
    done = subprocess.run([sys.executable, "-m", "topologies", "topologies/single.yaml",
                           "--switch", "p4c"], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "invalid choice: 'p4c'" in done.stderr


def _topology_file(tmp_path: Path, name: str) -> Path:
    """single_l3.yaml on free ports under another name, written where the test owns it."""
    text = (ROOT / "topologies" / "single_l3.yaml").read_text()
    text = text.replace("name: single_l3", f"name: {name}")
    text = text.replace("grpc_port: 9559", f"grpc_port: {free_port()}")
    text = text.replace("thrift_port: 9090", f"thrift_port: {free_port()}")
    text = text.replace("runtime_json: s1-runtime.json",
                        f"runtime_json: {ROOT / 'topologies' / 's1-runtime.json'}")
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def _start_cli(path: Path, run_dir: Path) -> subprocess.Popen:
    """``python -m topologies FILE --cli`` on netns, returned once the topology is up."""
    proc = subprocess.Popen([sys.executable, "-m", "topologies", str(path), "--backend",
                             "netns", "--cli", "--run-dir", str(run_dir)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if "Ctrl-C tears the topology down" in line:
            return proc
    proc.wait(30)
    raise AssertionError("topology did not come up:\n" + "".join(lines))


@needs_root
@pytest.mark.timeout(300)
def test_sigterm_tears_down_and_clean_removes_a_killed_run(tmp_path: Path):
    path = _topology_file(tmp_path, "tq_term")
    topo = load_topology(path)
    proc = _start_cli(path, tmp_path)
    try:
        assert leftovers_of(topo, tmp_path)          # the topology exists while it runs
        proc.terminate()
        assert proc.wait(60) == 0                    # --cli: a signal ends the session
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert leftovers_of(topo, tmp_path) == []

    # A runner killed outright cannot tear down: --clean finds and removes its remains.
    proc = _start_cli(path, tmp_path)
    proc.kill()
    proc.wait(30)
    try:
        left = leftovers_of(topo, tmp_path)
        assert "netns tcc-h1" in left and any(x.startswith("pid ") for x in left)
        done = subprocess.run([sys.executable, "-m", "topologies", str(path), "--backend",
                               "netns", "--run-dir", str(tmp_path)], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 1 and "left over from an earlier run" in done.stderr
    finally:
        done = subprocess.run([sys.executable, "-m", "topologies", str(path), "--clean",
                               "--run-dir", str(tmp_path)], cwd=ROOT, capture_output=True,
                              text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert leftovers_of(topo, tmp_path) == []


@needs_root
@pytest.mark.timeout(400)
@pytest.mark.skipif(mininet_missing(), reason="Debian's mininet is not installed")
@KINDS
def test_leaf_spine_on_mininet_pings(tmp_path: Path, kind: str):
    """The 4-switch benchmark topology: leaf-spine-leaf paths cross three pipelines
    (ECMP over both spines), on softswitch or on BMv2."""
    topo = on_free_ports(load_topology(ROOT / "topologies" / "leaf_spine.yaml"))
    results = run_and_ping(topo, "mininet", tmp_path, kind=kind)
    assert len(results) == 12
    assert all(r.ok for r in results), [r.line() for r in results]
    applied = (tmp_path / "intent.apply.log").read_text()
    for sw in ("leaf1", "leaf2", "spine1", "spine2"):
        assert f"{sw}: wrote" in applied


@needs_root
@pytest.mark.timeout(120)
@pytest.mark.skipif(reference_tools.find() is not None,
                    reason="BMv2 is installed: the missing-BMv2 message cannot be shown")
def test_bmv2_missing_is_a_clean_error(tmp_path: Path):
    path = _topology_file(tmp_path, "tq_bmv2")
    done = subprocess.run([sys.executable, "-m", "topologies", str(path), "--switch", "bmv2",
                           "--backend", "netns", "--run-dir", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=100)
    assert done.returncode == 1
    assert "simple_switch_grpc is not installed" in done.stderr
    assert "Traceback" not in done.stderr
    assert leftovers_of(load_topology(path), tmp_path) == []


@needs_root
@pytest.mark.timeout(120)
def test_invalid_intent_is_reported_before_anything_is_built(tmp_path: Path):
    intent = tmp_path / "intent.yaml"
    intent.write_text("switches:\n  - name: s1\n    address: nope\n    device_id: 0\n")
    text = (ROOT / "topologies" / "single.yaml").read_text()
    text = text.replace("intent: single_intent.yaml", f"intent: {intent}")
    text = text.replace("name: single", "name: tq_badintent")
    path = tmp_path / "topo.yaml"
    path.write_text(text)
    topo = on_free_ports(load_topology(path))
    with pytest.raises(RunnerError) as err:
        Runner(topo, "softswitch", "netns", tmp_path, log=print).up()
    assert f"{intent}:3: switches[0].address: 'nope' is not host:port" in str(err.value)
    assert leftovers_of(topo, tmp_path) == []
    assert not (tmp_path / "s1.out").exists()         # no switch was started


@needs_root
@pytest.mark.timeout(300)
def test_cli_commands_file(tmp_path: Path):
    """Entries from a simple_switch_CLI commands file over the switch's runtime port."""
    topo = on_free_ports(load_topology(ROOT / "topologies" / "single_l3.yaml"))
    topo.switches[0].runtime_json = None
    topo.switches[0].cli_commands = ROOT / "topologies" / "s1-commands.txt"
    results = run_and_ping(topo, "netns", tmp_path)
    assert [r.ok for r in results] == [True, True], [r.line() for r in results]


@needs_root
@pytest.mark.timeout(300)
def test_link_delay_needs_netem(tmp_path: Path):
    """A 5 ms link delays pings where the kernel has netem; elsewhere a clear refusal
    (Mininet alone would log an error and build the link without the delay)."""
    from topologies.runner import kernel_has_netem

    topo = on_free_ports(load_topology(ROOT / "topologies" / "single_l3.yaml"))
    topo.links[0].delay = "5ms"
    if not kernel_has_netem():
        with pytest.raises(RunnerError) as err:
            Runner(topo, "softswitch", "netns", tmp_path, log=print).up()
        assert "need the kernel's netem qdisc (sch_netem)" in str(err.value)
        assert leftovers_of(topo, tmp_path) == []
        return
    results = run_and_ping(topo, "netns", tmp_path)
    assert all(r.ok and r.rtt_min is not None and r.rtt_min >= 10.0 for r in results)


@needs_root
@pytest.mark.timeout(300)
@pytest.mark.skipif(mininet_missing(), reason="Debian's mininet is not installed")
def test_p4switch_in_a_users_own_mininet_script(tmp_path: Path):
    """P4Switch as a drop-in for tutorials' P4RuntimeSwitch: start() returns once gRPC
    answers, the script programs the switch, Mininet's own ping gets through."""
    from mininet.net import Mininet

    from topologies.p4switch import P4Switch

    port = free_port()
    net = Mininet(controller=None, build=False, autoSetMacs=False)
    switch_pid = None
    try:
        h1 = net.addHost("h1", ip="10.0.1.1/24", mac="08:00:00:00:01:11",
                         defaultRoute="via 10.0.1.10")
        h2 = net.addHost("h2", ip="10.0.2.2/24", mac="08:00:00:00:02:22",
                         defaultRoute="via 10.0.2.20")
        s1 = net.addSwitch("s1", cls=P4Switch, program="p4src/samples/l3_basic.p4",
                           grpc_port=port, thrift_port=free_port(), run_dir=tmp_path)
        net.addLink(h1, s1, port2=1)
        net.addLink(h2, s1, port2=2)
        net.build()
        net.start()
        switch_pid = s1.process.proc.pid
        h1.cmd("ip neigh replace 10.0.1.10 lladdr 08:00:00:00:01:00 dev h1-eth0")
        h2.cmd("ip neigh replace 10.0.2.20 lladdr 08:00:00:00:02:00 dev h2-eth0")
        p4info = tmp_path / "l3.p4info.txtpb"
        subprocess.run([str(ROOT / ".venv/bin/softswitch"), "compile",
                        "p4src/samples/l3_basic.p4", "--p4runtime-files", str(p4info)],
                       cwd=ROOT, check=True, timeout=120)
        done = subprocess.run([str(ROOT / ".venv/bin/tailcc"), "load",
                               "topologies/s1-runtime.json", "--no-pipeline", "--p4info",
                               str(p4info), "-a", f"127.0.0.1:{port}", "--device-id", "0"],
                              cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        out = h1.cmd("ping -n -c 3 -i 0.2 -W 2 10.0.2.2")
        print(out)
        assert " 0% packet loss" in out
    finally:
        net.stop()
    assert switch_pid is not None and not pid_alive(switch_pid)
    assert not any(Path("/sys/class/net", n).exists() for n in ("s1-eth1", "s1-eth2"))


@needs_root
@pytest.mark.timeout(300)
@pytest.mark.parametrize("backend", [
    "netns",
    pytest.param("mininet", marks=pytest.mark.skipif(
        mininet_missing(), reason="Debian's mininet is not installed"))])
def test_nic_instances_between_hosts_and_switch_ping(tmp_path: Path, backend: str):
    """nic_single.yaml: each host behind a tailcc NIC (PNA, softswitch run --host-port/
    --net-port); one tailcc apply programs the switch and both NICs; every pair pings —
    in plain namespaces and as Mininet nodes (the NICs are Mininet switches between each
    host and tsw)."""
    topo = on_free_ports(load_topology(ROOT / "topologies" / "nic_single.yaml"))
    assert [s.name for s in topo.switches if s.is_nic] == ["tnic1", "tnic2"]
    results = run_and_ping(topo, backend, tmp_path)
    assert len(results) == 2 and all(r.ok for r in results), [r.line() for r in results]
    applied = (tmp_path / "intent.apply.log").read_text()
    assert all(f"{name}: wrote" in applied for name in ("tsw", "tnic1", "tnic2")), applied
