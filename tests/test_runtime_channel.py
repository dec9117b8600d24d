"""The runtime channel: simple_switch_CLI commands over TCP to a live switch."""

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from softswitch.runtime_channel import RuntimeChannel, RuntimeChannelServer
from softswitch.tm import TrafficManager
from softswitch.v1model.switch import Switch

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "p4src" / "samples" / "l3_basic.p4"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def live():
    switch = Switch.from_file(SAMPLE)
    tm = TrafficManager(num_queues=8)
    server = RuntimeChannelServer(RuntimeChannel(switch, tm), port=free_port()).start()
    yield switch, tm, server.address[1]
    server.stop()


def cli(port: int, *commands: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "softswitch", "cli", "--port", str(port)]
    for c in commands:
        args += ["-c", c]
    return subprocess.run(args, input=stdin, capture_output=True, text=True, timeout=60)


def test_table_commands_reach_the_switch(live):
    switch, _tm, port = live
    proc = cli(port, "table_add ipv4_lpm set_next_hop 10.9.0.0/16 => 3 0x1 0x2")
    assert proc.returncode == 0, proc.stderr
    entries = switch.table_entries("L3Ingress.ipv4_lpm")
    assert [(e.action, e.args) for e in entries] == [("L3Ingress.set_next_hop", [3, 1, 2])]


def test_queue_commands_configure_the_traffic_manager(live):
    _switch, tm, port = live
    proc = cli(port, stdin="set_queue_rate 1000 2 7\nset_queue_depth 16 2\nshow_queues 2\n")
    assert proc.returncode == 0, proc.stderr
    assert tm.port(2).queue_config(7).rate_pps == 1000
    assert tm.port(2).queue_config(0).capacity_pkts == 16
    assert "queue 7: depth 0/16 rate 1000 pps" in proc.stdout


def test_errors_are_reported_and_set_the_exit_code(live):
    _switch, tm, port = live
    proc = cli(port, "set_queue_rate fast", "table_add nosuch_table x 1 =>", "frobnicate")
    assert proc.returncode == 1
    assert proc.stderr.count("Error") == 3 and "Traceback" not in proc.stderr


def test_unreachable_switch_is_a_clean_error():
    proc = cli(free_port(), "show_tables")
    assert proc.returncode == 1 and "cannot reach" in proc.stderr
