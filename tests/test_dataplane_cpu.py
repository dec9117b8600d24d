"""``softswitch run -- --dataplane-cpu N``: the port loop alone on CPU N, every other
thread of the switch (P4Runtime's included, started later) off it; CPUs the process
may not use are refused with a usage error naming them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch.daemon.main import DATAPLANE_BUSY_POLL_US, parse_args
from softswitch.daemon.ports.dataplane_cpu import DataplaneCpu
from softswitch.diagnostics import P4Error
from softswitch.local_port import free_port

ALLOWED = sorted(os.sched_getaffinity(0))
two_cpus = pytest.mark.skipif(len(ALLOWED) < 2, reason="needs two CPUs this process may use")


def test_plan_splits_the_allowed_cpus():
    plan = DataplaneCpu.plan(3, {0, 1, 3})
    assert plan.cpu == 3 and plan.control == {0, 1}
    assert plan.describe() == "port loop on CPU 3, other threads on CPU(s) 0,1"


@pytest.mark.parametrize("cpu, allowed, message", [
    (2, {0, 1}, "--dataplane-cpu 2: this process may use CPUs 0,1 only"),
    (0, {0}, "only CPU this process may use"),
])
def test_plan_refuses_what_cannot_work(cpu, allowed, message):
    with pytest.raises(P4Error, match=message):
        DataplaneCpu.plan(cpu, allowed)


def test_a_cpu_out_of_reach_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(["--no-p4", "--", "--dataplane-cpu", "4095"])
    assert exc.value.code == 1
    assert "--dataplane-cpu 4095: this process may use CPUs" in capsys.readouterr().err


def test_busy_polling_comes_with_a_cpu_of_its_own():
    """The port loop polls before it sleeps by default only on a CPU of its own
    (``--busy-poll-us``: any host may ask for it, or turn it off)."""
    assert parse_args(["--no-p4"]).busy_poll_us == 0
    assert parse_args(["--no-p4", "--", "--busy-poll-us", "50"]).busy_poll_us == 50
    if len(ALLOWED) >= 2:
        cpu = str(ALLOWED[-1])
        assert parse_args(["--no-p4", "--", "--dataplane-cpu", cpu]).busy_poll_us == \
            DATAPLANE_BUSY_POLL_US
        assert parse_args(["--no-p4", "--", "--dataplane-cpu", cpu,
                           "--busy-poll-us", "0"]).busy_poll_us == 0


@pytest.mark.parametrize("value", ["-1", "1000001", "ten"])
def test_a_busy_poll_out_of_range_is_a_usage_error(capsys, value):
    with pytest.raises(SystemExit) as exc:
        parse_args(["--no-p4", "--", "--busy-poll-us", value])
    assert exc.value.code == 1
    assert "--busy-poll-us" in capsys.readouterr().err


def _affinities(pid: int) -> dict[int, str]:
    """Each thread's allowed CPUs (``Cpus_allowed_list`` of /proc)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                line = next(x for x in f if x.startswith("Cpus_allowed_list:"))
        except (OSError, StopIteration):
            continue                         # a thread that just ended
        out[int(tid)] = line.split(":", 1)[1].strip()
    return out


def _parse_list(text: str) -> set[int]:
    cpus: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    return cpus


@two_cpus
def test_loop_alone_on_its_cpu_and_the_rest_off_it():
    cpu = ALLOWED[-1]
    control = set(ALLOWED) - {cpu}
    addr = f"127.0.0.1:{free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "softswitch", "run", "--no-p4", "--",
                             "--grpc-server-addr", addr, "--dataplane-cpu", str(cpu)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    channel = grpc.insecure_channel(addr)
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
        # a P4Runtime call: gRPC's worker threads exist now, started after the split
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        assert stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version
        deadline = time.monotonic() + 20
        while True:
            threads = _affinities(proc.pid)
            if _parse_list(threads[proc.pid]) == {cpu} or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert _parse_list(threads.pop(proc.pid)) == {cpu}      # the port loop's thread
        assert len(threads) >= 2
        assert all(_parse_list(cpus) == control for cpus in threads.values()), threads
        channel.close()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=15)
        assert proc.returncode == 0 and "Traceback" not in err, err
    finally:
        channel.close()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
