"""P4Runtime's Python bindings as ``make setup`` installs them
(softswitch/devtools/p4runtime_stubs.py): generated for protobuf's upb runtime from the
p4runtime 1.4.1 wheel's own descriptors, so the same protocol under the same import
names, and working end to end with softswitch's P4Runtime server."""

from __future__ import annotations

import importlib
import importlib.metadata
import pathlib
import zipfile

import grpc
import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.internal import api_implementation
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch.daemon.device import Device
from softswitch.daemon.rpc.server import serve
from softswitch.devtools import p4runtime_stubs
from softswitch.devtools.p4runtime_client import StreamClient
from softswitch.p4runtime import pipeline

BINDINGS = pathlib.Path(__file__).resolve().parents[1] / "p4runtime_bindings" / "p4"

PROGRAM = pathlib.Path(__file__).resolve().parents[1] / "p4src" / "samples" / "l3_basic.p4"


def _module(proto_name: str):
    return importlib.import_module(proto_name[:-len(".proto")].replace("/", ".") + "_pb2")


@pytest.fixture(scope="module")
def wheel() -> pathlib.Path:
    """PyPI's p4runtime 1.4.1 wheel (cached by `make setup`; checked against its hash)."""
    return p4runtime_stubs.input_wheel()


def test_stubs_run_on_upb():
    assert api_implementation.Type() == "upb"
    # The modules imported are tailcc's own bindings (p4runtime_bindings/p4, installed
    # with the package), not a leftover of PyPI's p4runtime wheel.
    assert "tailcc" in importlib.metadata.packages_distributions().get("p4", [])
    for module in (p4runtime_pb2, p4runtime_pb2_grpc, p4info_pb2):
        assert pathlib.Path(module.__file__).resolve().is_relative_to(BINDINGS), \
            module.__file__
    assert "Protobuf Python Version: 6." in pathlib.Path(p4runtime_pb2.__file__).read_text()


def _shape(fd: descriptor_pb2.FileDescriptorProto) -> set[tuple]:
    """Every message field, enum value and RPC of a file, to name what differs."""
    out: set[tuple] = set()

    def message(prefix: str, m: descriptor_pb2.DescriptorProto) -> None:
        name = f"{prefix}.{m.name}"
        for f in m.field:
            oneof = m.oneof_decl[f.oneof_index].name if f.HasField("oneof_index") else None
            out.add(("field", name, f.name, f.number, f.type, f.label, f.type_name, oneof))
        for e in m.enum_type:
            enum(name, e)
        for n in m.nested_type:
            message(name, n)

    def enum(prefix: str, e: descriptor_pb2.EnumDescriptorProto) -> None:
        out.update(("enum", f"{prefix}.{e.name}", v.name, v.number) for v in e.value)

    for m in fd.message_type:
        message(fd.package, m)
    for e in fd.enum_type:
        enum(fd.package, e)
    for s in fd.service:
        out.update(("rpc", s.name, r.name, r.input_type, r.output_type,
                    r.client_streaming, r.server_streaming) for r in s.method)
    return out


def test_stubs_describe_the_wheels_protocol(wheel):
    """Each stub module's descriptor is the wheel's, message for message, field for field
    (options included), for every file the wheel has."""
    theirs = p4runtime_stubs.wheel_descriptors(wheel)
    assert set(theirs) == {"p4/v1/p4runtime.proto", "p4/v1/p4data.proto",
                           "p4/config/v1/p4info.proto", "p4/config/v1/p4types.proto"}
    for name, data in theirs.items():
        want = descriptor_pb2.FileDescriptorProto.FromString(data)
        module = _module(name)
        got = descriptor_pb2.FileDescriptorProto()
        module.DESCRIPTOR.CopyToProto(got)
        assert _shape(got) == _shape(want), name
        assert got == want, name
        assert descriptor_pb2.FileDescriptorProto.FromString(
            module.DESCRIPTOR.serialized_pb) == want, name
    # The live classes agree with the descriptors (spot check of what the project uses).
    te = p4runtime_pb2.TableEntry.DESCRIPTOR
    assert [(f.name, f.number) for f in te.fields][:4] == [
        ("table_id", 1), ("match", 2), ("action", 3), ("priority", 4)]
    assert p4runtime_pb2.Update.Type.Value("DELETE") == 3


def test_stubs_are_what_the_generator_makes_from_the_wheel(wheel, tmp_path):
    """Reproducible: two builds from the same wheel are byte-identical, and the modules
    tailcc ships (p4runtime_bindings/p4) are exactly the built ones."""
    first = p4runtime_stubs.build_wheel(wheel, tmp_path / "a")
    second = p4runtime_stubs.build_wheel(wheel, tmp_path / "b")
    assert first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as zf:
        sources = [n for n in zf.namelist() if n.endswith(".py")]
        assert "p4/v1/p4runtime_pb2_grpc.py" in sources
        for name in sources:
            assert (BINDINGS.parent / name).read_bytes() == zf.read(name), name


def test_embedded_descriptor_reads_both_generated_styles():
    old = "DESCRIPTOR = _descriptor.FileDescriptor(name='x', serialized_pb=b'\\n\\x01x')\n"
    new = "DESCRIPTOR = _descriptor_pool.Default().AddSerializedFile(b'\\n\\x01y')\n"
    assert p4runtime_stubs.embedded_descriptor(old) == b"\n\x01x"
    assert p4runtime_stubs.embedded_descriptor(new) == b"\n\x01y"
    with pytest.raises(p4runtime_stubs.StubError):
        p4runtime_stubs.embedded_descriptor("x = 1\n")


def _route(table_id: int, action_id: int, i: int) -> p4runtime_pb2.TableEntry:
    te = p4runtime_pb2.TableEntry(table_id=table_id)
    lpm = te.match.add(field_id=1).lpm
    lpm.value, lpm.prefix_len = bytes([10, i, 0, 0]), 16
    te.action.action.action_id = action_id
    for pid, value in ((1, bytes([i % 8 + 1])), (2, b"\x02\x00\x00\x00\x00\x01"),
                       (3, bytes([2, 0, 0, 0, 0, i]))):
        te.action.action.params.add(param_id=pid, value=value)
    return te


def test_write_request_round_trips_through_softswitch():
    """A WriteRequest built with the stubs goes through softswitch's P4Runtime server
    (same runtime, real gRPC): what is read back is what was written, and an error comes
    back as google.rpc.Status with P4Runtime Error details."""
    device = Device(device_id=0, cpu_port=255)
    server, port = serve(device, "127.0.0.1:0")
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
    stream = StreamClient(channel)
    try:
        stream.arbitrate(1)
        assert stream.next().arbitration.status.code == code_pb2.OK
        info = pipeline.compile_file(str(PROGRAM), {}).p4info
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=0,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT)
        req.election_id.low = 1
        req.config.p4info.CopyFrom(info)
        req.config.p4_device_config = PROGRAM.read_bytes()
        stub.SetForwardingPipelineConfig(req)
        ids = {o.preamble.name: o.preamble.id for o in (*info.tables, *info.actions)}
        table, action = ids["L3Ingress.ipv4_lpm"], ids["L3Ingress.set_next_hop"]

        write = p4runtime_pb2.WriteRequest(device_id=0)
        write.election_id.low = 1
        routes = [_route(table, action, i) for i in range(1, 6)]
        for te in routes:
            write.updates.add(type=p4runtime_pb2.Update.INSERT).entity.table_entry.CopyFrom(te)
        wire = write.SerializeToString()
        assert p4runtime_pb2.WriteRequest.FromString(wire) == write
        stub.Write(write)

        read = p4runtime_pb2.ReadRequest(device_id=0)
        read.entities.add().table_entry.table_id = table
        got = [e.table_entry for r in stub.Read(read) for e in r.entities]
        key = lambda te: te.match[0].lpm.value  # noqa: E731
        assert sorted(got, key=key) == sorted(routes, key=key)

        with pytest.raises(grpc.RpcError) as err:
            stub.Write(write)                          # the same entries again
        assert err.value.code() == grpc.StatusCode.UNKNOWN
        status = next(status_pb2.Status.FromString(v) for k, v in
                      err.value.trailing_metadata() if k == "grpc-status-details-bin")
        details = []
        for any_ in status.details:
            e = p4runtime_pb2.Error()
            assert any_.Unpack(e)
            details.append(e.canonical_code)
        assert details == [code_pb2.ALREADY_EXISTS] * len(routes)
    finally:
        stream.close()
        channel.close()
        server.stop(0).wait()
