"""Shared by the security/robustness tests of the P4Runtime server (roles, spec error
codes, fuzzing, TLS): a small program both softswitch and p4c-bm2-ss compile, a live
server on a free port, and request builders."""

from __future__ import annotations

from dataclasses import dataclass, field

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from programs import (
    CONTROLLER_HEADERS,
    CONTROLLER_PARSER,
    P4RT_NAMES,
    PACKET_IN_EGRESS,
    v1model_program,
)

from softswitch.daemon.device import Device
from softswitch.daemon.rpc.server import serve
from softswitch.devtools.p4runtime_client import StreamClient
from softswitch.frontend.limits import DEFAULT as DEFAULT_LIMITS
from softswitch.frontend.limits import Limits
from softswitch.p4runtime import errors, pipeline
from softswitch.p4runtime.roles import RoleTable

Update = p4runtime_pb2.Update
SetReq = p4runtime_pb2.SetForwardingPipelineConfigRequest
CPU = 255
DEVICE_ID = 1

PROGRAM = v1model_program(
    types=CONTROLLER_HEADERS + "header eth_t { bit<48> dst; bit<48> src; bit<16> etype; }",
    headers="packet_out_t packet_out; packet_in_t packet_in; eth_t eth;",
    parser=CONTROLLER_PARSER,
    ingress="""
    counter(8, CounterType.packets) hits;
    register<bit<9>>(4) last_port;
    direct_counter(CounterType.packets) acl_hits;
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    action deny() { mark_to_drop(sm); }
    action allow() { }
    action set_port(bit<9> port) { sm.egress_spec = port; }
    action_selector(HashAlgorithm.crc16, 32w16, 32w16) sel;
    table fwd_table {
        key = { hdr.eth.dst: exact; }
        actions = { fwd; drop; }
        default_action = drop();
    }
    table acl {
        key = { hdr.eth.src: ternary; }
        actions = { deny; allow; }
        default_action = allow();
        counters = acl_hits;
    }
    table ecmp {
        key = { hdr.eth.etype: exact; hdr.eth.src: selector; }
        actions = { set_port; }
        implementation = sel;
    }
    apply {
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else if (hdr.eth.etype == 0x9999) {
            sm.egress_spec = 255;
        } else {
            hits.count(0);
            last_port.write(0, sm.ingress_port);
            fwd_table.apply();
            acl.apply();
            ecmp.apply();
        }
    }
""",
    egress=PACKET_IN_EGRESS,
    emit=["hdr.packet_in", "hdr.eth"], names=P4RT_NAMES)

ROLES = {"roles": [
    {"name": "acl", "write": ["I.acl", "multicast_groups"], "packet_in": True},
    {"name": "ops", "write": "*", "pipeline": True, "packet_out": True},
]}


def compile_p4info(tmp_dir) -> p4info_pb2.P4Info:
    path = tmp_dir / "prog.p4"
    path.write_text(PROGRAM)
    return pipeline.compile_file(str(path), {}).p4info


def ids_of(p4info: p4info_pb2.P4Info) -> dict[str, int]:
    return {o.preamble.name: o.preamble.id
            for kind in ("tables", "actions", "counters", "direct_counters",
                         "action_profiles", "controller_packet_metadata")
            for o in getattr(p4info, kind)}


def election(msg, election_id: int | None) -> None:
    if election_id is not None:
        msg.election_id.high = election_id >> 64
        msg.election_id.low = election_id & ((1 << 64) - 1)


@dataclass
class Server:
    """A softswitch P4Runtime server with the program loaded (no controller yet)."""

    device: Device
    grpc_server: grpc.Server
    channel: grpc.Channel
    stub: p4runtime_pb2_grpc.P4RuntimeStub
    p4info: p4info_pb2.P4Info
    ids: dict[str, int]
    sent: list[tuple[int, bytes]] = field(default_factory=list)
    streams: list[StreamClient] = field(default_factory=list)

    @classmethod
    def start(cls, p4info: p4info_pb2.P4Info, roles: dict | None = None,
              load: bool = True, limits: Limits = DEFAULT_LIMITS, **serve_kw) -> Server:
        table = RoleTable.from_data(roles) if roles is not None else None
        device = Device(device_id=DEVICE_ID, cpu_port=CPU, roles=table, limits=limits)
        srv, port = serve(device, "127.0.0.1:0", **serve_kw)
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        server = cls(device, srv, channel, p4runtime_pb2_grpc.P4RuntimeStub(channel),
                     p4info, ids_of(p4info))
        device.transmit = lambda port, data: server.sent.append((port, data))
        if load:
            req = server.set_request(SetReq.VERIFY_AND_COMMIT)
            server.stub.SetForwardingPipelineConfig(req)
        return server

    def stream(self, election_id: int | None, role: str = "",
               device_id: int = DEVICE_ID) -> StreamClient:
        client = StreamClient(self.channel)
        client.arbitrate(election_id, device_id=device_id, role=role)
        self.streams.append(client)
        return client

    def set_request(self, action=SetReq.VERIFY_AND_COMMIT, election_id: int | None = None,
                    role: str = "", device_id: int = DEVICE_ID) -> SetReq:
        req = SetReq(device_id=device_id, action=action, role=role)
        election(req, election_id)
        req.config.p4info.CopyFrom(self.p4info)
        req.config.p4_device_config = PROGRAM.encode()
        return req

    def write_request(self, *updates: Update, election_id: int | None = None,
                      role: str = "", device_id: int = DEVICE_ID,
                      atomicity=p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR
                      ) -> p4runtime_pb2.WriteRequest:
        req = p4runtime_pb2.WriteRequest(device_id=device_id, role=role, atomicity=atomicity)
        election(req, election_id)
        req.updates.extend(updates)
        return req

    def read(self, *entities: p4runtime_pb2.Entity, role: str = "",
             device_id: int = DEVICE_ID) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=device_id, role=role)
        req.entities.extend(entities)
        return [e for resp in self.stub.Read(req, timeout=30) for e in resp.entities]

    def read_all(self) -> list[bytes]:
        """Every entity the server holds that a write can change, serialized."""
        entities = []
        for kind in ("table_entry", "action_profile_member", "action_profile_group",
                     "counter_entry", "direct_counter_entry"):
            entity = p4runtime_pb2.Entity()
            getattr(entity, kind).SetInParent()
            entities.append(entity)
        pre = p4runtime_pb2.Entity()
        pre.packet_replication_engine_entry.SetInParent()
        entities.append(pre)
        return sorted(e.SerializeToString() for e in self.read(*entities))

    def close(self) -> None:
        for stream in self.streams:
            stream.close()
        self.channel.close()
        self.grpc_server.stop(0).wait()


def fwd_entry(ids: dict[str, int], dst: int, port: int) -> p4runtime_pb2.TableEntry:
    te = p4runtime_pb2.TableEntry(table_id=ids["I.fwd_table"])
    te.match.add(field_id=1).exact.value = dst.to_bytes(6, "big")
    te.action.action.action_id = ids["I.fwd"]
    te.action.action.params.add(param_id=1, value=port.to_bytes(2, "big"))
    return te


def acl_entry(ids: dict[str, int], src: int, priority: int = 10) -> p4runtime_pb2.TableEntry:
    te = p4runtime_pb2.TableEntry(table_id=ids["I.acl"], priority=priority)
    fm = te.match.add(field_id=1)
    fm.ternary.value, fm.ternary.mask = src.to_bytes(6, "big"), b"\xff" * 6
    te.action.action.action_id = ids["I.deny"]
    return te


def upd(kind, **entity) -> Update:
    return Update(type=kind, entity=p4runtime_pb2.Entity(**entity))


def code_of(call) -> grpc.StatusCode:
    """The status code of a unary call (OK when it returns)."""
    try:
        result = call()
        if hasattr(result, "__iter__") and not hasattr(result, "SerializeToString"):
            list(result)
    except grpc.RpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


def update_codes(exc: grpc.RpcError) -> list[int]:
    return [e.canonical_code for e in errors.details_of(exc)]
