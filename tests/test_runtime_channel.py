"""The runtime channel: simple_switch_CLI commands over TCP to a live switch."""

import select
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from softswitch.daemon.cli_channel.commands import RuntimeChannel, RuntimeChannelServer
from softswitch.daemon.ports import batchio
from softswitch.daemon.ports.dataplane import DataPlane
from softswitch.local_port import free_port
from softswitch.tm import TrafficManager
from softswitch.v1model.fast_switch import load_switch_file

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "p4src" / "samples" / "l3_basic.p4"


@pytest.fixture(scope="module", params=["thread", "port loop"])
def live(request):
    """A switch's channel served by each connection's thread, or (``softswitch run``'s
    way) by a running port loop that reads the connections and runs the commands."""
    switch = load_switch_file(SAMPLE)
    tm = TrafficManager(num_queues=8)
    if request.param == "thread":
        server = RuntimeChannelServer(RuntimeChannel(switch, tm), port=free_port()).start()
        yield switch, tm, server.address[1]
        server.stop()
        return
    if batchio.native() is None:
        pytest.skip("batchio is not built here: the loop serves no connection")
    plane = DataPlane({})
    loop = threading.Thread(target=plane.run_batches, args=(lambda *_: None,), daemon=True)
    loop.start()
    channel = RuntimeChannel(switch, tm, run_each=plane.calls.call_each,
                             checkpoint=plane.calls.checkpoint)
    server = RuntimeChannelServer(channel, port=free_port(), loop=plane).start()
    yield switch, tm, server.address[1]
    server.stop()
    plane.stop()
    loop.join(5)
    plane.close()


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


def test_piped_commands_apply_as_they_arrive(live):
    """A controller keeping the CLI's stdin open: each command reaches the switch (and
    its reply comes back) while the pipe is still open, as with simple_switch_CLI."""
    switch, _tm, port = live
    proc = subprocess.Popen([sys.executable, "-m", "softswitch", "cli", "--port", str(port)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        for i in range(3):
            proc.stdin.write(f"table_add ipv4_lpm set_next_hop 10.{20 + i}.0.0/16 => "
                             f"{i + 1} 0x1 0x2\n")
            proc.stdin.flush()
            ready, _, _ = select.select([proc.stdout], [], [], 20)
            assert ready, "no reply while the pipe is open"
            assert "Entry has been added" in proc.stdout.readline()
        assert proc.poll() is None
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
    ports = {e.args[0] for e in switch.table_entries("L3Ingress.ipv4_lpm")}
    assert {1, 2, 3} <= ports


def test_many_commands_keep_their_order_and_replies(live):
    _switch, _tm, port = live
    lines = [f"set_queue_rate {100 + i} 3 {i % 8}" for i in range(400)] + ["show_queues 3"]
    proc = cli(port, stdin="\n".join(lines) + "\n")
    assert proc.returncode == 0, proc.stderr
    # the last rate set on each queue wins: the commands ran in the order given
    for q in range(8):
        assert f"queue {q}: depth 0/" in proc.stdout
        assert f"rate {100 + 392 + q} pps" in proc.stdout


def _raw_exchange(port: int, payload: bytes, shut: bool = False) -> list[dict]:
    import json

    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(payload)
        if shut:
            sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(1 << 16):
            data += chunk
            if not shut and data.count(b"\n") >= 2:
                break
    return [json.loads(line) for line in data.splitlines()]


def test_a_too_long_line_ends_the_connection_after_the_lines_before_it(live):
    from softswitch.daemon.cli_channel.framing import MAX_LINE

    _switch, tm, port = live
    payload = (b'{"cmd": "set_queue_rate 777 4 1"}\n' + b"x" * (MAX_LINE + 10) + b"\n"
               + b'{"cmd": "set_queue_rate 778 4 1"}\n')
    replies = _raw_exchange(port, payload)
    assert replies[0]["ok"] and replies[1] == {"ok": False,
                                               "output": "Error: command too long"}
    assert tm.port(4).queue_config(1).rate_pps == 777      # the line after: not run


def test_an_unterminated_last_line_is_still_answered(live):
    _switch, tm, port = live
    replies = _raw_exchange(port, b'{"cmd": "set_queue_rate 555 5 2"}\n{"cmd": "se'
                            b't_queue_rate 556 5 2"}', shut=True)
    assert [r["ok"] for r in replies] == [True, True]
    assert tm.port(5).queue_config(2).rate_pps == 556


def test_commands_that_are_not_text_are_a_clean_error(live):
    switch, _tm, port = live
    proc = subprocess.run([sys.executable, "-m", "softswitch", "cli", "--port", str(port)],
                          input=b"table_add ipv4_lpm set_next_hop 10.77.0.0/16 => 7 0x1 0x2\n"
                                b"\xff\xfe\n", capture_output=True, timeout=60)
    err = proc.stderr.decode()
    # refused by the CLI (strict UTF-8 stdin) or by the switch (an unknown command)
    assert proc.returncode == 1 and "Traceback" not in err
    assert "not UTF-8 text" in err or "unknown command" in err, err
    assert 7 in {e.args[0] for e in switch.table_entries("L3Ingress.ipv4_lpm")}
