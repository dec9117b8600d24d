"""The P4Runtime 1.4 error-code cases of issue 13, runnable against any P4Runtime
server (softswitch, or BMv2's ``simple_switch_grpc``) that runs security_support's
program: each case returns the code the server answered (for a Write that failed
per update, the update's code)."""

from __future__ import annotations

from collections.abc import Callable

import grpc
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from security_support import Update, election, fwd_entry, ids_of, upd

from softswitch.devtools.p4runtime_client import StreamClient
from softswitch.p4runtime import errors

SetReq = p4runtime_pb2.SetForwardingPipelineConfigRequest
PRIMARY = 10

# case: (what P4Runtime 1.4 says, where)
SPEC = {
    "GetForwardingPipelineConfig before a pipeline is set": (
        "OK (config unset)", "§15 GetForwardingPipelineConfig RPC"),
    "Write: value wider than the field (7 bytes for bit<48>)": (
        "OUT_OF_RANGE", "§8.3 Bytestrings"),
    "Write: action parameter wider than bit<9> (0x0200)": ("OUT_OF_RANGE", "§8.3"),
    "Write: empty byte string": ("OUT_OF_RANGE", "§8.3"),
    "Write: zero-padded byte string (9 bytes for bit<48>)": ("OK", "§8.3 (since 1.4)"),
    "Write: unknown role with the primary's election id": (
        "NOT_FOUND", "§12 Write RPC, check 1"),
    "Write: another device id": ("NOT_FOUND", "§12 Write RPC, check 1"),
    "Write: no election id while a primary exists": (
        "PERMISSION_DENIED", "§12 Write RPC, check 2"),
    "Write: group with an unknown member": (
        "NOT_FOUND", "§9.2 ActionProfileGroup INSERT"),
    "Write: counter index -1": ("INVALID_ARGUMENT", "§9.3 CounterEntry MODIFY"),
    "Write: counter index past its size": ("OUT_OF_RANGE", "§9.3 CounterEntry MODIFY"),
    "Write: register cell": ("OK", "§9.7 RegisterEntry"),
    "Write: clone session with class_of_service": (
        "OK", "§9.5 PacketReplicationEngineEntry"),
    "SetForwardingPipelineConfig: COMMIT with nothing saved": (
        "NOT_FOUND", "§14 SetForwardingPipelineConfig RPC, COMMIT"),
    "SetForwardingPipelineConfig: COMMIT carrying a config": (
        "INVALID_ARGUMENT", "§14 SetForwardingPipelineConfig RPC, COMMIT"),
    "SetForwardingPipelineConfig: unknown role": (
        "NOT_FOUND", "§14 SetForwardingPipelineConfig RPC, check 1"),
}


class Target:
    """A server under test: its address, device id and pipeline."""

    def __init__(self, address: str, device_id: int, p4info: p4info_pb2.P4Info,
                 device_config: bytes) -> None:
        self.channel = grpc.insecure_channel(address)
        grpc.channel_ready_future(self.channel).result(timeout=60)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.device_id = device_id
        self.p4info = p4info
        self.device_config = device_config
        self.ids = ids_of(p4info)
        self.ids.update({o.preamble.name: o.preamble.id for o in p4info.registers})
        self.stream: StreamClient | None = None

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()
        self.channel.close()

    # ------------------------------------------------------------------ plumbing
    def become_primary(self) -> None:
        self.stream = StreamClient(self.channel)
        self.stream.arbitrate(PRIMARY, device_id=self.device_id)
        got = self.stream.next(timeout=10)
        assert got.arbitration.status.code == code_pb2.OK, got

    def set_pipeline(self, action=SetReq.VERIFY_AND_COMMIT, config: bool = True,
                     role: str = "") -> SetReq:
        req = SetReq(device_id=self.device_id, action=action, role=role)
        election(req, PRIMARY)
        if config:
            req.config.p4info.CopyFrom(self.p4info)
            req.config.p4_device_config = self.device_config
        return req

    def write(self, *updates: Update, election_id: int | None = PRIMARY, role: str = "",
              device_id: int | None = None) -> str:
        req = p4runtime_pb2.WriteRequest(
            device_id=self.device_id if device_id is None else device_id, role=role)
        election(req, election_id)
        req.updates.extend(updates)
        try:
            self.stub.Write(req, timeout=30)
        except grpc.RpcError as exc:
            details = errors.details_of(exc)
            if exc.code() == grpc.StatusCode.UNKNOWN and details:
                bad = [d for d in details if d.canonical_code != code_pb2.OK]
                return code_pb2.Code.Name(bad[0].canonical_code) if bad else "OK"
            return exc.code().name
        return "OK"

    def call(self, fn: Callable[[], object]) -> str:
        try:
            fn()
        except grpc.RpcError as exc:
            return exc.code().name
        return "OK"

    # ------------------------------------------------------------------ the cases
    def run(self) -> dict[str, str]:
        """Every case of SPEC, in an order that needs no clean-up; the server must
        not have a pipeline yet."""
        out: dict[str, str] = {}
        get = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=self.device_id)
        try:
            answer = self.stub.GetForwardingPipelineConfig(get, timeout=30)
            out["GetForwardingPipelineConfig before a pipeline is set"] = \
                "OK (config unset)" if not answer.HasField("config") else "OK (config set)"
        except grpc.RpcError as exc:
            out["GetForwardingPipelineConfig before a pipeline is set"] = exc.code().name
        self.become_primary()
        out["SetForwardingPipelineConfig: COMMIT with nothing saved"] = self.call(
            lambda: self.stub.SetForwardingPipelineConfig(
                self.set_pipeline(SetReq.COMMIT, config=False), timeout=120))
        self.stub.SetForwardingPipelineConfig(self.set_pipeline(), timeout=120)
        out["SetForwardingPipelineConfig: COMMIT carrying a config"] = self.call(
            lambda: self.stub.SetForwardingPipelineConfig(
                self.set_pipeline(SetReq.COMMIT), timeout=120))
        out["SetForwardingPipelineConfig: unknown role"] = self.call(
            lambda: self.stub.SetForwardingPipelineConfig(
                self.set_pipeline(SetReq.VERIFY, role="intruder"), timeout=120))
        ids = self.ids

        wide = fwd_entry(ids, 1, 1)
        wide.match[0].exact.value = b"\x01" * 7
        out["Write: value wider than the field (7 bytes for bit<48>)"] = self.write(
            upd(Update.INSERT, table_entry=wide))
        param = fwd_entry(ids, 2, 1)
        param.action.action.params[0].value = b"\x02\x00"
        out["Write: action parameter wider than bit<9> (0x0200)"] = self.write(
            upd(Update.INSERT, table_entry=param))
        empty = fwd_entry(ids, 3, 1)
        empty.match[0].exact.value = b""
        out["Write: empty byte string"] = self.write(upd(Update.INSERT, table_entry=empty))
        padded = fwd_entry(ids, 4, 1)
        padded.match[0].exact.value = b"\x00" * 8 + b"\x04"
        out["Write: zero-padded byte string (9 bytes for bit<48>)"] = self.write(
            upd(Update.INSERT, table_entry=padded))
        out["Write: unknown role with the primary's election id"] = self.write(
            upd(Update.INSERT, table_entry=fwd_entry(ids, 5, 1)), role="intruder")
        out["Write: another device id"] = self.write(
            upd(Update.INSERT, table_entry=fwd_entry(ids, 6, 1)),
            device_id=self.device_id + 1)
        out["Write: no election id while a primary exists"] = self.write(
            upd(Update.INSERT, table_entry=fwd_entry(ids, 7, 1)), election_id=None)

        group = p4runtime_pb2.ActionProfileGroup(action_profile_id=ids["I.sel"], group_id=1)
        group.members.add(member_id=99, weight=1)
        out["Write: group with an unknown member"] = self.write(
            upd(Update.INSERT, action_profile_group=group))
        counter = p4runtime_pb2.CounterEntry(counter_id=ids["I.hits"])
        counter.data.packet_count = 1
        counter.index.index = -1
        out["Write: counter index -1"] = self.write(upd(Update.MODIFY, counter_entry=counter))
        counter.index.index = 8
        out["Write: counter index past its size"] = self.write(
            upd(Update.MODIFY, counter_entry=counter))
        register = p4runtime_pb2.RegisterEntry(register_id=ids["I.last_port"])
        register.index.index = 0
        register.data.bitstring = b"\x05"
        out["Write: register cell"] = self.write(upd(Update.MODIFY, register_entry=register))
        clone = p4runtime_pb2.Entity()
        session = clone.packet_replication_engine_entry.clone_session_entry
        session.session_id, session.class_of_service = 5, 2
        session.replicas.add(egress_port=3, instance=0)
        out["Write: clone session with class_of_service"] = self.write(
            Update(type=Update.INSERT, entity=clone))
        return out
