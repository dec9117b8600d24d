"""softswitch as users meet it: ``softswitch run`` driven by p4runtime-shell, the
P4Runtime tool of the P4 tutorials, unchanged (pipeline push, table entries, default
entries, counters, multicast groups, error reporting)."""

from __future__ import annotations

import contextlib
import pathlib
import socket
import subprocess
import sys

import grpc
import pytest
from programs import (
    CONTROLLER_HEADERS,
    CONTROLLER_PARSER,
    P4RT_NAMES,
    PACKET_IN_EGRESS,
    v1model_program,
)

from softswitch import p4info
from softswitch.p4runtime import pipeline

sh = pytest.importorskip("p4runtime_sh.shell")
P4RuntimeWriteException = pytest.importorskip("p4runtime_sh.p4runtime").P4RuntimeWriteException
PROGRAM = pathlib.Path(__file__).resolve().parents[1] / "p4src" / "samples" / "l3_basic.p4"


@contextlib.contextmanager
def _shell_on(program: pathlib.Path, tmp_path: pathlib.Path, extra: list[str] | None = None):
    """``softswitch run --no-p4`` with p4runtime-shell connected and ``program`` pushed."""
    info_path = tmp_path / f"{program.stem}.p4info.txtpb"
    p4info.write(pipeline.compile_file(str(program), {}).p4info, str(info_path))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        addr = f"127.0.0.1:{s.getsockname()[1]}"
    proc = subprocess.Popen([sys.executable, "-m", "softswitch", "run", "--no-p4",
                             *(extra or []), "--", "--grpc-server-addr", addr,
                             "--cpu-port", "255"], stderr=subprocess.PIPE, text=True)
    try:
        channel = grpc.insecure_channel(addr)
        grpc.channel_ready_future(channel).result(timeout=60)
        channel.close()
        sh.setup(device_id=0, grpc_addr=addr, election_id=(0, 1),
                 config=sh.FwdPipeConfig(str(info_path), str(program)))
        yield sh
        sh.teardown()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0 and "Traceback" not in err, err


@pytest.fixture()
def shell(tmp_path):
    with _shell_on(PROGRAM, tmp_path) as s:
        yield s


def _route(shell, prefix: str, port: str):
    te = shell.TableEntry("L3Ingress.ipv4_lpm")(action="set_next_hop")
    te.match["hdr.ipv4.dst_addr"] = prefix
    te.action["port"] = port
    te.action["src_mac"] = "02:00:00:00:00:01"
    te.action["dst_mac"] = "02:00:00:00:00:02"
    return te


def test_table_entries_through_p4runtime_shell(shell):
    _route(shell, "10.0.0.0/8", "3").insert()
    _route(shell, "10.1.0.0/16", "4").insert()
    got = {(e.match["hdr.ipv4.dst_addr"].lpm.prefix_len,
            int.from_bytes(e.action["port"].value, "big"))
           for e in shell.TableEntry("L3Ingress.ipv4_lpm").read()}
    assert got == {(8, 3), (16, 4)}
    _route(shell, "10.0.0.0/8", "5").modify()
    (entry,) = [e for e in shell.TableEntry("L3Ingress.ipv4_lpm").read()
                if e.match["hdr.ipv4.dst_addr"].lpm.prefix_len == 8]
    assert int.from_bytes(entry.action["port"].value, "big") == 5
    _route(shell, "10.0.0.0/8", "5").delete()
    with pytest.raises(P4RuntimeWriteException, match="NOT_FOUND"):
        _route(shell, "10.0.0.0/8", "5").delete()
    with pytest.raises(P4RuntimeWriteException, match="ALREADY_EXISTS"):
        _route(shell, "10.1.0.0/16", "4").insert()


def test_defaults_counters_and_multicast_through_p4runtime_shell(shell):
    (default,) = shell.TableEntry("L3Ingress.ipv4_lpm")(is_default=True).read()
    assert default.action.action_name == "L3Ingress.drop"
    counter = shell.CounterEntry("L3Ingress.port_rx")
    counter.index = 3
    (cell,) = counter.read()
    assert cell.data.packet_count == 0
    assert len(list(shell.CounterEntry("L3Ingress.port_rx").read())) == 64
    shell.MulticastGroupEntry(5).add(1, 1).add(2, 1).insert()
    (group,) = shell.MulticastGroupEntry(5).read()
    assert [(r.egress_port, r.instance) for r in group.replicas] == [(1, 1), (2, 1)]


def test_packet_out_and_in_through_p4runtime_shell(tmp_path):
    """A PacketOut with packet_out metadata leaves the named port; a frame the
    pipeline sends to the CPU port reaches p4runtime-shell's sniffer with its
    packet_in metadata (the program echoes out-of-band frames back to the CPU)."""
    program = tmp_path / "echo.p4"
    program.write_text(ECHO_PROGRAM)
    with _shell_on(program, tmp_path) as s:
        out = s.PacketOut()
        out.payload = bytes(6) + b"\x02" * 6 + b"\x88\xb5" + bytes(46)
        out.metadata["egress_port"] = "255"       # straight back to the CPU port
        out.send()
        got = list(s.PacketIn().sniff(timeout=3))
        assert len(got) == 1
        (packet,) = got
        assert packet.packet.payload == out.payload
        meta = {m.metadata_id: int.from_bytes(m.value, "big")
                for m in packet.packet.metadata}
        assert meta[1] == 255                     # ingress_port: the CPU port


ECHO_PROGRAM = v1model_program(
    types=CONTROLLER_HEADERS + "header ethernet_t { bit<48> dst; bit<48> src; bit<16> etype; }",
    headers="packet_out_t packet_out; packet_in_t packet_in; ethernet_t eth;",
    parser=CONTROLLER_PARSER,
    ingress="""
    apply {
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        }
    }
""",
    egress=PACKET_IN_EGRESS,
    emit=["hdr.packet_in", "hdr.eth"], names=P4RT_NAMES)
