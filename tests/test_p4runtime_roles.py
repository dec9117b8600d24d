"""Arbitration and roles per P4Runtime 1.4 (Client Arbitration, Default Role, Role
Config; the Write/SetForwardingPipelineConfig/Read checks): every RPC against
{primary, backup, no election id, unknown role, other device id}, restricted roles
from a ``--role-config`` file, and the role-bypass finding of issue 13 (an unknown
role without election id replacing the pipeline under the primary)."""

from __future__ import annotations

import json
import queue

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from polling import wait_until
from security_support import (
    CPU,
    DEVICE_ID,
    ROLES,
    Server,
    SetReq,
    Update,
    acl_entry,
    code_of,
    compile_p4info,
    fwd_entry,
    upd,
    update_codes,
)

from softswitch.devtools.p4runtime_client import StreamClient
from softswitch.diagnostics import P4Error
from softswitch.p4runtime.roles import RoleTable

OK = grpc.StatusCode.OK
NF = grpc.StatusCode.NOT_FOUND
PD = grpc.StatusCode.PERMISSION_DENIED
PRIMARY_ID, BACKUP_ID = 10, 5

# who: (election id, role, device id) of a request
WHO = {
    "primary": (PRIMARY_ID, "", DEVICE_ID),
    "backup": (BACKUP_ID, "", DEVICE_ID),
    "no election id": (None, "", DEVICE_ID),
    "unknown role": (PRIMARY_ID, "intruder", DEVICE_ID),
    "unknown role, no election id": (None, "intruder", DEVICE_ID),
    "other device id": (PRIMARY_ID, "", DEVICE_ID + 1),
}


@pytest.fixture(scope="module")
def p4info(tmp_path_factory):
    return compile_p4info(tmp_path_factory.mktemp("roles"))


@pytest.fixture()
def managed(p4info):
    """The program loaded; a primary (10) and a backup (5) in the default role."""
    server = Server.start(p4info, ROLES)
    # closed even when the set-up fails: a stream left open holds a server thread that
    # the interpreter's exit would wait for
    try:
        primary = server.stream(PRIMARY_ID)
        assert primary.next().arbitration.status.code == code_pb2.OK
        backup = server.stream(BACKUP_ID)
        assert backup.next().arbitration.status.code == code_pb2.ALREADY_EXISTS
        server.primary, server.backup = primary, backup
        yield server
    finally:
        server.close()


# ---------------------------------------------------------------------- the matrix
WRITE = {"primary": OK, "backup": PD, "no election id": PD, "unknown role": NF,
         "unknown role, no election id": NF, "other device id": NF}
SET_PIPELINE = WRITE
READ = {"primary": OK, "backup": OK, "no election id": OK, "unknown role": NF,
        "unknown role, no election id": NF, "other device id": NF}


@pytest.mark.parametrize("who", list(WHO))
def test_write(managed, who):
    election_id, role, device_id = WHO[who]
    entry = fwd_entry(managed.ids, 0x0A, 2)
    req = managed.write_request(upd(Update.INSERT, table_entry=entry),
                                election_id=election_id, role=role, device_id=device_id)
    assert code_of(lambda: managed.stub.Write(req)) == WRITE[who]
    expected = 1 if WRITE[who] == OK else 0          # a refused request changes nothing
    assert len(managed.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=managed.ids["I.fwd_table"])))) == expected


@pytest.mark.parametrize("who", list(WHO))
def test_set_pipeline(managed, who):
    managed.stub.Write(managed.write_request(
        upd(Update.INSERT, table_entry=fwd_entry(managed.ids, 0x0B, 3)),
        election_id=PRIMARY_ID))
    election_id, role, device_id = WHO[who]
    req = managed.set_request(SetReq.VERIFY_AND_COMMIT, election_id, role, device_id)
    assert code_of(lambda: managed.stub.SetForwardingPipelineConfig(req)) == \
        SET_PIPELINE[who]
    left = managed.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=managed.ids["I.fwd_table"])))
    assert len(left) == (0 if SET_PIPELINE[who] == OK else 1)   # a commit clears state


@pytest.mark.parametrize("who", list(WHO))
def test_read(managed, who):
    _, role, device_id = WHO[who]
    req = p4runtime_pb2.ReadRequest(device_id=device_id, role=role)
    req.entities.add().table_entry.SetInParent()
    assert code_of(lambda: managed.stub.Read(req)) == READ[who]


@pytest.mark.parametrize("who", list(WHO))
def test_get_pipeline_and_capabilities(managed, who):
    _, _, device_id = WHO[who]
    get = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=device_id)
    assert code_of(lambda: managed.stub.GetForwardingPipelineConfig(get)) == \
        (OK if device_id == DEVICE_ID else NF)
    assert code_of(lambda: managed.stub.Capabilities(
        p4runtime_pb2.CapabilitiesRequest())) == OK


STREAM = {"primary": ("status", code_pb2.OK), "backup": ("status", code_pb2.ALREADY_EXISTS),
          "no election id": ("status", code_pb2.ALREADY_EXISTS),
          "unknown role": ("ends", grpc.StatusCode.NOT_FOUND),
          "unknown role, no election id": ("ends", grpc.StatusCode.NOT_FOUND),
          "other device id": ("ends", grpc.StatusCode.NOT_FOUND)}


@pytest.mark.parametrize("who", list(WHO))
def test_stream_arbitration_and_packet_out(managed, who):
    """A newcomer's arbitration, then a PacketOut on its stream."""
    election_id, role, device_id = WHO[who]
    if who == "primary":
        stream = managed.primary
    elif who == "backup":
        stream = managed.backup
    else:
        stream = managed.stream(election_id, role, device_id)
        got = stream.next()
        kind, code = STREAM[who]
        if kind == "ends":
            assert isinstance(got, grpc.RpcError) and got.code() == code, got
            return
        assert got.arbitration.status.code == code
        assert got.arbitration.election_id.low == PRIMARY_ID
    frame = bytes(6) + bytes.fromhex("020000000001") + b"\x08\x00" + bytes(46)
    out = p4runtime_pb2.PacketOut(payload=frame)
    out.metadata.add(metadata_id=1, value=b"\x04")
    stream.send(p4runtime_pb2.StreamMessageRequest(packet=out))
    if who == "primary":
        deadline_sent = wait_until(lambda: managed.sent, 5.0)
        assert deadline_sent and managed.sent[-1][0] == 4
    else:
        err = stream.next()
        assert err.WhichOneof("update") == "error"
        assert err.error.canonical_code == code_pb2.PERMISSION_DENIED
        assert managed.sent == []


# ---------------------------------------------------------------------- issue 13 findings
def test_unknown_role_cannot_replace_the_pipeline_under_the_primary(managed):
    """The role-bypass finding: role 'intruder', no election id, was answered OK."""
    managed.stub.Write(managed.write_request(
        upd(Update.INSERT, table_entry=fwd_entry(managed.ids, 0x0C, 1)),
        election_id=PRIMARY_ID))
    before = managed.read_all()
    for action in (SetReq.VERIFY_AND_COMMIT, SetReq.RECONCILE_AND_COMMIT, SetReq.VERIFY):
        req = managed.set_request(action, role="intruder")
        with pytest.raises(grpc.RpcError) as exc:
            managed.stub.SetForwardingPipelineConfig(req)
        assert exc.value.code() == NF and "unknown role 'intruder'" in exc.value.details()
    with pytest.raises(grpc.RpcError) as exc:
        managed.stub.Write(managed.write_request(
            upd(Update.DELETE, table_entry=fwd_entry(managed.ids, 0x0C, 1)), role="intruder"))
    assert exc.value.code() == NF
    assert managed.read_all() == before


def test_no_election_id_only_while_nobody_is_connected(p4info):
    server = Server.start(p4info, ROLES)
    try:
        entry = fwd_entry(server.ids, 0x0D, 1)
        server.stub.Write(server.write_request(upd(Update.INSERT, table_entry=entry)))
        req = server.write_request(upd(Update.DELETE, table_entry=entry), election_id=3)
        assert code_of(lambda: server.stub.Write(req)) == PD     # nobody is primary
        acl = server.stream(7, role="acl")                         # a primary elsewhere
        assert acl.next().arbitration.status.code == code_pb2.OK
        req = server.write_request(upd(Update.DELETE, table_entry=entry))
        assert code_of(lambda: server.stub.Write(req)) == PD     # ... closes the door
        set_req = server.set_request()
        assert code_of(lambda: server.stub.SetForwardingPipelineConfig(set_req)) == PD
    finally:
        server.close()


# ---------------------------------------------------------------------- restricted roles
def test_restricted_role_writes_only_its_entities(managed):
    acl = managed.stream(1, role="acl")
    update = acl.next().arbitration
    assert update.status.code == code_pb2.OK and update.role.name == "acl"
    batch = managed.write_request(
        upd(Update.INSERT, table_entry=acl_entry(managed.ids, 0x0E)),
        upd(Update.INSERT, table_entry=fwd_entry(managed.ids, 0x0E, 1)),
        election_id=1, role="acl")
    with pytest.raises(grpc.RpcError) as exc:
        managed.stub.Write(batch)
    assert update_codes(exc.value) == [code_pb2.OK, code_pb2.PERMISSION_DENIED]
    assert len(managed.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))) == 1
    # its table's direct counter comes with it; an indirect counter does not
    direct = p4runtime_pb2.DirectCounterEntry(table_entry=acl_entry(managed.ids, 0x0E))
    direct.data.packet_count = 5
    managed.stub.Write(managed.write_request(upd(Update.MODIFY, direct_counter_entry=direct),
                                             election_id=1, role="acl"))
    counter = p4runtime_pb2.CounterEntry(counter_id=managed.ids["I.hits"])
    counter.index.index = 0
    with pytest.raises(grpc.RpcError) as exc:
        managed.stub.Write(managed.write_request(upd(Update.MODIFY, counter_entry=counter),
                                                 election_id=1, role="acl"))
    assert update_codes(exc.value) == [code_pb2.PERMISSION_DENIED]
    group = p4runtime_pb2.Entity()
    group.packet_replication_engine_entry.multicast_group_entry.multicast_group_id = 1
    managed.stub.Write(managed.write_request(Update(type=Update.INSERT, entity=group),
                                             election_id=1, role="acl"))
    clone = p4runtime_pb2.Entity()
    clone.packet_replication_engine_entry.clone_session_entry.session_id = 1
    with pytest.raises(grpc.RpcError) as exc:
        managed.stub.Write(managed.write_request(Update(type=Update.INSERT, entity=clone),
                                                 election_id=1, role="acl"))
    assert update_codes(exc.value) == [code_pb2.PERMISSION_DENIED]


def test_restricted_role_cannot_set_the_pipeline_or_send_packets(managed):
    acl = managed.stream(1, role="acl")
    acl.next()
    req = managed.set_request(SetReq.VERIFY, election_id=1, role="acl")
    with pytest.raises(grpc.RpcError) as exc:
        managed.stub.SetForwardingPipelineConfig(req)
    assert exc.value.code() == PD and "may not set the forwarding pipeline" in \
        exc.value.details()
    acl.send(p4runtime_pb2.StreamMessageRequest(packet=p4runtime_pb2.PacketOut(payload=b"x")))
    err = acl.next()
    assert err.error.canonical_code == code_pb2.PERMISSION_DENIED
    ops = managed.stream(1, role="ops")              # full access with pipeline: true
    assert ops.next().arbitration.status.code == code_pb2.OK
    req = managed.set_request(SetReq.VERIFY, election_id=1, role="ops")
    managed.stub.SetForwardingPipelineConfig(req)


def test_read_is_filtered_by_role(managed):
    managed.stub.Write(managed.write_request(
        upd(Update.INSERT, table_entry=acl_entry(managed.ids, 0x0F)),
        upd(Update.INSERT, table_entry=fwd_entry(managed.ids, 0x0F, 1)),
        election_id=PRIMARY_ID))
    every = p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())
    assert len(managed.read(every)) == 2
    got = managed.read(every, role="acl")
    assert [e.table_entry.table_id for e in got] == [managed.ids["I.acl"]]
    fwd = p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=managed.ids["I.fwd_table"]))
    assert managed.read(fwd, role="acl") == []
    counters = p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry())
    assert managed.read(counters, role="acl") == []
    assert len(managed.read(counters)) == 8


def test_packet_in_goes_to_roles_that_want_it(managed):
    acl = managed.stream(1, role="acl")               # packet_in: true
    acl.next()
    ops = managed.stream(1, role="ops")               # packet_in: false
    ops.next()
    frame = bytes(6) + bytes.fromhex("020000000001") + b"\x99\x99" + bytes(46)
    managed.device.receive(3, frame)
    assert managed.primary.next().packet.payload[-46:] == bytes(46)
    assert acl.next().WhichOneof("update") == "packet"
    with pytest.raises(queue.Empty):
        ops.next(timeout=0.3)
    assert managed.device.cpu_port == CPU


def test_arbitration_rules(managed):
    config = p4runtime_pb2.MasterArbitrationUpdate(device_id=DEVICE_ID)
    config.role.name = "acl"
    config.role.config.type_url = "type.googleapis.com/google.protobuf.Empty"
    stream = managed.stream(None)
    stream.next()                                      # a backup of the default role
    stream.send(p4runtime_pb2.StreamMessageRequest(arbitration=config))
    got = stream.next()
    assert isinstance(got, grpc.RpcError) and \
        got.code() == grpc.StatusCode.FAILED_PRECONDITION   # role changed on a stream
    fresh = managed.stream(None)
    fresh.next()
    other = p4runtime_pb2.MasterArbitrationUpdate(device_id=DEVICE_ID + 5)
    fresh.send(p4runtime_pb2.StreamMessageRequest(arbitration=other))
    got = fresh.next()
    assert isinstance(got, grpc.RpcError) and \
        got.code() == grpc.StatusCode.FAILED_PRECONDITION   # device changed on a stream
    newcomer = StreamClient(managed.channel)
    managed.streams.append(newcomer)
    newcomer.send(p4runtime_pb2.StreamMessageRequest(arbitration=config))
    got = newcomer.next()
    assert isinstance(got, grpc.RpcError) and \
        got.code() == grpc.StatusCode.INVALID_ARGUMENT       # role.config from a client


# ---------------------------------------------------------------------- the role file
def test_role_config_file(tmp_path):
    path = tmp_path / "roles.yaml"
    path.write_text("roles:\n  - name: acl\n    write: [I.acl, 0x1234, clone_sessions]\n")
    table = RoleTable.load(str(path))
    assert table.get("acl").writes == ("I.acl", 0x1234, "clone_sessions")
    assert table.get("").full_access
    (tmp_path / "roles.json").write_text(json.dumps(ROLES))
    assert RoleTable.load(str(tmp_path / "roles.json")).get("ops").pipeline


@pytest.mark.parametrize("data, message", [
    ({"roles": [{"name": ""}]}, "non-empty string"),
    ({"roles": [{"name": "a"}, {"name": "a"}]}, "defined twice"),
    ({"roles": [{"name": "a", "write": "all"}]}, "'write' must be"),
    ({"roles": [{"name": "a", "pipeline": True}]}, "needs 'write: \"*\"'"),
    ({"roles": [{"name": "a", "packet_in": "yes"}]}, "true or false"),
    ({"roles": [{"name": "a", "writes": []}]}, "unknown key 'writes'"),
    ({"role": []}, "one key, 'roles'"),
])
def test_role_config_errors(data, message):
    with pytest.raises(P4Error) as exc:
        RoleTable.from_data(data, "roles.yaml")
    assert message in exc.value.message and exc.value.message.startswith("roles.yaml")


def test_run_refuses_a_bad_role_config(tmp_path):
    import subprocess
    import sys

    from security_support import PROGRAM
    (tmp_path / "prog.p4").write_text(PROGRAM)
    (tmp_path / "roles.yaml").write_text("roles:\n  - name: acl\n    write: [I.nope]\n")
    (tmp_path / "bad.yaml").write_text("roles: [\n")
    for args, message in (
            ([str(tmp_path / "prog.p4"), "--role-config", str(tmp_path / "roles.yaml")],
             "role 'acl': 'I.nope' is not a table"),
            (["--no-p4", "--role-config", str(tmp_path / "bad.yaml")], "not valid YAML"),
            (["--no-p4", "--role-config", str(tmp_path / "none.yaml")], "cannot read")):
        proc = subprocess.run([sys.executable, "-m", "softswitch", "run", *args, "--",
                               "--grpc-server-addr", "127.0.0.1:0"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1 and message in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
