"""Plain table-entry writes answer exactly as the general path (issue 11, write path).

A Write batch's plain table-entry updates are decoded from the wire in C
(``entrywire``), checked by per-table plans (``entryplan``) and added to the switch
without a second validation; anything a plan does not take goes down the general
path. Here the same updates run once the plain way (a lazily parsed request, as the
server hands it over) and once the general way (the batch as a parsed WriteRequest),
on two devices with the same program: per-update codes and messages, what Read
returns, and what the switch's interpreter tables hold must be identical — for valid
updates and for every kind of invalid one. Mixed insert/modify/delete batches that
fail midway (ROLLBACK_ON_ERROR and CONTINUE_ON_ERROR) must leave read-back equal to a
model of what was written.
"""

from __future__ import annotations

import random

import grpc
import pytest
from p4.v1 import p4runtime_pb2
from programs import P4RT_NAMES, v1model_program

from softswitch.daemon.device import Device
from softswitch.p4runtime import actions, bytestrings, encoding, entrywire, pipeline

WriteRequest = p4runtime_pb2.WriteRequest
Update = p4runtime_pb2.Update
TableEntry = p4runtime_pb2.TableEntry
INSERT, MODIFY, DELETE = Update.INSERT, Update.MODIFY, Update.DELETE

PROGRAM = v1model_program(
    types="header eth_t { bit<48> dst; bit<48> src; bit<16> type; }", headers="eth_t eth;",
    meta="bit<12> tag;", extract=["hdr.eth"],
    ingress="""
    direct_counter(CounterType.packets_and_bytes) acl_hits;
    action fwd(bit<9> port, bit<48> mac) { sm.egress_spec = port; hdr.eth.src = mac; }
    action drop() { mark_to_drop(sm); }
    @defaultonly action miss() { sm.egress_spec = 1; }
    action tag(bit<12> t) { meta.tag = t; acl_hits.count(); }
    action acl_drop() { mark_to_drop(sm); acl_hits.count(); }
    table route {
        key = { hdr.eth.dst: lpm; }
        actions = { fwd; drop; miss; }
        default_action = miss();
        size = 512;
        support_timeout = true;
    }
    table acl {
        key = { hdr.eth.type: exact; hdr.eth.src: ternary; hdr.eth.dst: range;
                meta.tag: optional; }
        actions = { tag; acl_drop; }
        counters = acl_hits;
        size = 64;
    }
    apply { route.apply(); acl.apply(); }
""",
    emit=["hdr.eth"], names=P4RT_NAMES)


class Dev:
    """An in-process device running PROGRAM; writes go the plain or the general way."""

    def __init__(self, program_path: str) -> None:
        compiled = pipeline.compile_file(program_path, {})
        self.device = Device()
        config = p4runtime_pb2.ForwardingPipelineConfig(p4_device_config=PROGRAM.encode())
        self.device.start_with(config, compiled)
        info = compiled.p4info
        self.ids = {o.preamble.name: o.preamble.id for o in (*info.tables, *info.actions)}
        self.plain_taken = 0
        tables = self.device.current.runtime.tables
        plain = tables.write_plain

        run = tables.apply_run

        def counted(d, log):
            took = plain(d, log)
            self.plain_taken += took
            return took

        def counted_run(items, start):      # runs applied in one C call (apply_run)
            end = run(items, start)
            self.plain_taken += end - start
            return end
        tables.write_plain = counted
        tables.apply_run = counted_run

    def write(self, updates: list[Update], plain: bool,
              atomicity: int = WriteRequest.CONTINUE_ON_ERROR) -> list[tuple]:
        req = WriteRequest(device_id=0, atomicity=atomicity)
        req.updates.extend(updates)
        request = (encoding.LazyRequest(WriteRequest, Update, 4, req.SerializeToString())
                   if plain else req)
        with self.device.lock:
            results = self.device.current.runtime.write(request)
        return [None if r is None else (r.code, r.message) for r in results]

    def read(self) -> list[bytes]:
        """Every entry of every table, encoded as Read returns it, in a stable order."""
        runtime = self.device.current.runtime
        entity = p4runtime_pb2.Entity(table_entry=TableEntry())
        return sorted(runtime.read_wire([entity]))

    def views(self) -> list[tuple]:
        """What the switch's interpreter tables hold (keys, action, args, priority)."""
        switch = self.device.current.switch
        out = []
        for name in ("I.route", "I.acl"):
            for v in switch.table_entries(name):
                out.append((name, tuple(v.keys), v.action, tuple(v.args), v.priority))
        return sorted(out, key=repr)


@pytest.fixture
def devices(tmp_path):
    path = tmp_path / "plain.p4"
    path.write_text(PROGRAM)
    return Dev(str(path)), Dev(str(path))


# ------------------------------------------------------------------ updates
def route(ids: dict, dst: int, plen: int = 24, port: int = 3, *, value: bytes | None = None,
          action: str = "I.fwd", params: list | None = None, priority: int = 0,
          idle: int = 0) -> TableEntry:
    te = TableEntry(table_id=ids["I.route"], priority=priority, idle_timeout_ns=idle)
    fm = te.match.add(field_id=1)
    fm.lpm.value = value if value is not None else dst.to_bytes(6, "big")
    fm.lpm.prefix_len = plen
    te.action.action.action_id = ids[action]
    for pid, v in (params if params is not None else
                   [(1, port.to_bytes(2, "big")), (2, b"\x02\0\0\0\0\x07")]):
        te.action.action.params.add(param_id=pid, value=v)
    return te


def acl(ids: dict, etype: int, src: tuple[int, int] | None = None,
        dst: tuple[int, int] | None = None, tag: int | None = None, priority: int = 10,
        t: int = 5) -> TableEntry:
    te = TableEntry(table_id=ids["I.acl"], priority=priority)
    te.match.add(field_id=1).exact.value = etype.to_bytes(2, "big")
    if src is not None:
        fm = te.match.add(field_id=2)
        fm.ternary.value, fm.ternary.mask = (x.to_bytes(6, "big") for x in src)
    if dst is not None:
        fm = te.match.add(field_id=3)
        fm.range.low, fm.range.high = (x.to_bytes(6, "big") for x in dst)
    if tag is not None:
        te.match.add(field_id=4).optional.value = tag.to_bytes(2, "big")
    te.action.action.action_id = ids["I.tag"]
    te.action.action.params.add(param_id=1, value=t.to_bytes(2, "big"))
    return te


def canonical(te: TableEntry) -> TableEntry:
    """The entry with every byte string in canonical form (as Read returns it)."""
    out = TableEntry()
    out.CopyFrom(te)
    short = bytestrings.encode
    for fm in out.match:
        m = getattr(fm, fm.WhichOneof("field_match_type"))
        for name in ("value", "mask", "low", "high"):
            if hasattr(m, name):
                setattr(m, name, short(int.from_bytes(getattr(m, name))))
    for p in out.action.action.params:
        p.value = short(int.from_bytes(p.value))
    return out


def upd(kind: int, te: TableEntry) -> Update:
    u = Update(type=kind)
    u.entity.table_entry.CopyFrom(te)
    return u


def corpus(ids: dict) -> list[Update]:
    """Valid plain updates and one of every way to get one wrong, in an order where
    each valid one applies (inserts before their modifies and deletes)."""
    ok_route = route(ids, 0x0A0000000000)
    ok_acl = acl(ids, 0x0800, src=(0x020000000000, 0xFF0000000000), dst=(5, 900), tag=7)
    out = [upd(INSERT, ok_route), upd(INSERT, ok_acl),
           upd(INSERT, acl(ids, 0x0806)),                                # wildcards omitted
           upd(INSERT, route(ids, 0x0B0000000000, value=b"\0\0" + (0x0B << 40).to_bytes(6, "big"))),
           upd(INSERT, ok_route),                                        # ALREADY_EXISTS
           upd(INSERT, route(ids, 0x0A0000000001)),                      # host bits
           upd(INSERT, route(ids, 0, plen=0)),                           # /0
           upd(INSERT, route(ids, 0x0C0000000000, plen=49)),             # prefix too long
           upd(INSERT, route(ids, 0, value=b"")),                        # empty bytes
           upd(INSERT, route(ids, 0, value=b"\x01" + bytes(6))),         # too wide
           upd(INSERT, route(ids, 0x0D0000000000, priority=5)),          # priority on lpm
           upd(INSERT, route(ids, 0x0E0000000000, action="I.miss", params=[])),  # defaultonly
           upd(INSERT, route(ids, 0x0F0000000000, params=[(1, b"\x02\0")])),     # 9-bit port
           upd(INSERT, route(ids, 0x100000000000, params=[(1, b"\x01")])),       # missing
           upd(INSERT, route(ids, 0x110000000000,
                             params=[(1, b"\x01"), (1, b"\x01"), (2, b"\x01")])),  # twice
           upd(INSERT, route(ids, 0x120000000000,
                             params=[(1, b"\x01"), (2, b"")])),          # empty param
           upd(INSERT, route(ids, 0x130000000000, idle=1000)),           # idle: supported
           upd(INSERT, acl(ids, 0x0800, priority=0)),                    # needs a priority
           upd(INSERT, acl(ids, 0x0801, src=(1, 3))),                    # bits outside mask
           upd(INSERT, acl(ids, 0x0802, src=(0, 0))),                    # mask 0
           upd(INSERT, acl(ids, 0x0803, dst=(9, 5))),                    # low > high
           upd(INSERT, acl(ids, 0x0804, dst=(0, (1 << 48) - 1))),        # full range
           upd(INSERT, acl(ids, 0x0805, tag=1 << 12)),                   # 13-bit tag
           upd(MODIFY, route(ids, 0x0A0000000000, port=9)),
           upd(MODIFY, route(ids, 0x140000000000)),                      # NOT_FOUND
           upd(MODIFY, acl(ids, 0x0800, src=(0x020000000000, 0xFF0000000000), dst=(5, 900),
                           tag=7, t=9)),
           upd(DELETE, route(ids, 0x150000000000)),                      # NOT_FOUND
           upd(DELETE, acl(ids, 0x0806))]
    missing_exact = acl(ids, 0x0800, priority=3)
    del missing_exact.match[0]
    out.append(upd(INSERT, missing_exact))                               # exact missing
    twice = route(ids, 0x160000000000)
    twice.match.add().CopyFrom(twice.match[0])
    out.append(upd(INSERT, twice))                                       # field twice
    unknown_field = route(ids, 0x170000000000)
    unknown_field.match[0].field_id = 9
    out.append(upd(INSERT, unknown_field))
    no_action = route(ids, 0x180000000000)
    no_action.ClearField("action")
    out.append(upd(INSERT, no_action))
    wrong_kind = route(ids, 0x190000000000)
    wrong_kind.match[0].exact.value = b"\x01"
    out.append(upd(INSERT, wrong_kind))
    tagged = route(ids, 0x1A0000000000)
    tagged.controller_metadata, tagged.metadata = 77, b"kept as written"
    out.append(upd(INSERT, tagged))                                      # metadata fields
    deleted = route(ids, 0x0B0000000000)
    deleted.ClearField("action")                                         # DELETE: key only
    out.append(upd(DELETE, deleted))
    return out


def test_plain_and_general_paths_agree_update_by_update(devices):
    plain, general = devices
    assert entrywire.native() is not None, "the C decoder must build here"
    for i, update in enumerate(corpus(plain.ids)):
        got = plain.write([update], plain=True)
        want = general.write([update], plain=False)
        assert got == want, f"update {i}: {update}"
        assert plain.read() == general.read(), f"after update {i}"
    assert plain.views() == general.views()
    assert plain.plain_taken >= 8        # the valid ones went the plain way


def test_plain_and_general_paths_agree_in_one_batch(devices):
    plain, general = devices
    updates = corpus(plain.ids)
    for atomicity in (WriteRequest.CONTINUE_ON_ERROR, WriteRequest.ROLLBACK_ON_ERROR):
        assert plain.write(updates, True, atomicity) == general.write(updates, False,
                                                                      atomicity)
        assert plain.read() == general.read() and plain.views() == general.views()


def test_mixed_batches_failing_midway_read_back_what_was_written(devices):
    """Random insert/modify/delete batches on both tables, some failing midway: the
    plain path's read-back always equals the model (and the general path's)."""
    plain, general = devices
    ids = plain.ids
    rng = random.Random(11)
    model: dict[tuple, TableEntry] = {}            # (table, key) -> entry as written

    def entry(n: int, version: int) -> tuple[tuple, TableEntry]:
        if n % 2:
            return ("route", n), route(ids, n << 24, port=version)
        return ("acl", n), acl(ids, 0x0800, src=(n << 8, 0xFFFF00), dst=(n, n + 5),
                               priority=n + 1, t=version)

    for _ in range(60):
        atomicity = rng.choice((WriteRequest.CONTINUE_ON_ERROR,
                                WriteRequest.ROLLBACK_ON_ERROR))
        batch, expected = [], dict(model)
        for _ in range(rng.randrange(1, 12)):
            key, te = entry(rng.randrange(1, 40), rng.randrange(1, 500))
            present = key in expected
            kind = rng.choice((INSERT, MODIFY, DELETE))
            batch.append(upd(kind, te))
            ok = (kind == INSERT) != present
            if ok and kind == DELETE:
                del expected[key]
            elif ok:
                expected[key] = te
            elif atomicity == WriteRequest.ROLLBACK_ON_ERROR:
                expected = dict(model)              # the whole batch is undone
                break
        got = plain.write(batch, True, atomicity)
        assert got == general.write(batch, False, atomicity)
        failed = any(r is not None for r in got)
        if atomicity == WriteRequest.ROLLBACK_ON_ERROR and failed:
            assert all(r is not None for r in got)
            assert {r[0] for r in got} - {grpc.StatusCode.ABORTED}
        model = expected
        written = sorted(encoding.field(encoding.ENTITY_TABLE_ENTRY,
                                    canonical(te).SerializeToString())
                         for te in model.values())
        assert plain.read() == written
        assert plain.read() == general.read() and plain.views() == general.views()
    assert plain.plain_taken > 60


# ------------------------------------------------------------------ the decoder
def test_decoder_reads_what_protobuf_reads():
    rng = random.Random(5)
    ids = {"I.route": 7, "I.acl": 8, "I.fwd": 9, "I.tag": 10}
    updates = []
    for n in range(200):
        te = (route(ids, rng.getrandbits(24) << 24, idle=rng.choice((0, 7)))
              if n % 2 else acl(ids, rng.getrandbits(16), src=(1, 3), dst=(2, 9), tag=3,
                                priority=rng.randrange(1, 1 << 31)))
        te.controller_metadata = rng.getrandbits(40)
        te.metadata = rng.randbytes(rng.randrange(4))
        updates.append(upd(rng.choice((INSERT, MODIFY, DELETE)), te))
    data = b"".join(encoding.field(b"\x22", u.SerializeToString()) for u in updates)
    _, spans = encoding.split(data, 4)
    for d, u in zip(entrywire.decode(data, spans), updates, strict=True):
        te = u.entity.table_entry
        assert d is not None
        assert d[:5] == (u.type, te.table_id, te.priority, te.idle_timeout_ns,
                         te.action.action.action_id)
        fields = []
        for fm in te.match:
            which = fm.WhichOneof("field_match_type")
            m = getattr(fm, which)
            a = m.low if which == "range" else m.value
            b = {"exact": None, "optional": None, "lpm": getattr(m, "prefix_len", None),
                 "ternary": getattr(m, "mask", None), "range": getattr(m, "high", None)}
            fields.append((fm.field_id, which, a, b[which]))
        assert list(d[5]) == fields
        assert list(d[6]) == [(p.param_id, p.value) for p in te.action.action.params]
        assert TableEntry.FromString(d[7]) == te


@pytest.mark.parametrize("change", [
    "default", "const", "meter", "counter", "member", "unknown", "truncated", "other_entity",
    "field_twice_scalar"])
def test_decoder_leaves_uncommon_shapes_to_protobuf(change):
    te = route({"I.route": 7, "I.fwd": 9}, 0x0A0000000000)
    u = upd(INSERT, te)
    if change == "default":
        u.entity.table_entry.is_default_action = True
    elif change == "const":
        u.entity.table_entry.is_const = True
    elif change == "meter":
        u.entity.table_entry.meter_config.cir = 5
    elif change == "counter":
        u.entity.table_entry.counter_data.packet_count = 1
    elif change == "member":
        u.entity.table_entry.action.action_profile_member_id = 3
    elif change == "other_entity":
        u = Update(type=INSERT)
        u.entity.counter_entry.counter_id = 1
    data = u.SerializeToString()
    if change == "unknown":
        data += b"\xf8\x01\x01"                      # field 31, varint
    elif change == "truncated":
        data = data[:-3]
    elif change == "field_twice_scalar":
        data += b"\x08\x02"                          # a second Update.type
    assert entrywire.decode(data, [(0, len(data))]) == [None]


def test_native_checks_agree_with_the_python_plan(devices):
    """entrywire's C checks (native plans) accept exactly what the Python plan
    accepts, with the same key, switch match and arguments — over random valid and
    broken updates of both tables."""
    dev, _ = devices
    tables = dev.device.current.runtime.tables
    plans = tables.native_plans
    assert set(plans) == {dev.ids["I.route"], dev.ids["I.acl"]}
    rng = random.Random(7)

    def value(width: int) -> bytes:
        pick = rng.random()
        if pick < 0.05:
            return b""
        if pick < 0.15:
            return rng.randbytes(rng.randrange(1, 10))              # maybe too wide
        v = rng.getrandbits(width) if rng.random() < 0.7 else rng.choice((0, 1))
        return v.to_bytes((width + 7) // 8 + rng.choice((0, 0, 1)), "big")

    updates = []
    for _ in range(3000):
        if rng.random() < 0.5:
            plen = rng.choice((0, 1, 8, 24, 48, 49, rng.randrange(50)))
            dst = rng.getrandbits(48) & ~((1 << (48 - min(plen, 48))) - 1) \
                if rng.random() < 0.7 else rng.getrandbits(48)
            te = route(dev.ids, dst, plen, priority=rng.choice((0, 0, 0, 3)),
                       action=rng.choice(("I.fwd", "I.fwd", "I.drop", "I.miss")),
                       params=[(1, value(9)), (2, value(48))][:rng.choice((2, 2, 1))],
                       idle=rng.choice((0, 0, 5)))
            if te.action.action.action_id != dev.ids["I.fwd"]:
                del te.action.action.params[:]
        else:
            src = (rng.getrandbits(48), rng.getrandbits(48))
            if rng.random() < 0.6:
                src = (src[0] & src[1], src[1])
            lo, hi = sorted((rng.getrandbits(48), rng.getrandbits(48)))
            te = acl(dev.ids, rng.getrandbits(16),
                     src=src if rng.random() < 0.7 else None,
                     dst=(lo, hi) if rng.random() < 0.8 else (hi, lo),
                     tag=rng.getrandbits(13) if rng.random() < 0.5 else None,
                     priority=rng.choice((0, 1, 7, -5, (1 << 31) - 1, rng.randrange(1 << 31))),
                     t=rng.getrandbits(12))
            te.match[0].exact.value = value(16)
            if rng.random() < 0.1:
                te.match[1].field_id = 1                              # id twice
        if rng.random() < 0.05:
            te.ClearField("action")
        updates.append(upd(rng.choice((INSERT, MODIFY, DELETE)), te))
    data = b"".join(encoding.field(b"\x22", u.SerializeToString()) for u in updates)
    _, spans = encoding.split(data, 4)
    checked = entrywire.decode(data, spans, plans)
    plain = entrywire.decode(data, spans)
    accepted = shared = 0
    prev = None
    for c, p in zip(checked, plain, strict=True):
        plan = tables._plans[p[1]]
        python = plan.accept(p)
        if len(c) == entrywire.CHECKED_LEN:
            assert c[2] == plan.key(p)[0]
            if prev is not None and prev[1] == c[1]:    # one table id object per run
                assert c[1] is prev[1]
                shared += 1
            prev = c
            if p[0] == DELETE:                      # the key is all a DELETE needs
                assert c[5] is None and c[6] is None and c[7] == b"" != p[7]
                continue
            if c[6] is None:
                assert python is None and p[4] == 0
                continue
            assert python is not None
            assert (c[2], c[6]) == (python[0], python[2].args)
            assert c[5] == (python[1] if p[0] == INSERT else None)
            accepted += 1
        else:
            assert c == p and python is None
            prev = None
    assert accepted > 200 and shared > 50


def test_canonical_action_bytes_from_the_plan_are_protobufs(devices):
    """ActionCall.canonical_bytes built from the plan's prefixes is the canonical
    Action protobuf serializes (what Read returns for every entry's action)."""
    dev, _ = devices
    index = dev.device.current.runtime.index
    rng = random.Random(3)
    for plan in index.action_plans.values():
        for _ in range(50):
            args = [rng.getrandbits(rng.choice((1, 8, 9, 48, 64, 1100))) for _ in plan.params]
            fast = actions.ActionCall(plan.name, args, None, plan.info, plan)
            want = p4runtime_pb2.Action(action_id=plan.id)
            for p, v in zip(plan.params, args, strict=True):
                want.params.add(param_id=p.id, value=bytestrings.encode(v))
            assert fast.canonical_bytes() == want.SerializeToString()
