"""Every v1model program of p4c's corpus under the P4Runtime server: the pipeline
loads, every kind of entity reads back without error, and in each plain table an
entry can be inserted, read back as written and deleted. This is where a name the
P4Info generator and the target spell differently, or an entity kind the server
mistranslates, shows up."""

from __future__ import annotations

import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from softswitch.daemon.device import Device
from softswitch.devtools import conformance as conf
from softswitch.diagnostics import P4Error
from softswitch.p4runtime import errors, pipeline

CORPUS = conf.corpus_dir()
SAMPLES = CORPUS / "p4_16_samples"
MF = p4info_pb2.MatchField
# Known gaps elsewhere, named so that they are seen (program: what fails).
KNOWN = {
    "issue1062-1-bmv2.p4": "key of type error has no P4Runtime bit width",
    "issue1520-bmv2.p4": "register name differs between P4Info and target",
}
READS = ("table_entry", "counter_entry", "register_entry", "meter_entry",
         "value_set_entry", "action_profile_member", "action_profile_group",
         "packet_replication_engine_entry", "digest_entry")

pytestmark = pytest.mark.skipif(not SAMPLES.is_dir(),
                                reason=f"corpus not found at {CORPUS} (set P4_CONFORMANCE_DIR)")


def _programs() -> list:
    if not SAMPLES.is_dir():
        return []
    return sorted(p for p in SAMPLES.glob("*.p4") if "v1model.p4" in p.read_text(errors="ignore"))


def _load(path) -> Device | None:
    try:
        compiled = pipeline.compile_file(str(path), {}, (str(SAMPLES),))
    except (P4Error, RecursionError):
        return None            # programs p4c (or softswitch) rejects: not this test's subject
    device = Device(0, 255)
    device.start_with(p4runtime_pb2.ForwardingPipelineConfig(p4_device_config=b"x"), compiled)
    return device


def _entry(info: p4info_pb2.P4Info, table: p4info_pb2.Table) -> p4runtime_pb2.TableEntry | None:
    ref = next((r for r in table.action_refs
                if r.scope != p4info_pb2.ActionRef.DEFAULT_ONLY), None)
    if ref is None:
        return None
    te = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
    for m in table.match_fields:
        fm = te.match.add(field_id=m.id)
        if m.match_type == MF.EXACT:
            fm.exact.value = b"\x01"
        elif m.match_type == MF.LPM:
            fm.lpm.value, fm.lpm.prefix_len = b"\x01", max(m.bitwidth, 1)
        elif m.match_type == MF.TERNARY:
            fm.ternary.value, fm.ternary.mask = b"\x01", b"\x01"
        elif m.match_type == MF.RANGE:
            fm.range.low, fm.range.high = b"\x01", b"\x01"
        elif m.match_type == MF.OPTIONAL:
            fm.optional.value = b"\x01"
        else:
            return None
        te.priority = 1 if m.match_type not in (MF.EXACT, MF.LPM) else te.priority
    action = next(a for a in info.actions if a.preamble.id == ref.id)
    te.action.action.action_id = ref.id
    for p in action.params:
        te.action.action.params.add(param_id=p.id, value=b"\x00")
    return te


def _problems(device: Device) -> list[str]:
    runtime = device.current.runtime  # type: ignore[union-attr]
    info = runtime.index.p4info
    out: list[str] = []
    for kind in READS:
        entity = p4runtime_pb2.Entity()
        getattr(entity, kind).SetInParent()
        try:
            runtime.read([entity])
        except errors.P4RuntimeError as exc:
            if exc.code.name != "UNIMPLEMENTED":
                out.append(f"read {kind}: {exc}")
    for table in info.tables:
        if table.is_const_table or table.implementation_id:
            continue
        te = _entry(info, table)
        if te is None:
            continue
        req = p4runtime_pb2.WriteRequest()
        req.updates.add(type=p4runtime_pb2.Update.INSERT).entity.table_entry.CopyFrom(te)
        result = runtime.write(req)[0]
        if result is not None:
            if result.code.name != "RESOURCE_EXHAUSTED":
                out.append(f"insert into {table.preamble.name}: {result}")
            continue
        got = runtime.read([p4runtime_pb2.Entity(
            table_entry=p4runtime_pb2.TableEntry(table_id=table.preamble.id))])
        if not any(list(g.table_entry.match) == list(te.match) for g in got):
            out.append(f"{table.preamble.name}: entry reads back differently")
        req.updates[0].type = p4runtime_pb2.Update.DELETE
        result = runtime.write(req)[0]
        if result is not None:
            out.append(f"delete from {table.preamble.name}: {result}")
    return out


def test_corpus_programs_under_p4runtime():
    failures: dict[str, list[str]] = {}
    loaded = 0
    for path in _programs():
        device = _load(path)
        if device is None:
            continue
        loaded += 1
        problems = _problems(device)
        if problems and path.name not in KNOWN:
            failures[path.name] = problems
    assert loaded > 300, f"only {loaded} corpus programs compiled"
    assert not failures, "\n".join(f"{name}: {'; '.join(p)}" for name, p in failures.items())
