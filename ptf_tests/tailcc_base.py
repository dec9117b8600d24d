"""Shared base of the tailcc PTF suites: a fresh pipeline per test, entries by name.

Each test starts from a clean switch: ``setUp`` pushes the pipeline again with
SetForwardingPipelineConfig (VERIFY_AND_COMMIT), which on softswitch and BMv2 alike
throws away every entry, counter, register and clone session of the previous test,
so no test depends on another one's leftovers or order. What a test holds on the
switch is given back however the test ends, also when ``setUp`` fails half-way
(unittest runs no ``tearDown`` then, but it does run the cleanups registered so far):
the queue and link rates it set are reset and the packets still queued behind them
drained, then its P4Runtime stream is closed and the server has dropped its
arbitration before the next test connects with the same election id. Entries are
written with the shared P4Runtime client (``controlplane.p4rt``) by P4Info names,
exactly as the controller writes them, so a renamed table breaks these suites loudly.

softswitch's traffic-manager extensions (link rate, DWRR weights, PFC; see
``softswitch/tm/``) have helpers here that skip the test on any other target, naming
the extension; ``ptf_tests/README.md`` lists the tests that skip and why.

Test parameters (``ptf --test-params``), set by ``ptf_tests/run.py``:
``grpcaddr``, ``p4info``, ``device_config`` (file sent as ``p4_device_config``: a
softswitch artifact or P4 source, or a BMv2 JSON), ``device_id``, ``cpu_port``,
``target`` (softswitch|bmv2), ``ports``, ``runtime_cli`` (a command that reads
``simple_switch_CLI`` commands on standard input: ``simple_switch_CLI --thrift-port P``
for BMv2, ``softswitch cli --port P`` for softswitch's runtime channel). P4Runtime has
no queue rates, so the queueing suites set them through it, as BMv2 users do.
"""

from __future__ import annotations

import queue
import re
import shlex
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import ptf
import ptf.testutils as tu
from p4.v1 import p4runtime_pb2
from ptf.base_tests import BaseTest
from scapy.packet import Packet

from controlplane.p4rt import (
    Client,
    EntityBuilder,
    P4InfoIndex,
    P4RuntimeWriteError,
    load_p4info,
)
from controlplane.p4rt.client import update
from controlplane.p4rt.values import decode

# One election id per process run is enough: the suites are the only controller, and
# each test gives its arbitration back before the next one connects.
ELECTION_ID = 10
ALL_PORTS_MASK = 0x1FF
# "No limit" in set_queue_rate terms that BMv2 and softswitch both accept.
UNLIMITED_PPS = 10_000_000
# How long closing the P4Runtime session may wait for the server to end the stream.
RELEASE_TIMEOUT_S = 5.0
# Draining shaped queues after a test: quiet for this long beyond one packet time of
# the slowest rate set, and never longer than the deepest queue (64 packets) takes.
DRAIN_QUIET_S = 0.3
QUEUE_CAPACITY_PKTS = 64

# softswitch's traffic-manager extensions BMv2 does not have: the name a skipping test
# gives, and what the extension is (docs/softswitch.md and softswitch/tm/).
TARGET_EXTENSIONS = {
    "set_link_rate": "per-port link rate (serialisation at bits/s)",
    "set_queue_weight": "DWRR weights between queues (strict priority only)",
    "set_pfc": "PFC generation (XOFF/XON frames to the upstream port)",
    "pfc_honouring": "pausing of egress queues by received PFC frames",
    "byte_depth": "byte-based queue depths",
}


def param(name: str, default: str | None = None) -> str:
    value = tu.test_param_get(name, default)
    if value is None:
        raise RuntimeError(f"PTF test parameter {name!r} is missing (run the suites with "
                           "ptf_tests/run.py or pass --test-params)")
    return str(value)


class TailccTest(BaseTest):
    """A test with a connected primary P4Runtime client and a freshly loaded tailcc."""

    client: Client
    b: EntityBuilder
    index: P4InfoIndex

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.target = param("target", "softswitch")
        self.cpu_port = int(param("cpu_port", "255"))
        # port -> slowest queue rate (pps) set on it; 0.0 when only its link was shaped
        self._shaped_ports: dict[int, float] = {}
        info = load_p4info(param("p4info"))
        with open(param("device_config"), "rb") as f:
            config = f.read()
        self.index = P4InfoIndex(info)
        self.b = EntityBuilder(self.index)
        self.client = Client(param("grpcaddr"), int(param("device_id", "0")),
                             election_id=ELECTION_ID, timeout=20)
        # Cleanups run after tearDown, and also when setUp raises below (when tearDown
        # does not run): last in, first out, so the queues are reset before the
        # session ends.
        self.addCleanup(self._release_session)
        self.addCleanup(self._release_queues)
        self.client.connect(retries=5)
        self.client.set_pipeline(info, config)
        if self.target == "bmv2":
            self.clear_bmv2_replication()
        # Frames that reached the test ports before the new pipeline (or from the last
        # test) must not be taken for this test's output.
        time.sleep(0.1)
        self.dataplane.flush()

    def _release_session(self) -> None:
        """Close the P4Runtime stream and wait until the server has dropped it (and our
        arbitration), so the next test can be primary with the same election id."""
        self.client.close(wait=RELEASE_TIMEOUT_S)

    def _release_queues(self) -> None:
        if self._shaped_ports:
            self.reset_queues()

    # ------------------------------------------------------------------ runtime channel
    def runtime(self, *commands: str) -> str:
        """Run simple_switch_CLI commands (queue rates, link rates) on the switch."""
        cmd = shlex.split(param("runtime_cli"))
        proc = subprocess.run(cmd, input="\n".join(commands) + "\n", capture_output=True,
                              text=True, timeout=30)
        if proc.returncode != 0 or "Error" in proc.stdout:
            raise AssertionError(f"runtime commands {list(commands)} failed "
                                 f"({proc.returncode}): {proc.stdout}{proc.stderr}")
        return proc.stdout

    def clear_bmv2_replication(self) -> None:
        """Empty BMv2's replication engine, which SetForwardingPipelineConfig does not.

        simple_switch_grpc 1.15.5 (PI) forgets its clone sessions and multicast groups on
        a new pipeline but leaves their nodes in BMv2's PRE: the next test's clone
        session with the same id then gets a second replica, and every clone is sent
        twice. Measured with ``mc_dump`` after a pipeline push; see ptf_tests/README.md.
        """
        dump = self.runtime("mc_dump")
        commands: list[str] = []
        group: int | None = None
        groups: list[int] = []
        for line in dump.splitlines():
            found = re.search(r"mgrp\((\d+)\)", line)
            if found:
                group = int(found.group(1))
                groups.append(group)
                continue
            node = re.search(r"L1h=(\d+)", line)
            if node and group is not None:
                commands += [f"mc_node_dissociate {group} {node.group(1)}",
                             f"mc_node_destroy {node.group(1)}"]
        commands += [f"mc_mgrp_destroy {g}" for g in groups]
        if commands:
            self.runtime(*commands)

    def set_queue_rate(self, pps: int, port: int, priority: int | None = None) -> None:
        """BMv2 ``set_queue_rate`` (packets/s) of one port's queue (or all its queues).

        On BMv2 a packet's departure time is fixed when it is enqueued, so a new rate
        applies to the packets enqueued after it, not to those already waiting: set the
        rate before the packets it should pace arrive."""
        where = f"{port}" if priority is None else f"{port} {priority}"
        self.runtime(f"set_queue_rate {pps} {where}")
        slowest = self._shaped_ports.get(port, 0.0)
        self._shaped_ports[port] = min(slowest, pps) if slowest else float(pps)

    def softswitch_extension(self, name: str) -> None:
        """Skip unless the target is softswitch: ``name`` (a key of
        TARGET_EXTENSIONS) is one of its extensions, which BMv2 does not have."""
        if self.target != "softswitch":
            self.skipTest(f"softswitch extension {name}: {self.target} has no "
                          f"{TARGET_EXTENSIONS[name]}")

    def set_link_rate(self, bps: int, port: int) -> None:
        """softswitch's port serialisation rate (skips the test on other targets)."""
        self.softswitch_extension("set_link_rate")
        self.runtime(f"set_link_rate {bps} {port}")
        self._shaped_ports.setdefault(port, 0.0)

    def set_queue_weight(self, weight: int, port: int, priority: int) -> None:
        """softswitch's DWRR weight of a queue, 0 = strict (skips on other targets)."""
        self.softswitch_extension("set_queue_weight")
        self.runtime(f"set_queue_weight {weight} {port} {priority}")
        self._shaped_ports.setdefault(port, 0.0)

    def reset_queues(self) -> None:
        """Unlimited rates again and nothing left in the queues, so the next test starts
        with an idle switch. BMv2 keeps the departure times of packets queued under the
        old rate, so what a failed test left queued still trickles out: wait until the
        shaped ports have been quiet for one packet time of the slowest rate."""
        commands = []
        for port in sorted(self._shaped_ports):
            commands.append(f"set_queue_rate {UNLIMITED_PPS} {port}")
            if self.target == "softswitch":
                commands.append(f"set_link_rate 0 {port}")
                commands.append(f"set_queue_weight 0 {port}")
        rates = [pps for pps in self._shaped_ports.values() if pps]
        self._shaped_ports = {}
        self.runtime(*commands)
        slowest = min(rates, default=0.0)
        quiet = DRAIN_QUIET_S + (1.0 / slowest if slowest else 0.0)
        limit = QUEUE_CAPACITY_PKTS / slowest + quiet if slowest else quiet
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            result = self.dataplane.poll(device_number=0, port_number=None, timeout=quiet)
            if not isinstance(result, self.dataplane.PollSuccess):
                break

    # ------------------------------------------------------------------ writes
    def insert(self, table: str, match: Mapping[str, Any] | None = None,
               action: str | None = None, params: Mapping[str, Any] | None = None,
               priority: int | None = None) -> p4runtime_pb2.TableEntry:
        entry = self.b.table_entry(table, match or {}, action, params or {}, priority)
        self.client.write([update("INSERT", entry)])
        return entry

    def set_default(self, table: str, action: str,
                    params: Mapping[str, Any] | None = None) -> None:
        entry = self.b.table_entry(table, action=action, params=params or {}, default=True)
        self.client.write([update("MODIFY", entry)])

    def write_entities(self, kind: str, entities: Iterable[Any]) -> None:
        self.client.write([update(kind, e) for e in entities])

    def write_or_skip(self, kind: str, entities: Iterable[Any], feature: str) -> None:
        """Write, skipping the test when the target says the entity kind is
        UNIMPLEMENTED (a capability the target lacks, e.g. action selectors), so the
        same test runs, and must pass, wherever the target has it."""
        try:
            self.write_entities(kind, entities)
        except P4RuntimeWriteError as exc:
            if exc.errors and all(code in ("OK", "UNIMPLEMENTED") for _, code, _ in
                                  exc.errors):
                self.skipTest(f"{self.target} does not implement {feature}: "
                              f"{exc.errors[0][2]}")
            raise

    def clone_session(self, session: int, port: int, class_of_service: int = 0) -> None:
        self.client.write([update("INSERT", self.b.clone_session(
            session, [port], class_of_service=class_of_service))])

    def register_write(self, name: str, index: int, value: int) -> None:
        """One register cell: over P4Runtime, or on BMv2, whose P4Runtime server (PI)
        answers register reads and writes UNIMPLEMENTED, with simple_switch_CLI."""
        if self.target == "bmv2":
            self.runtime(f"register_write {self._register_name(name)} {index} {value}")
            return
        self.client.write([update("MODIFY", self.b.register_write(name, index, value))])

    def register_read(self, name: str, index: int) -> int:
        if self.target == "bmv2":
            out = self.runtime(f"register_read {self._register_name(name)} {index}")
            match = re.search(r"\]\s*=\s*(\d+)", out)
            if match is None:
                raise AssertionError(f"register_read {name}[{index}]: no value in {out!r}")
            return int(match.group(1))
        for entity in self.client.read([self.b.register_entry(name, index)]):
            return decode(entity.register_entry.data.bitstring)
        raise AssertionError(f"register {name}[{index}] was not returned by Read")

    def _register_name(self, name: str) -> str:
        """The P4Info (= BMv2 JSON) name of a register given by a unique suffix."""
        return self.index.register(name).preamble.name

    def counter(self, name: str, index: int) -> tuple[int, int]:
        """(packets, bytes) of one counter cell, read over P4Runtime."""
        for entity in self.client.read([self.b.counter_entry(name, index)]):
            data = entity.counter_entry.data
            return data.packet_count, data.byte_count
        raise AssertionError(f"counter {name}[{index}] was not returned by Read")

    def packets(self, name: str, index: int) -> int:
        return self.counter(name, index)[0]

    def wait_counter(self, name: str, index: int, expected: int, timeout: float = 10.0) -> int:
        """Poll a packet counter until it reaches ``expected`` (drops leave no frame to
        wait for, so the test waits for the switch's own account instead). It polls every
        few milliseconds: what a test does next may have to happen within a time the
        program holds state for (the NIC's EV_CE_HOLD_NS after a CNP)."""
        deadline = time.monotonic() + timeout
        value = self.packets(name, index)
        while value < expected and time.monotonic() < deadline:
            time.sleep(0.005)
            value = self.packets(name, index)
        return value

    # ------------------------------------------------------------------ common set-up
    def router(self, mac: str) -> None:
        self.insert("my_station", {"eth_dst": mac}, "set_router_mac")

    def route(self, prefix: str, port: int, smac: str, dmac: str, vrf: int = 0) -> None:
        self.insert("routing_v4", {"vrf": vrf, "ipv4_dst": prefix}, "set_nexthop",
                    {"port": port, "smac": smac, "dmac": dmac})

    def traffic_class(self, priority: int, action: str, params: Mapping[str, Any],
                      **match: Any) -> None:
        self.insert("traffic_class", match, action, params, priority=priority)

    def ecn_profile(self, port: int, queue_id: int, profile: int, *, kmin: int, kmax: int,
                    pmax: int = 1024, use_deq: int = 0, drop_not_ect: int = 0,
                    drop_threshold: int = 0, priority: int = 10) -> None:
        self.insert("ecn_profile", {"egress_port": f"{port}&&&{ALL_PORTS_MASK}",
                                    "queue": f"{queue_id}&&&7",
                                    "ecn_profile": f"{profile}&&&0xf"},
                    "set_ecn_profile",
                    {"kmin_pkts": kmin, "kmax_pkts": kmax, "pmax_1024": pmax,
                     "use_deq_qdepth": use_deq, "drop_not_ect_enable": drop_not_ect,
                     "drop_threshold_pkts": drop_threshold}, priority=priority)

    # ------------------------------------------------------------------ packets
    def send(self, port: int, pkt: Packet | bytes, count: int = 1) -> None:
        tu.send_packet(self, port, bytes(pkt), count)

    def expect(self, pkt: Any, port: int, timeout: float | None = None) -> None:
        tu.verify_packet(self, pkt, port, timeout=timeout)

    def expect_nothing(self, timeout: float = 0.5) -> None:
        tu.verify_no_other_packets(self, timeout=timeout)

    def collect(self, port: int, count: int, timeout: float = 5.0,
                accept: Callable[[bytes], bool] | None = None) -> list[tuple[float, bytes]]:
        """Up to ``count`` frames from ``port`` (arrival time, bytes), in arrival order."""
        got: list[tuple[float, bytes]] = []
        deadline = time.monotonic() + timeout
        while len(got) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            result = self.dataplane.poll(device_number=0, port_number=port, timeout=left)
            if not isinstance(result, self.dataplane.PollSuccess):
                break
            if accept is None or accept(bytes(result.packet)):
                got.append((result.time, bytes(result.packet)))
        return got

    def packet_in(self, timeout: float = 10.0) -> p4runtime_pb2.PacketIn:
        try:
            return self.client.packet_ins.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no PacketIn within {timeout:g} s") from None

    def metadata_value(self, message: Any, name: str) -> int:
        """A controller-packet-metadata field of a PacketIn by name."""
        for cpm in self.index.all("controller_packet_metadata"):
            if cpm.preamble.name != "packet_in":
                continue
            ids = {m.name: m.id for m in cpm.metadata}
            for md in message.metadata:
                if md.metadata_id == ids.get(name):
                    return decode(md.value)
        raise AssertionError(f"PacketIn has no metadata {name!r}")
