"""Reconcile one switch: connect, make sure the pipeline is right, read, diff, write."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controlplane.compile import DesiredState, compile_switch
from controlplane.intent import model as m
from controlplane.p4rt import Client, EntityBuilder, P4InfoIndex
from controlplane.p4rt.errors import P4RuntimeClientError
from controlplane.p4rt.rollback import UNKNOWN, Transaction, WriteAborted
from controlplane.reconcile.capacity import check_capacity
from controlplane.reconcile.credentials import switch_tls, switch_token
from controlplane.reconcile.diff import Change, Plan, diff, to_updates, wants_atomic
from controlplane.reconcile.tm_channel import TmPlan, check_target, plan_tm, send_tm


class TrafficManagerRefused(P4RuntimeClientError):
    """The intent asks the switch's traffic manager for what its target cannot do."""


@dataclass(frozen=True)
class Pipeline:
    """What to load when a switch lacks it: P4Info plus the target's device config."""

    p4info: p4info_pb2.P4Info
    device_config: bytes


@dataclass
class SwitchResult:
    switch: str
    plan: Plan | None = None
    desired: DesiredState | None = None
    index: P4InfoIndex | None = None
    written: int = 0
    tm_commands: int = 0
    tm: TmPlan | None = None
    pipeline_loaded: bool = False
    error: str | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def read_current(client: Client, b: EntityBuilder, desired: DesiredState
                 ) -> list[p4runtime_pb2.Entity]:
    """Everything in the controller's scope on the switch (entries, defaults, ECMP, PRE)."""
    filters: list = [p4runtime_pb2.TableEntry(table_id=t)
                     for t in sorted(desired.managed_tables | desired.additive_tables)]
    filters += [p4runtime_pb2.TableEntry(table_id=d.table_entry.table_id,
                                         is_default_action=True) for d in desired.defaults]
    # meter cells always exist: read the ones the intent configures (NIC class meters)
    filters += [p4runtime_pb2.MeterEntry(meter_id=e.meter_entry.meter_id,
                                         index=e.meter_entry.index)
                for e in desired.entities if e.WhichOneof("entity") == "meter_entry"]
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.clone_session_entry.session_id = 0          # wildcard: every clone session
    filters.append(pre)
    current = list(client.read(filters))
    wants_profiles = any(e.WhichOneof("entity").startswith("action_profile")
                         for e in desired.entities)
    for prof in sorted(desired.managed_profiles):
        for kind in (p4runtime_pb2.ActionProfileMember, p4runtime_pb2.ActionProfileGroup):
            try:
                current += client.read([kind(action_profile_id=prof)])
            except P4RuntimeClientError as exc:
                # A target without action profiles is fine while the intent uses none.
                if exc.code != grpc.StatusCode.UNIMPLEMENTED or wants_profiles:
                    raise
    return current


def _planned_pipeline(client: Client, pipeline: Pipeline | None
                      ) -> tuple[P4InfoIndex, bool]:
    """The P4Info to compile against, and whether ``pipeline`` must be loaded first
    (the device has none, or another program); loading waits until the writes."""
    current = client.get_p4info()
    if pipeline is not None:
        fresh = current is None or _signature(current) != _signature(pipeline.p4info)
        return P4InfoIndex(pipeline.p4info), fresh
    if current is None:
        raise P4RuntimeClientError("no pipeline is loaded on the device; pass --pipeline")
    return P4InfoIndex(current), False


def _signature(p4info: p4info_pb2.P4Info) -> bytes:
    """Compare programs, not documentation: drop pkg_info (servers may rewrite it)."""
    copy = p4info_pb2.P4Info()
    copy.CopyFrom(p4info)
    copy.ClearField("pkg_info")
    return copy.SerializeToString(deterministic=True)


def reconcile_switch(intent: m.Intent, switch: m.Switch, pipeline: Pipeline | None,
                     dry_run: bool = False, timeout: float = 10.0,
                     batch_size: int = 500, client: Client | None = None,
                     allow_partial: bool = False,
                     atomic_writes: bool | None = None) -> SwitchResult:
    """One switch end to end; every failure becomes ``result.error``, never an exception,
    so one broken switch cannot stop the others. ``client``: an already connected
    primary session to use (and leave open), as controller mode keeps for learning.

    All or nothing per switch: every phase of the plan and the traffic-manager
    commands run in one :class:`~controlplane.p4rt.rollback.Transaction`, so a refusal
    anywhere (a later phase, or a queue command) rolls back the earlier phases too.
    Settings the target's traffic manager cannot take are refused before anything is
    written, unless ``allow_partial`` (then they are warnings). A pipeline this call
    loaded stays loaded when it fails (P4Runtime cannot unload one); it holds no
    entries then. ``atomic_writes=False`` makes the controller roll back itself even
    where the target grants ROLLBACK_ON_ERROR."""
    result = SwitchResult(switch.name)
    start = time.monotonic()
    own = client is None
    if client is None:
        client = Client(switch.address, switch.device_id, election_id=switch.election_id,
                        timeout=timeout, atomic_writes=atomic_writes,
                        tls=switch_tls(intent, switch))
    try:
        if own:
            client.connect(require_primary=not dry_run)
        index, fresh = _planned_pipeline(client, pipeline)
        if fresh and dry_run:
            result.notes.append("the pipeline would be (re)loaded: the switch starts empty")
        result.index = index
        result.desired = compile_switch(intent, switch, index)
        result.tm = plan_tm(switch, result.desired)
        current = [] if fresh else read_current(client, EntityBuilder(index), result.desired)
        result.plan = diff(result.desired, current)
        check_capacity(index, current, result.plan)
        _check_tm(switch, result, allow_partial)
        if not dry_run:
            _write(client, switch, pipeline if fresh else None, result, index, timeout,
                   switch_token(intent, switch),
                   batch_size)
    except Exception as exc:   # noqa: BLE001 - reported per switch, see docstring
        result.error = str(exc) or type(exc).__name__
    finally:
        if own:
            client.close()
        result.seconds = time.monotonic() - start
    return result


def _check_tm(switch: m.Switch, result: SwitchResult, allow_partial: bool) -> None:
    assert result.tm is not None
    refused = result.tm.refused if switch.runtime_address is not None else []
    if not refused:
        return
    if allow_partial:
        result.warnings += [f"not applied on {switch.target}: {r}" for r in refused]
        return
    raise TrafficManagerRefused(
        f"switch {switch.name} (target {switch.target}) cannot take these settings of the "
        "intent: " + "; ".join(refused)
        + "; nothing was written (--allow-partial applies the rest and warns)")


def _write(client: Client, switch: m.Switch, pipeline: Pipeline | None,
           result: SwitchResult, index: P4InfoIndex, timeout: float,
           token: str | None, batch_size: int) -> None:
    """Load the pipeline when needed, then write every phase and the queue settings in
    one transaction."""
    assert result.plan is not None and result.tm is not None
    check_target(switch, timeout)   # an unreachable Thrift port fails before writes
    if pipeline is not None:
        client.set_pipeline(pipeline.p4info, pipeline.device_config)
        result.pipeline_loaded = True
        _clear_bmv2_replication(switch, result, timeout)
    tx = Transaction(client, index, batch_size)
    try:
        for phase in result.plan.phases:
            result.written += tx.write(to_updates(phase), _before(phase),
                                       wants_atomic(phase))
    except WriteAborted:
        result.written = 0                    # rolled back
        raise
    if switch.runtime_address is not None:
        try:
            result.tm_commands = send_tm(switch, result.tm.commands, timeout, token)
        except P4RuntimeClientError as exc:
            result.written = 0
            raise tx.abort(exc) from None


def _clear_bmv2_replication(switch: m.Switch, result: SwitchResult, timeout: float) -> None:
    """BMv2 keeps the old pipeline's clone/multicast nodes in its PRE though its P4Runtime
    server forgets them (see Bmv2Thrift.clear_replication): empty it over Thrift, or say
    why not, so a clone session written now is not replicated twice."""
    if switch.target != "bmv2":
        return
    if switch.runtime_address is None:
        result.notes.append("BMv2 without runtime_address: its replication engine may keep "
                            "the previous pipeline's clone/multicast nodes (clones sent "
                            "twice); give the --thrift-port as runtime_address")
        return
    from controlplane.reconcile.bmv2_thrift import Bmv2Thrift
    with Bmv2Thrift(switch.runtime_address, timeout) as bm:
        bm.clear_replication()


def _before(phase: list[Change]) -> list:
    """What the switch held before each change, as the reconciler read it."""
    out: list = []
    for c in phase:
        if c.kind == "INSERT":
            out.append(None)
        elif c.kind == "DELETE":
            out.append(c.entity)
        else:
            out.append(c.old if c.old is not None else UNKNOWN)
    return out


def load_pipeline(p4info_path: str | None, pipeline_path: str | None) -> Pipeline | None:
    """``--pipeline PROG.p4`` (softswitch: compiled here for its P4Info) or a BMv2 JSON
    plus ``--p4info``; ``None`` when neither is given (use the device's own)."""
    from controlplane.p4rt.p4info import load_p4info

    if pipeline_path is None:
        if p4info_path is not None:
            return Pipeline(load_p4info(p4info_path), b"")
        return None
    path = Path(pipeline_path)
    if path.suffix == ".p4":
        return _softswitch_pipeline(path, p4info_path)
    if p4info_path is None:
        raise P4RuntimeClientError(f"{path}: a device config other than P4 source needs "
                                   "--p4info")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise P4RuntimeClientError(f"{path}: {exc.strerror}") from None
    return Pipeline(load_p4info(p4info_path), data)


def _softswitch_pipeline(path: Path, p4info_path: str | None) -> Pipeline:
    from controlplane.p4rt.p4info import load_p4info
    from softswitch.diagnostics import P4Error
    from softswitch.p4runtime.pipeline import make_artifact

    try:
        artifact = make_artifact(str(path))
        if p4info_path is not None:
            p4info = load_p4info(p4info_path)
        else:
            from softswitch.frontend.compiler import compile_program
            from softswitch.p4info import generate
            p4info = generate(compile_program(str(path)))
    except (P4Error, OSError) as exc:
        raise P4RuntimeClientError(f"{path}: cannot build the pipeline: {exc}") from None
    except Exception as exc:   # P4Errors and friends: report, don't trace back
        raise P4RuntimeClientError(f"{path}: cannot build the pipeline: {exc}") from None
    return Pipeline(p4info, artifact.to_bytes())
