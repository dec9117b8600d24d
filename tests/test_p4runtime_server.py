"""The P4Runtime server over real gRPC, before any pipeline is loaded: capabilities,
arbitration (primary/backup, roles, duplicate ids, device ids) and the error codes
of requests that arrive too early or from the wrong controller."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch.daemon.device import Device
from softswitch.daemon.rpc.server import serve
from softswitch.devtools.p4runtime_client import StreamClient
from softswitch.p4runtime.roles import RoleTable


@pytest.fixture()
def channel():
    """A channel to a server of device 1 (CPU port 255, role 'sdn' may write anything)."""
    roles = RoleTable.from_data({"roles": [{"name": "sdn", "write": "*"}]})
    device = Device(device_id=1, cpu_port=255, roles=roles)
    srv, port = serve(device, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    yield channel
    channel.close()
    srv.stop(0).wait()


def _stub(channel):
    return p4runtime_pb2_grpc.P4RuntimeStub(channel)


def _arb(msg) -> p4runtime_pb2.MasterArbitrationUpdate:
    assert isinstance(msg, p4runtime_pb2.StreamMessageResponse), msg
    assert msg.WhichOneof("update") == "arbitration"
    return msg.arbitration


def _eid(update) -> int:
    return (update.election_id.high << 64) | update.election_id.low


def test_capabilities(channel):
    resp = _stub(channel).Capabilities(p4runtime_pb2.CapabilitiesRequest())
    assert resp.p4runtime_api_version == "1.4.1"


def test_primary_then_backup_then_failover(channel):
    a = StreamClient(channel)
    a.arbitrate(10, device_id=1)
    first = _arb(a.next())
    assert first.status.code == code_pb2.OK and _eid(first) == 10

    b = StreamClient(channel)
    b.arbitrate(5, device_id=1)
    second = _arb(b.next())
    assert second.status.code == code_pb2.ALREADY_EXISTS and _eid(second) == 10

    c = StreamClient(channel)
    c.arbitrate(20, device_id=1)       # new primary: everyone is told
    assert _arb(c.next()).status.code == code_pb2.OK
    assert _arb(a.next()).status.code == code_pb2.ALREADY_EXISTS
    upd = _arb(b.next())
    assert upd.status.code == code_pb2.ALREADY_EXISTS and _eid(upd) == 20

    c.close()                          # primary leaves: the highest remaining takes over
    assert _arb(a.next()).status.code == code_pb2.OK
    assert _eid(_arb(b.next())) == 10
    a.close()
    last = _arb(b.next())
    assert last.status.code == code_pb2.OK
    b.close()


def test_backup_without_primary_sees_not_found(channel):
    a = StreamClient(channel)
    a.arbitrate(None, device_id=1)     # no election id: never primary
    update = _arb(a.next())
    assert update.status.code == code_pb2.NOT_FOUND
    a.close()


def test_duplicate_election_id_ends_stream(channel):
    a = StreamClient(channel)
    a.arbitrate(7, device_id=1)
    a.next()
    b = StreamClient(channel)
    b.arbitrate(7, device_id=1)
    err = b.next()
    assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.INVALID_ARGUMENT
    a.close()


def test_wrong_device_id_ends_stream(channel):
    a = StreamClient(channel)
    a.arbitrate(1, device_id=99)
    err = a.next()
    assert isinstance(err, grpc.RpcError) and err.code() == grpc.StatusCode.NOT_FOUND


def test_roles_are_independent(channel):
    a = StreamClient(channel)
    a.arbitrate(3, device_id=1, role="sdn")
    b = StreamClient(channel)
    b.arbitrate(1, device_id=1)
    upd = _arb(a.next())
    assert upd.status.code == code_pb2.OK and upd.role.name == "sdn"
    assert _arb(b.next()).status.code == code_pb2.OK
    a.close()
    b.close()


def test_write_codes_before_pipeline(channel):
    stub = _stub(channel)
    write = p4runtime_pb2.WriteRequest(device_id=1)
    with pytest.raises(grpc.RpcError) as exc:     # nobody arbitrated, no election id: allowed,
        stub.Write(write)                          # but there is no pipeline
    assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION

    a = StreamClient(channel)
    a.arbitrate(2, device_id=1)
    a.next()
    write.election_id.low = 1                      # not the primary's id
    with pytest.raises(grpc.RpcError) as exc:
        stub.Write(write)
    assert exc.value.code() == grpc.StatusCode.PERMISSION_DENIED
    write.election_id.low = 2
    with pytest.raises(grpc.RpcError) as exc:
        stub.Write(write)
    assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    write.device_id = 3
    with pytest.raises(grpc.RpcError) as exc:
        stub.Write(write)
    assert exc.value.code() == grpc.StatusCode.NOT_FOUND
    a.close()


def test_read_and_get_config_without_pipeline(channel):
    stub = _stub(channel)
    read = p4runtime_pb2.ReadRequest(device_id=1)
    read.entities.add().table_entry.SetInParent()
    with pytest.raises(grpc.RpcError) as exc:
        list(stub.Read(read))
    assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    # P4Runtime 1.4 GetForwardingPipelineConfig: OK with the config unset (PI answers
    # FAILED_PRECONDITION: see softswitch/p4runtime/README.md)
    got = stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1))
    assert not got.HasField("config")


def test_set_pipeline_errors(channel):
    stub = _stub(channel)
    req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=1, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.COMMIT)
    with pytest.raises(grpc.RpcError) as exc:
        stub.SetForwardingPipelineConfig(req)      # nothing saved
    assert exc.value.code() == grpc.StatusCode.NOT_FOUND
    req.config.cookie.cookie = 3
    with pytest.raises(grpc.RpcError) as exc:
        stub.SetForwardingPipelineConfig(req)      # COMMIT takes no config
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    req.ClearField("config")
    req.action = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
    with pytest.raises(grpc.RpcError) as exc:
        stub.SetForwardingPipelineConfig(req)      # empty device config
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    req.config.p4_device_config = b'{"format": "bmv2"}'
    with pytest.raises(grpc.RpcError) as exc:
        stub.SetForwardingPipelineConfig(req)
    assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "softswitch artifact" in exc.value.details()


def test_packet_out_from_backup_gets_stream_error(channel):
    a = StreamClient(channel)
    a.arbitrate(2, device_id=1)
    a.next()
    b = StreamClient(channel)
    b.arbitrate(1, device_id=1)
    b.next()
    b.send(p4runtime_pb2.StreamMessageRequest(packet=p4runtime_pb2.PacketOut(payload=b"x")))
    err = b.next()
    assert err.WhichOneof("update") == "error"
    assert err.error.canonical_code == code_pb2.PERMISSION_DENIED
    assert err.error.packet_out.packet_out.payload == b"x"
    a.send(p4runtime_pb2.StreamMessageRequest(packet=p4runtime_pb2.PacketOut(payload=b"y")))
    err = a.next()
    assert err.error.canonical_code == code_pb2.FAILED_PRECONDITION
    a.close()
    b.close()


def test_writes_are_checked_per_role(channel):
    stub = _stub(channel)
    a = StreamClient(channel)
    a.arbitrate(5, device_id=1, role="sdn")
    a.next()
    write = p4runtime_pb2.WriteRequest(device_id=1, role="sdn")
    write.election_id.low = 5
    with pytest.raises(grpc.RpcError) as exc:        # arbitration passes; no pipeline
        stub.Write(write)
    assert exc.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    write.role = ""                                   # the default role has no primary
    with pytest.raises(grpc.RpcError) as exc:
        stub.Write(write)
    assert exc.value.code() == grpc.StatusCode.PERMISSION_DENIED
    a.close()


def test_a_stopped_server_leaves_no_reclaimer_thread():
    """serve() starts the device's memory reclaimer; stopping the server ends it (a
    process that starts servers one after another would otherwise gather threads that
    trim its heap every 2 s)."""
    device = Device(device_id=3)
    srv, _ = serve(device, "127.0.0.1:0")
    reclaimer = device.reclaimer
    assert reclaimer is not None and reclaimer._thread.is_alive()      # noqa: SLF001
    srv.stop(0).wait(5)
    assert device.reclaimer is None
    reclaimer._thread.join(5)                                            # noqa: SLF001
    assert not reclaimer._thread.is_alive()                              # noqa: SLF001
