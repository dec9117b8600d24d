"""The runtime channel on a P4Runtime switch (issue 13): it listens on 127.0.0.1 or a
0600 Unix socket, wants a token when given one, and its table writes go through
P4Runtime's own state, so P4Runtime Read (and ``tailcc diff``) see them; state that
P4Runtime keeps apart (multicast, mirroring, meters) is not changed behind its back
unless ``--runtime-writes``."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import time

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from security_support import PROGRAM

from softswitch.daemon.main import parse_args
from softswitch.local_port import free_port


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "softswitch", "cli", *args], input=stdin,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def switch(tmp_path_factory):
    """softswitch run with a program, a token, a TCP port and a Unix socket."""
    tmp = tmp_path_factory.mktemp("channel")
    (tmp / "prog.p4").write_text(PROGRAM)
    (tmp / "token").write_text("s3cret-token\n")
    grpc_addr, port, sock = f"127.0.0.1:{free_port()}", free_port(), str(tmp / "rt.sock")
    proc = subprocess.Popen([sys.executable, "-m", "softswitch", "run", str(tmp / "prog.p4"),
                             "--device-id", "1", "--thrift-port", str(port),
                             "--runtime-socket", sock,
                             "--runtime-token-file", str(tmp / "token"), "--",
                             "--grpc-server-addr", grpc_addr, "--cpu-port", "255"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    channel = grpc.insecure_channel(grpc_addr)
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
        yield {"proc": proc, "port": port, "socket": sock, "token": str(tmp / "token"),
               "stub": p4runtime_pb2_grpc.P4RuntimeStub(channel), "tmp": tmp}
    finally:
        channel.close()
        proc.terminate()
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0 and "Traceback" not in err, err


def _entries(switch) -> list[p4runtime_pb2.TableEntry]:
    req = p4runtime_pb2.ReadRequest(device_id=1)
    req.entities.add().table_entry.SetInParent()
    return [e.table_entry for r in switch["stub"].Read(req) for e in r.entities]


def _loaded(tmp_path):
    """PROGRAM loaded in an in-process P4Runtime Device: its LoadedPipeline (switch and
    runtime), for driving ManagedControl directly."""
    from softswitch.daemon.device import Device
    from softswitch.daemon.main import RunOptions, load_program
    from softswitch.frontend.limits import UNLIMITED

    (tmp_path / "prog.p4").write_text(PROGRAM)
    config, compiled = load_program(RunOptions(program=str(tmp_path / "prog.p4")))
    device = Device(1, 255, limits=UNLIMITED)
    device.start_with(config, compiled)
    return device.current


def test_without_the_token_nothing_happens(switch):
    proc = cli("--port", str(switch["port"]), "-c", "table_add fwd_table fwd 0x0a => 2")
    assert proc.returncode == 1 and "needs a token" in proc.stderr
    (switch["tmp"] / "wrong").write_text("guess")
    proc = cli("--port", str(switch["port"]), "--token-file", str(switch["tmp"] / "wrong"),
               "-c", "table_add fwd_table fwd 0x0a => 2")
    assert proc.returncode == 1 and "needs a token" in proc.stderr
    with socket.create_connection(("127.0.0.1", switch["port"]), timeout=10) as raw:
        raw.sendall(b'{"cmd": "table_add fwd_table fwd 0x0a => 2"}\n'
                    b'{"cmd": "table_add fwd_table fwd 0x0b => 2"}\n')
        data = raw.makefile("rb").read()
    assert b"needs a token" in data and data.count(b"\n") == 1     # then closed
    assert _entries(switch) == []


def test_table_writes_are_p4runtime_state(switch):
    token = ["--token-file", switch["token"]]
    proc = cli("--port", str(switch["port"]), *token,
               "-c", "table_add fwd_table fwd 0x0a => 2")
    assert proc.returncode == 0, proc.stderr
    handle = int(proc.stdout.split()[-1])
    (entry,) = _entries(switch)                               # P4Runtime sees it
    assert entry.match[0].exact.value == b"\x0a"
    assert entry.action.action.params[0].value == b"\x02"
    proc = cli("--socket", switch["socket"], *token,
               "-c", f"table_modify fwd_table fwd {handle} 5", "-c", "table_dump fwd_table")
    assert proc.returncode == 0, proc.stderr
    assert f"{handle}:" in proc.stdout
    (entry,) = _entries(switch)
    assert entry.action.action.params[0].value == b"\x05"
    proc = cli("--port", str(switch["port"]), *token,
               "-c", "table_add fwd_table fwd 0x0a => 3")       # P4Runtime's duplicate check
    assert proc.returncode == 1 and "Match entry exists" in proc.stderr
    proc = cli("--port", str(switch["port"]), *token, "-c", f"table_delete fwd_table {handle}")
    assert proc.returncode == 0 and _entries(switch) == []


def test_state_p4runtime_keeps_apart_is_refused(switch):
    token = ["--token-file", switch["token"]]
    proc = cli("--port", str(switch["port"]), *token, "-c", "mc_mgrp_create 1",
               "-c", "mirroring_add 5 3")
    assert proc.returncode == 1 and proc.stderr.count("--runtime-writes") == 2
    pre = p4runtime_pb2.ReadRequest(device_id=1)
    pre.entities.add().packet_replication_engine_entry.SetInParent()
    assert [e for r in switch["stub"].Read(pre) for e in r.entities] == []
    proc = cli("--port", str(switch["port"]), *token, "-c", "set_queue_rate 1000 2",
               "-c", "counter_read I.hits 0")                     # TM and reads: fine
    assert proc.returncode == 0, proc.stderr


def test_unix_socket_is_private(switch):
    mode = stat.S_IMODE(os.stat(switch["socket"]).st_mode)
    assert mode == 0o600


def test_binds_loopback_unless_told():
    assert parse_args(["--no-p4", "--thrift-port", "9090"]).runtime_bind == "127.0.0.1"
    opts = parse_args(["--no-p4", "--thrift-port", "9090", "--runtime-bind", "0.0.0.0",
                       "--runtime-writes"])
    assert opts.runtime_bind == "0.0.0.0" and opts.runtime_writes


def test_runtime_writes_flag_lets_replication_through(tmp_path):
    from softswitch.daemon.cli_channel.commands import RuntimeChannel
    from softswitch.daemon.cli_channel.control import ManagedControl

    loaded = _loaded(tmp_path)
    strict = RuntimeChannel(ManagedControl(loaded.switch, loaded.runtime), None)
    assert strict.execute("mc_mgrp_create 3")[0] is False
    loose = RuntimeChannel(ManagedControl(loaded.switch, loaded.runtime, True), None)
    assert loose.execute("mc_mgrp_create 3")[0] is True


def test_bad_token_file_is_a_user_error(tmp_path):
    (tmp_path / "empty").write_text("\n")
    for path, message in ((tmp_path / "empty", "is empty"), (tmp_path / "none", "cannot read")):
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "softswitch", "run", "--no-p4",
                               "--thrift-port", str(free_port()), "--runtime-token-file",
                               str(path), "--", "--grpc-server-addr",
                               f"127.0.0.1:{free_port()}"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 1 and message in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and time.monotonic() - started < 60


def test_channel_writes_are_told_and_leave_nothing_young(tmp_path):
    """With a reclaiming server (``written`` set), each channel write reports its size
    and moves what it left out of the collector's young generation (softswitch run at
    1000 CLI writes/s: young and middle passes over the new entries stopped the port
    loop for 10-30 ms every few seconds)."""
    import gc

    from softswitch.daemon.cli_channel.commands import RuntimeChannel
    from softswitch.daemon.cli_channel.control import ManagedControl

    loaded = _loaded(tmp_path)
    sizes: list[int] = []
    channel = RuntimeChannel(ManagedControl(loaded.switch, loaded.runtime, False,
                                            sizes.append), None)
    try:
        for port in range(1, 6):
            junk = [[] for _ in range(50)]                   # young objects beside it
            ok, out = channel.execute(f"table_add fwd_table fwd {port} => {port}")
            assert ok, out
            assert gc.get_count()[0] == 0 and junk
        assert len(sizes) == 5 and all(size > 0 for size in sizes)
        assert not channel.execute("table_add fwd_table fwd 1 => 2")[0]   # duplicate
        assert len(sizes) == 6                          # a refused write is told too
    finally:
        gc.unfreeze()


def test_channel_table_commands_leave_what_p4runtime_writes_leave(tmp_path):
    """The channel's table commands go to the runtime encoded, as a gRPC Write does
    (ManagedControl._write): P4Runtime Read then returns exactly the entry a P4Runtime
    INSERT of the same key and action leaves, handles work for modify and delete, and
    refused commands are clean errors that change nothing."""
    from p4.v1 import p4runtime_pb2

    from softswitch.daemon.cli_channel.commands import RuntimeChannel
    from softswitch.daemon.cli_channel.control import ManagedControl

    def entries(loaded):
        table = next(t for t in loaded.runtime.index.tables.values()
                     if t.info.preamble.name.endswith("fwd_table"))
        return [loaded.runtime.tables.wire_of(table, r)
                for r in loaded.runtime.tables.records(table.info.preamble.id)], table

    by_cli = _loaded(tmp_path)
    channel = RuntimeChannel(ManagedControl(by_cli.switch, by_cli.runtime), None)
    ok, out = channel.execute("table_add fwd_table fwd 0x0a0000000001 => 3")
    assert ok, out
    written, table = entries(by_cli)

    by_rpc = _loaded(tmp_path)
    request = p4runtime_pb2.WriteRequest()
    entry = request.updates.add(type=p4runtime_pb2.Update.INSERT).entity.table_entry
    entry.table_id = table.info.preamble.id
    match = entry.match.add(field_id=1)
    match.exact.value = bytes.fromhex("0a0000000001")
    action = entry.action.action
    action.action_id = next(a.preamble.id for a in by_rpc.runtime.index.p4info.actions
                            if a.preamble.name.endswith("fwd"))
    action.params.add(param_id=1, value=b"\x03")
    assert by_rpc.runtime.write(request) == [None]
    assert written == entries(by_rpc)[0] and len(written) == 1

    for bad, says in (("table_add fwd_table fwd 0x0a0000000001 => 4", "Match entry exists"),
                      ("table_add fwd_table fwd 0x0a0000000002 => 0x400", "port"),
                      ("table_modify fwd_table fwd 99 1", "handle 99")):
        ok, out = channel.execute(bad)
        assert not ok and says in out and "Traceback" not in out, (bad, out)
    assert entries(by_cli)[0] == written                        # refused: nothing changed
    handle = by_cli.runtime.tables.records(table.info.preamble.id)[0].handle
    assert channel.execute(f"table_modify fwd_table fwd {handle} 5")[0]
    assert entries(by_cli)[0] != written
    assert channel.execute(f"table_delete fwd_table {handle}")[0]
    assert entries(by_cli)[0] == []


def test_commands_by_handle_find_the_entry_by_its_key_and_build_nothing(tmp_path):
    """``table_modify``/``table_delete`` name an entry by its switch handle; the channel
    finds its P4Runtime record by the entry's match key (ManagedControl._record), so a
    command costs the same in a table of any size. Ternary entries (their priority is
    part of the key) and exact ones; entries the C fast path holds as deferred rows stay
    deferred (viewing one must not build the table: that would take it off the batched
    write path), and what the commands leave is what P4Runtime Read returns."""
    from softswitch.core.control import from_bmv2_priority
    from softswitch.daemon.cli_channel.commands import RuntimeChannel
    from softswitch.daemon.cli_channel.control import ManagedControl

    loaded = _loaded(tmp_path)
    channel = RuntimeChannel(ManagedControl(loaded.switch, loaded.runtime), None)

    def handle_of(out: str) -> int:
        return int(out.rsplit("handle", 1)[1].split()[0])

    acl = {}
    for n in range(50):
        ok, out = channel.execute(f"table_add acl deny 0x{n:012x}&&&0xffffffffffff => {n + 1}")
        assert ok, out
        acl[n] = handle_of(out)
    fwd = {}
    for n in range(50):
        ok, out = channel.execute(f"table_add fwd_table fwd 0x{n:012x} => {n % 4 + 1}")
        assert ok, out
        fwd[n] = handle_of(out)
    core = {name.rsplit(".", 1)[-1]: table for name, table in loaded.switch.pb.tables.items()}
    deferred = [name for name in ("acl", "fwd_table") if core[name].bulk_rows() is not None]

    assert channel.execute(f"table_modify acl allow {acl[7]}")[0]
    assert channel.execute(f"table_delete acl {acl[8]}")[0]
    assert channel.execute(f"table_modify fwd_table fwd {fwd[9]} 7")[0]
    assert channel.execute(f"table_delete fwd_table {fwd[10]}")[0]
    ok, out = channel.execute(f"table_delete fwd_table {fwd[10]}")          # gone now
    assert not ok and f"handle {fwd[10]}" in out and "Traceback" not in out, out
    for name in deferred:
        assert core[name].bulk_rows() is not None, f"{name} was built by a command"

    by_name = {t.info.preamble.name.rsplit(".", 1)[-1]: t
               for t in loaded.runtime.index.tables.values()}
    actions = {a.preamble.id: a.preamble.name.rsplit(".", 1)[-1]
               for a in loaded.runtime.index.p4info.actions}

    def read(table: str) -> dict[tuple[bytes, int], tuple[str, list[bytes]]]:
        index = by_name[table]
        out = {}
        for r in loaded.runtime.tables.records(index.info.preamble.id):
            entry = loaded.runtime.tables.canonical(index, r)
            field = entry.match[0]
            value = field.ternary.value if field.HasField("ternary") else field.exact.value
            out[(value, entry.priority)] = (actions[entry.action.action.action_id],
                                            [p.value for p in entry.action.action.params])
        return out

    acl_now, fwd_now = read("acl"), read("fwd_table")
    assert len(acl_now) == 49 and len(fwd_now) == 49
    rank = from_bmv2_priority              # the CLI's priorities are BMv2's (lower wins)
    assert acl_now[(b"\x07", rank(8))] == ("allow", [])
    assert (b"\x08", rank(9)) not in acl_now and acl_now[(b"\x09", rank(10))] == ("deny", [])
    assert fwd_now[(b"\x09", 0)] == ("fwd", [b"\x07"])
    assert (b"\x0a", 0) not in fwd_now


def test_table_add_reports_the_handle_of_the_entry_it_placed(tmp_path):
    """``table_add`` takes the new entry's handle from the table's handle counter (one
    entry placed under the device lock) instead of looking its record up: the handle it
    reports must be the one the switch and P4Runtime's record hold, after failed adds
    and deletes too."""
    from softswitch.daemon.cli_channel.commands import RuntimeChannel
    from softswitch.daemon.cli_channel.control import ManagedControl

    loaded = _loaded(tmp_path)
    channel = RuntimeChannel(ManagedControl(loaded.switch, loaded.runtime), None)
    live: dict[int, int] = {}                       # handle -> the key it was added with

    def add(n: int) -> None:
        ok, out = channel.execute(f"table_add fwd_table fwd 0x{n:012x} => 1")
        assert ok, out
        live[int(out.rsplit("handle", 1)[1])] = n

    for n in range(6):
        add(n)
    ok, out = channel.execute("table_add fwd_table fwd 0x000000000003 => 2")   # duplicate
    assert not ok and "Traceback" not in out, out
    gone = next(h for h, n in live.items() if n == 2)
    assert channel.execute(f"table_delete fwd_table {gone}")[0]
    del live[gone]
    for n in (7, 8):
        add(n)

    name = next(t for t in loaded.switch.pb.tables if t.endswith("fwd_table"))
    for handle, n in live.items():
        assert loaded.switch.table_entry(name, handle).keys[0].value == n
    index = next(t for t in loaded.runtime.index.tables.values()
                 if t.info.preamble.name.endswith("fwd_table"))
    records = loaded.runtime.tables.records(index.info.preamble.id)
    assert sorted(r.handle for r in records if not r.from_program) == sorted(live)


def test_a_modify_sends_the_canonical_entry_with_the_new_action(tmp_path):
    """``table_modify`` encodes a plain record's canonical entry with the new action
    itself (tables.plain_wire_with): with the record's own action that must be exactly
    the canonical TableEntry protobuf serializes, for exact and ternary (priority)
    tables."""
    from softswitch.daemon.cli_channel.commands import RuntimeChannel
    from softswitch.daemon.cli_channel.control import ManagedControl
    from softswitch.p4runtime.tables import plain_wire_with

    loaded = _loaded(tmp_path)
    channel = RuntimeChannel(ManagedControl(loaded.switch, loaded.runtime), None)
    for n in range(5):
        assert channel.execute(f"table_add fwd_table fwd 0x{n:012x} => {n + 1}")[0]
        assert channel.execute(f"table_add acl deny 0x{n:012x}&&&0xff00ff00ff00 => "
                               f"{n + 10}")[0]
    tables = loaded.runtime.tables
    checked = 0
    for index in loaded.runtime.index.tables.values():
        for record in tables.records(index.id):
            if not (record.plain and record.call is not None and record.call.info):
                continue
            expected = tables.canonical(index, record).SerializeToString()
            assert plain_wire_with(index.id, record, record.call.canonical_bytes()) == \
                expected, index.info.preamble.name
            checked += 1
    assert checked == 10
