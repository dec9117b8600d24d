"""Seeded fuzzing of the P4Runtime server over requests x roles (issue 13).

Mutated Write/Read/SetForwardingPipelineConfig/GetForwardingPipelineConfig requests
and stream messages, sent as every kind of client (primary, backup, no election id,
a restricted role's primary, an unknown role, another device id), plus raw
bit-flipped request bytes. Whatever comes in: no traceback in any answer, never
INTERNAL (a softswitch bug), no crash or hang (every RPC has a deadline and the
server answers afterwards), and a refused request changes nothing (the whole state
is read back). Bounded by FUZZ_SECONDS (and FUZZ_SEED picks the run)."""

from __future__ import annotations

import os
import random
import time

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from security_support import (
    DEVICE_ID,
    ROLES,
    Server,
    Update,
    acl_entry,
    compile_p4info,
    fwd_entry,
)

SEED = int(os.environ.get("FUZZ_SEED", "1313"))
SECONDS = float(os.environ.get("FUZZ_SECONDS", "60"))
PRIMARY, BACKUP, ACL = 10, 5, 3
WHO = {"primary": (PRIMARY, ""), "backup": (BACKUP, ""), "none": (None, ""),
       "acl": (ACL, "acl"), "acl wrong id": (ACL + 1, "acl"),
       "unknown role": (PRIMARY, "intruder"), "ops no stream": (1, "ops")}
# A whole-request refusal: nothing may have changed.
REFUSED = {grpc.StatusCode.NOT_FOUND, grpc.StatusCode.PERMISSION_DENIED,
           grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION,
           grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNIMPLEMENTED,
           grpc.StatusCode.OUT_OF_RANGE}


@pytest.fixture(scope="module")
def p4info(tmp_path_factory):
    return compile_p4info(tmp_path_factory.mktemp("fuzz"))


def _bytes(rng: random.Random) -> bytes:
    kind = rng.random()
    if kind < 0.1:
        return b""
    if kind < 0.3:
        return b"\x00" * rng.randint(1, 12) + bytes([rng.randint(0, 255)])
    return bytes(rng.randint(0, 255) for _ in range(rng.choice((1, 1, 2, 6, 7, 40))))


def _id(rng: random.Random, ids: dict[str, int]) -> int:
    r = rng.random()
    if r < 0.7:
        return rng.choice(list(ids.values()))
    return rng.choice((0, 1, -1 & 0xFFFFFFFF, rng.randint(0, 1 << 32 - 1)))


def _entity(rng: random.Random, ids: dict[str, int]) -> p4runtime_pb2.Entity:
    e = p4runtime_pb2.Entity()
    kind = rng.choice(("fwd", "fwd", "acl", "acl", "default", "counter", "direct",
                       "member", "group", "mcast", "clone", "digest", "register", "garbage"))
    if kind in ("fwd", "acl"):
        te = fwd_entry(ids, rng.randint(0, 7), rng.randint(0, 600)) if kind == "fwd" else \
            acl_entry(ids, rng.randint(0, 7), rng.choice((1, 5, 0, -3)))
        if rng.random() < 0.5:               # mutate one part
            part = rng.choice(("table", "field", "value", "action", "param", "prio",
                               "extra", "timeout", "meter"))
            if part == "table":
                te.table_id = _id(rng, ids)
            elif part == "field" and te.match:
                te.match[0].field_id = rng.randint(0, 4)
            elif part == "value" and te.match:
                fm = te.match[0]
                if fm.HasField("exact"):
                    fm.exact.value = _bytes(rng)
                else:
                    fm.ternary.value, fm.ternary.mask = _bytes(rng), _bytes(rng)
            elif part == "action":
                te.action.action.action_id = _id(rng, ids)
            elif part == "param":
                te.action.action.params.add(param_id=rng.randint(0, 3), value=_bytes(rng))
            elif part == "prio":
                te.priority = rng.choice((0, 1, -1, (1 << 31) - 1, -(1 << 31),
                                          rng.randint(-5, 5)))
            elif part == "extra":
                te.match.add(field_id=rng.randint(1, 3)).lpm.value = _bytes(rng)
            elif part == "timeout":
                te.idle_timeout_ns = rng.randint(-5, 1 << 40)
            else:
                te.meter_config.cir = rng.randint(-5, 100)
        e.table_entry.CopyFrom(te)
    elif kind == "default":
        e.table_entry.table_id = _id(rng, ids)
        e.table_entry.is_default_action = True
        e.table_entry.action.action.action_id = _id(rng, ids)
    elif kind == "counter":
        e.counter_entry.counter_id = _id(rng, ids)
        e.counter_entry.index.index = rng.choice((0, 7, 8, -1, 1 << 40))
        e.counter_entry.data.packet_count = rng.randint(-3, 1 << 40)
    elif kind == "direct":
        e.direct_counter_entry.table_entry.CopyFrom(acl_entry(ids, rng.randint(0, 7)))
        e.direct_counter_entry.data.packet_count = rng.randint(0, 99)
    elif kind == "member":
        m = e.action_profile_member
        m.action_profile_id = _id(rng, ids)
        m.member_id = rng.randint(0, 4)
        m.action.action_id = ids["I.set_port"] if rng.random() < 0.7 else _id(rng, ids)
        m.action.params.add(param_id=1, value=_bytes(rng))
    elif kind == "group":
        g = e.action_profile_group
        g.action_profile_id = _id(rng, ids)
        g.group_id = rng.randint(0, 3)
        for _ in range(rng.randint(0, 3)):
            g.members.add(member_id=rng.randint(0, 5), weight=rng.randint(-1, 3))
        g.max_size = rng.choice((0, 0, 2, 100, -1))
    elif kind == "mcast":
        mg = e.packet_replication_engine_entry.multicast_group_entry
        mg.multicast_group_id = rng.randint(0, 3)
        for _ in range(rng.randint(0, 3)):
            mg.replicas.add(egress_port=rng.randint(0, 600), instance=rng.randint(0, 2))
    elif kind == "clone":
        cs = e.packet_replication_engine_entry.clone_session_entry
        cs.session_id = rng.randint(0, 3)
        cs.class_of_service = rng.randint(0, 9)
        cs.packet_length_bytes = rng.choice((0, 0, 64))
        for _ in range(rng.randint(0, 2)):
            cs.replicas.add(egress_port=rng.randint(0, 600), instance=rng.randint(0, 1))
    elif kind == "digest":
        e.digest_entry.digest_id = _id(rng, ids)
        e.digest_entry.config.max_list_size = rng.randint(-2, 5)
    elif kind == "register":
        e.register_entry.register_id = _id(rng, ids)
        e.register_entry.index.index = rng.randint(-2, 3)
        e.register_entry.data.bitstring = _bytes(rng)
    return e


def _check(status: grpc.StatusCode, details: str, what: str) -> None:
    assert status != grpc.StatusCode.INTERNAL, f"{what}: INTERNAL {details}"
    assert status != grpc.StatusCode.DEADLINE_EXCEEDED, f"{what}: hung"
    assert "Traceback" not in details and "Exception" not in details, f"{what}: {details}"


@pytest.mark.timeout(600)
def test_fuzz_requests_by_role(p4info):
    rng = random.Random(SEED)
    server = Server.start(p4info, ROLES)
    ids = server.ids
    try:
        streams = {"primary": server.stream(PRIMARY), "backup": server.stream(BACKUP),
                   "acl": server.stream(ACL, role="acl")}
        for stream in streams.values():
            stream.next()
        raw_write = server.channel.unary_unary(
            "/p4.v1.P4Runtime/Write", request_serializer=lambda b: b,
            response_deserializer=p4runtime_pb2.WriteResponse.FromString)
        deadline = time.monotonic() + SECONDS
        counts: dict[str, int] = {}
        seen: dict[str, int] = {}
        while time.monotonic() < deadline:
            op = rng.choice(("write", "write", "write", "write", "raw", "read", "set",
                             "get", "stream", "reset"))
            counts[op] = counts.get(op, 0) + 1
            who = rng.choice(["primary"] * 4 + ["acl"] * 2 + list(WHO))
            election_id, role = WHO[who]
            device_id = DEVICE_ID if rng.random() < 0.9 else DEVICE_ID + 1
            what = f"{op} as {who} (device {device_id}, seed {SEED}, #{sum(counts.values())})"
            if op == "reset":                 # keep the state small and exercised
                _reset(server)
                continue
            if op in ("write", "raw"):
                req = server.write_request(
                    *[Update(type=rng.choice((0, 1, 1, 1, 2, 3, 3, 7)),
                             entity=_entity(rng, ids)) for _ in range(rng.randint(0, 5))],
                    election_id=election_id, role=role, device_id=device_id,
                    atomicity=rng.choice((0, 0, 1, 2, 9)))
                before = server.read_all()
                data = req.SerializeToString()
                if op == "raw" and data:
                    data = bytearray(data)
                    for _ in range(rng.randint(1, 4)):
                        data[rng.randrange(len(data))] = rng.randint(0, 255)
                    data = bytes(data)
                try:
                    raw_write(data, timeout=30)
                    status, details = grpc.StatusCode.OK, ""
                except grpc.RpcError as exc:
                    status, details = exc.code(), exc.details() or ""
                _check(status, details, what)
                seen[status.name] = seen.get(status.name, 0) + 1
                unchanged = status in REFUSED or (
                    op == "write" and status == grpc.StatusCode.UNKNOWN
                    and req.atomicity in (1, 2))
                if unchanged:
                    assert server.read_all() == before, f"{what}: {status} changed state"
            elif op == "read":
                req = p4runtime_pb2.ReadRequest(device_id=device_id, role=role)
                for _ in range(rng.randint(0, 3)):
                    entity = _entity(rng, ids)
                    if rng.random() < 0.3:
                        entity = p4runtime_pb2.Entity()
                        getattr(entity, rng.choice(("table_entry", "counter_entry",
                                                    "action_profile_group"))).SetInParent()
                    req.entities.append(entity)
                _call(lambda r=req: list(server.stub.Read(r, timeout=30)), what)
            elif op == "set":
                before = server.read_all()
                req = server.set_request(rng.choice((0, 1, 2, 4, 9)), election_id, role,
                                         device_id)
                if rng.random() < 0.5:
                    req.config.p4_device_config = bytes(
                        rng.randint(0, 255) for _ in range(rng.randint(0, 64)))
                if rng.random() < 0.3:
                    req.config.p4info.tables[0].preamble.id ^= 1
                status = _call(lambda r=req: server.stub.SetForwardingPipelineConfig(
                    r, timeout=120), what)
                if status in REFUSED:
                    assert server.read_all() == before, f"{what}: {status} changed state"
            elif op == "get":
                req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
                    device_id=device_id, response_type=rng.choice((0, 1, 2, 3, 7)))
                _call(lambda r=req: server.stub.GetForwardingPipelineConfig(r, timeout=30),
                      what)
            else:
                _fuzz_stream(server, rng, election_id, role, device_id, what)
        assert server.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=10)
        for name, stream in streams.items():     # the controllers' streams survived
            assert stream.responses.empty() or not any(
                isinstance(m, grpc.RpcError) for m in list(stream.responses.queue)), name
        assert sum(counts.values()) > 50, counts
        print(f"fuzz seed {SEED}: {counts}; Write answers {seen}")
    finally:
        server.close()


def _call(fn, what: str) -> grpc.StatusCode:
    try:
        fn()
    except grpc.RpcError as exc:
        _check(exc.code(), exc.details() or "", what)
        return exc.code()
    return grpc.StatusCode.OK


def _reset(server: Server) -> None:
    """Delete every table entry and replication entry (as the primary)."""
    every = p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())
    pre = p4runtime_pb2.Entity()
    pre.packet_replication_engine_entry.SetInParent()
    entities = server.read(every, pre)
    entities = [e for e in entities if not e.table_entry.is_const]
    if entities:
        req = server.write_request(*[Update(type=Update.DELETE, entity=e) for e in entities],
                                   election_id=PRIMARY)
        try:
            server.stub.Write(req, timeout=30)
        except grpc.RpcError as exc:
            _check(exc.code(), exc.details() or "", "reset")


def _fuzz_stream(server: Server, rng: random.Random, election_id, role, device_id,
                 what: str) -> None:
    stream = server.stream(election_id if rng.random() < 0.7 else rng.randint(50, 90),
                           role, device_id)
    for _ in range(rng.randint(0, 3)):
        msg = p4runtime_pb2.StreamMessageRequest()
        choice = rng.random()
        if choice < 0.5:
            msg.packet.payload = bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 80)))
            for _ in range(rng.randint(0, 3)):
                msg.packet.metadata.add(metadata_id=rng.randint(0, 3), value=_bytes(rng))
        elif choice < 0.7:
            msg.digest_ack.digest_id = rng.randint(0, 5)
            msg.digest_ack.list_id = rng.randint(0, 5)
        elif choice < 0.9:
            msg.arbitration.device_id = device_id
            msg.arbitration.role.name = rng.choice(("", "acl", "ops", "x"))
            msg.arbitration.election_id.low = rng.randint(0, 20)
        stream.send(msg)
    end = time.monotonic() + 0.3
    while time.monotonic() < end:
        try:
            got = stream.next(timeout=0.1)
        except Exception:  # noqa: BLE001 - queue.Empty: nothing more to read
            continue
        if isinstance(got, grpc.RpcError):
            _check(got.code(), got.details() or "", what)
            break
        if got.WhichOneof("update") == "error":
            assert got.error.canonical_code != code_pb2.INTERNAL, f"{what}: {got.error}"
    stream.close()
    server.streams.remove(stream)
