"""The one device softswitch runs: pipeline, switch, arbitration and packet paths.

Everything that touches the switch — gRPC handler threads and the port loop — goes
through this object and its single lock, so a packet never sees a half-applied
Write and DATAPLANE_ATOMIC batches come for free. Frames leave through ``transmit``
(the port layer's, given at construction); frames the pipeline sends to the CPU port
go to the primary controllers as PacketIn instead.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from softswitch.core.control import PacketOut
from softswitch.daemon.ports.dataplane import Checkpoints, FrameSink
from softswitch.diagnostics import P4Error
from softswitch.frontend.limits import DEFAULT as DEFAULT_LIMITS
from softswitch.frontend.limits import Limits
from softswitch.memory.reclaim import Reclaimer
from softswitch.p4runtime import errors, pipeline
from softswitch.p4runtime.arbitration import Arbiter, Connection
from softswitch.p4runtime.digests import DigestSuppressor
from softswitch.p4runtime.p4index import P4InfoIndex
from softswitch.p4runtime.packetio import PacketIO
from softswitch.p4runtime.roles import Role, RoleTable
from softswitch.p4runtime.runtime import PipelineRuntime

SetAction = p4runtime_pb2.SetForwardingPipelineConfigRequest
GetType = p4runtime_pb2.GetForwardingPipelineConfigRequest
log = logging.getLogger("softswitch.device")
MAX_STREAM_BACKLOG = 10000    # PacketIns queued for one controller before dropping


@dataclass
class Loaded:
    """A committed (or saved) pipeline."""

    config: p4runtime_pb2.ForwardingPipelineConfig
    switch: object
    runtime: PipelineRuntime
    packet_io: PacketIO
    digests: DigestSuppressor = field(default_factory=DigestSuppressor)


class Device:
    """Shared state of the running switch (thread-safe through ``lock``)."""

    def __init__(self, device_id: int = 0, cpu_port: int | None = None,
                 drop_port: int | None = None,
                 compiler: pipeline.Compiler = pipeline.compile_file,
                 roles: RoleTable | None = None, limits: Limits = DEFAULT_LIMITS,
                 transmit: FrameSink | None = None,
                 checkpoints: Checkpoints | None = None) -> None:
        """``transmit``: where frames out of the pipeline go (the port loop's
        ``DataPlane.transmit``; none: dropped). ``checkpoints``: the port loop's turns
        (``DataPlane.calls``), so a Write the loop answers lets urgent frames through
        between its holds of the lock; none: a Write holds the lock once."""
        self.device_id = device_id
        self.limits = limits          # bounds of compiling a config from a controller
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        self.compiler = compiler
        self.lock = threading.RLock()
        self._loading = threading.Lock()
        self.arbiter = Arbiter(device_id, roles)
        self.current: Loaded | None = None
        self.saved: Loaded | None = None
        self.transmit: FrameSink = transmit or (lambda port, data: None)
        # Where frames entering the pipeline go when the switch has queues: softswitch
        # run's Forwarder (deliver_batch), so PacketOut waits in the egress queues
        # as on BMv2. None: straight through the pipeline (in-process devices, tests).
        self.ingress: Callable[[int, list[bytes]], None] | None = None
        self._digest_list_ids = itertools.count(1)
        self.packets_in = 0
        self.packets_in_dropped = 0
        self.packets_out = 0
        self.reclaimer: Reclaimer | None = None
        self.stopping = threading.Event()      # set by stop(): long writes end early
        # Called where a Write's state is whole (before it takes the lock, after it
        # releases it): softswitch run gives the port loop's LoopCalls.checkpoint, so a
        # Write the loop answers (the front end's) lets urgent frames through there.
        self.checkpoint: Callable[[], None] = (
            checkpoints.checkpoint if checkpoints else lambda: None)
        # Whether checkpoint() acts where it is called (the port loop answers this
        # Write): a CONTINUE_ON_ERROR batch is then applied a few updates per hold of
        # the lock, a checkpoint between (p4runtime.write.LOOP_WRITE_SLICE). None: no
        # port loop answers Writes.
        self.checkpointing: Callable[[], bool] | None = (
            checkpoints.checkpointing if checkpoints else None)

    # ------------------------------------------------------------------ memory
    def start_reclaimer(self) -> None:
        """Give memory back after big requests (see :mod:`reclaim`)."""
        if self.reclaimer is None:
            self.reclaimer = Reclaimer(self.lock, self._memory_roots)

    def _memory_roots(self) -> list[object]:
        loaded = [x for x in (self.current, self.saved) if x is not None]
        return [part for x in loaded for part in (x.runtime, x.switch)]

    def note_request(self, size: int, pipeline: bool = False) -> None:
        """A request of ``size`` bytes was handled (``pipeline``: it set the pipeline):
        the reclaimer gives memory back once such requests add up (see :mod:`reclaim`)."""
        if self.reclaimer is not None:
            self.reclaimer.note(size, pipeline)

    def stop_reclaimer(self) -> None:
        """End the memory reclaimer's thread (its server has stopped)."""
        reclaimer, self.reclaimer = self.reclaimer, None
        if reclaimer is not None:
            reclaimer.stop()

    def stop(self) -> None:
        """The switch is stopping: running Writes end after their current update."""
        self.stopping.set()
        self.stop_reclaimer()

    # ------------------------------------------------------------------ pipeline
    def check_device(self, device_id: int) -> None:
        if device_id != self.device_id:
            raise errors.not_found(f"unknown device id {device_id} "
                                   f"(this switch is device {self.device_id})")

    def require_pipeline(self) -> Loaded:
        if self.current is None:
            raise errors.failed_precondition("No forwarding pipeline config set for this "
                                             "device")
        return self.current

    def load(self, config: p4runtime_pb2.ForwardingPipelineConfig,
             check_p4info: bool = True) -> Loaded:
        """Compile a config into a fresh pipeline (not yet committed)."""
        artifact = pipeline.parse_device_config(config.p4_device_config, self.limits)
        return self._build(config, artifact, check_p4info)

    def _build(self, config: p4runtime_pb2.ForwardingPipelineConfig,
               artifact: pipeline.Artifact, check_p4info: bool = True) -> Loaded:
        compiled = pipeline.build(artifact, self.compiler, self.limits)
        if check_p4info:
            if not config.HasField("p4info"):
                raise errors.invalid("the forwarding pipeline config has no P4Info")
            pipeline.check_p4info(config.p4info, compiled.p4info)
        else:
            config.p4info.CopyFrom(compiled.p4info)
        return self._wrap(config, compiled)

    def _wrap(self, config: p4runtime_pb2.ForwardingPipelineConfig,
              compiled: pipeline.Compiled) -> Loaded:
        index = P4InfoIndex(compiled.p4info)
        stored = p4runtime_pb2.ForwardingPipelineConfig()
        stored.CopyFrom(config)
        return Loaded(stored, compiled.switch, PipelineRuntime(compiled.switch, index),
                      PacketIO(index))

    def start_with(self, config: p4runtime_pb2.ForwardingPipelineConfig,
                   compiled: pipeline.Compiled | None = None) -> None:
        """Commit a pipeline given on the command line (its P4Info is generated)."""
        with self.lock:
            if compiled is None:
                self.current = self.load(config, check_p4info=False)
            else:
                config.p4info.CopyFrom(compiled.p4info)
                self.current = self._wrap(config, compiled)

    def set_pipeline(self, request: p4runtime_pb2.SetForwardingPipelineConfigRequest) -> None:
        """Carry out a SetForwardingPipelineConfig. Compiling takes seconds, so it runs
        outside the lock: packets and reads go on against the old pipeline meanwhile."""
        action = request.action
        if action == SetAction.COMMIT:
            with self.lock:
                self._commit_saved(request)
            return
        if action not in (SetAction.VERIFY, SetAction.VERIFY_AND_SAVE,
                          SetAction.VERIFY_AND_COMMIT, SetAction.RECONCILE_AND_COMMIT):
            raise errors.invalid(f"unsupported SetForwardingPipelineConfig action {action}")
        with self._loading:          # one compilation at a time
            given = pipeline.read_device_config(request.config.p4_device_config, self.limits)
            if given.artifact is None:
                loaded = self._keep_program(request.config, action)
            else:
                loaded = self._build(request.config, given.artifact)
            if action == SetAction.VERIFY:
                return
            with self.lock:
                if action == SetAction.VERIFY_AND_SAVE:
                    self.saved = loaded
                elif action == SetAction.VERIFY_AND_COMMIT:
                    self.current, self.saved = loaded, None
                elif given.reassign:
                    # PI removes the device before it saves the forwarding state, so a
                    # reassigning RECONCILE_AND_COMMIT keeps none
                    self.current, self.saved = loaded, None
                else:
                    self._reconcile(loaded)

    def _keep_program(self, config: p4runtime_pb2.ForwardingPipelineConfig,
                      action: int) -> Loaded:
        """PI's legacy form: a ``p4.tmp.P4DeviceConfig`` without ``device_data`` in a
        VERIFY_AND_COMMIT keeps the running program and takes the request's P4Info (which
        must describe it), with fresh forwarding state."""
        if action != SetAction.VERIFY_AND_COMMIT:
            raise errors.invalid("p4_device_config is a p4.tmp.P4DeviceConfig with no "
                                 "device_data: that keeps the running program, with "
                                 "VERIFY_AND_COMMIT only (as PI takes it)")
        with self.lock:
            current = self.current
        if current is None:
            raise errors.failed_precondition("p4_device_config is a p4.tmp.P4DeviceConfig "
                                             "with no device_data, which keeps the running "
                                             "program, and no program is running")
        kept = p4runtime_pb2.ForwardingPipelineConfig()
        kept.CopyFrom(config)
        kept.p4_device_config = current.config.p4_device_config
        return self.load(kept)

    def _commit_saved(self, request: p4runtime_pb2.SetForwardingPipelineConfigRequest) -> None:
        """COMMIT (P4Runtime 1.4 SetForwardingPipelineConfig): a config in the request
        is INVALID_ARGUMENT, no saved config NOT_FOUND."""
        if request.HasField("config"):
            raise errors.invalid("COMMIT takes no config: it commits the one saved by "
                                 "VERIFY_AND_SAVE (leave 'config' unset)")
        if self.saved is None:
            raise errors.not_found("COMMIT: no pipeline config was saved with "
                                   "VERIFY_AND_SAVE")
        self.current, self.saved = self.saved, None

    def _reconcile(self, loaded: Loaded) -> None:
        """Commit keeping the forwarding state, as far as the new program allows."""
        old = self.current
        if old is None:
            self.current = loaded
            return
        same = (old.config.p4_device_config == loaded.config.p4_device_config
                and pipeline.signature(old.config.p4info)
                == pipeline.signature(loaded.config.p4info))
        if same:
            old.config.cookie.CopyFrom(loaded.config.cookie)
            return
        updates = [p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT, entity=e)
                   for e in _forwarding_state(old.runtime)]
        # Any failure discards the whole new pipeline, so no rollback is needed.
        batch = p4runtime_pb2.WriteRequest(updates=updates)
        for update in batch.updates:
            if update.entity.WhichOneof("entity") in ("value_set_entry",) or (
                    update.entity.HasField("table_entry")
                    and update.entity.table_entry.is_default_action):
                update.type = p4runtime_pb2.Update.MODIFY
        failures = [r for r in loaded.runtime.write(batch) if r is not None]
        if failures:
            raise errors.failed_precondition("RECONCILE_AND_COMMIT: the current forwarding "
                                             "state does not fit the new pipeline: "
                                             f"{failures[0].message}")
        self.current = loaded

    def get_pipeline(self, response_type: int) -> p4runtime_pb2.ForwardingPipelineConfig | None:
        """The config to answer GetForwardingPipelineConfig with; None (the response's
        ``config`` left unset, as P4Runtime 1.4 says) while no pipeline is set."""
        if response_type not in (GetType.ALL, GetType.COOKIE_ONLY, GetType.P4INFO_AND_COOKIE,
                                 GetType.DEVICE_CONFIG_AND_COOKIE):
            raise errors.invalid(f"unknown response type {response_type}")
        with self.lock:
            if self.current is None:
                return None
            config = self.current.config
            out = p4runtime_pb2.ForwardingPipelineConfig()
            if config.HasField("cookie"):
                out.cookie.CopyFrom(config.cookie)
            if response_type in (GetType.ALL, GetType.P4INFO_AND_COOKIE):
                out.p4info.CopyFrom(config.p4info)
            if response_type in (GetType.ALL, GetType.DEVICE_CONFIG_AND_COOKIE):
                out.p4_device_config = config.p4_device_config
            return out

    @property
    def p4info(self) -> p4info_pb2.P4Info | None:
        return self.current.config.p4info if self.current else None

    # ------------------------------------------------------------------ packets
    def receive(self, port: int, frame: bytes) -> None:
        """A frame arrived on a front-panel port: run it through the pipeline.

        A packet the pipeline cannot process is logged and dropped; the port loop
        must keep running whatever one packet does."""
        with self.lock:
            if self.current is None:
                return
            log.debug("port %d: %d-byte frame in", port, len(frame))
            try:
                outs = self._inject(self.current, port, frame)
            except errors.P4RuntimeError as exc:
                log.warning("port %d: packet dropped: %s", port, exc.message)
                return
            self.dispatch(self.current, outs)

    @staticmethod
    def _inject(loaded: Loaded, port: int, frame: bytes) -> list[PacketOut]:
        try:
            return loaded.switch.inject(port, frame)  # type: ignore[attr-defined]
        except P4Error as exc:
            raise errors.invalid(f"the pipeline rejected the packet: {exc.message}") from None
        except Exception as exc:  # noqa: BLE001 - a softswitch bug must not stop the switch
            log.error("internal error processing a packet on port %d: %s: %s", port,
                      type(exc).__name__, exc)
            raise errors.internal(f"internal error processing the packet: "
                                  f"{type(exc).__name__}: {exc}") from None

    def packet_out(self, conn: Connection, packet: p4runtime_pb2.PacketOut) -> None:
        """A controller's PacketOut: inject it on the CPU port."""
        if not self.arbiter.is_primary(conn):
            raise errors.permission_denied("PacketOut from a controller that is not primary")
        role = self.arbiter.role_of(conn)
        if role is None or not role.packet_out:
            raise errors.permission_denied(f"role '{conn.role}' may not send PacketOut "
                                           "(packet_out: false in --role-config)")
        with self.lock:
            loaded = self.require_pipeline()
            if self.cpu_port is None:
                raise errors.failed_precondition("the switch was started without --cpu-port: "
                                                 "PacketOut is not available")
            frame = loaded.packet_io.frame_of(packet)
            self.packets_out += 1
            if self.ingress is not None:
                self.ingress(self.cpu_port, [frame])
                return
            outs = self._inject(loaded, self.cpu_port, frame)
            self.dispatch(loaded, outs)

    def dispatch(self, loaded: Loaded, outs: list[PacketOut]) -> None:
        """Send what ``loaded``'s pipeline put out: frames for the CPU port to the
        primaries as PacketIn, the drop port's nowhere, the rest to :attr:`transmit`;
        then the digests the pipeline made. Called with the lock held."""
        for out in outs:
            if out.port == self.cpu_port:
                self._packet_in(loaded, out.data)
            elif out.port != self.drop_port:
                log.debug("port %d: %d-byte frame out", out.port, len(out.data))
                self.transmit(out.port, out.data)
        self._send_digests(loaded)

    def _packet_in(self, loaded: Loaded, frame: bytes) -> None:
        """Send a frame to the primaries; a controller that stops reading its stream
        loses PacketIns (counted) rather than growing the server's memory."""
        message = p4runtime_pb2.StreamMessageResponse(packet=loaded.packet_io.packet_in_of(frame))
        for conn in self.arbiter.primaries(lambda role: role.packet_in):
            if conn.backlog() >= MAX_STREAM_BACKLOG:
                self.packets_in_dropped += 1
                continue
            conn.send(message)
            self.packets_in += 1
        log.debug("cpu port: %d-byte packet-in", len(frame))

    # ------------------------------------------------------------------ digests
    def _send_digests(self, loaded: Loaded) -> None:
        """Forward the digests the switch produced (its ``drain_digests`` hook)."""
        drain = getattr(loaded.switch, "drain_digests", None)
        if drain is None:
            return
        drained = drain()
        if not drained:
            return
        for message in loaded.digests.lists(loaded.runtime, drained, self._digest_list_ids):
            digest_id = message.digest.digest_id
            for conn in self.arbiter.primaries(lambda role, d=digest_id: self.notifies(
                    role, loaded, d)):
                conn.send(message)

    def notifies(self, role: Role, loaded: Loaded, obj_id: int) -> bool:
        """Whether a role hears of this digest's lists / this table's idle entries."""
        return self.arbiter.roles.scope(role, loaded.runtime.index).notifies(obj_id)

    def digest_ack(self, conn: Connection, ack: p4runtime_pb2.DigestListAck) -> None:
        """A primary's acknowledgement of a digest list (its role must own the digest)."""
        role = self.arbiter.role_of(conn)
        if role is None or not self.arbiter.is_primary(conn):
            raise errors.permission_denied("DigestListAck from a controller that is not "
                                           "primary")
        with self.lock:
            loaded = self.require_pipeline()
            loaded.runtime.index.get("digests", ack.digest_id)
            if not self.notifies(role, loaded, ack.digest_id):
                raise errors.permission_denied(f"digest {ack.digest_id} is not in the scope "
                                               f"of role '{role.name}'")
            loaded.digests.ack(ack.digest_id, ack.list_id)


def _forwarding_state(runtime: PipelineRuntime) -> list[p4runtime_pb2.Entity]:
    """The controller-written state of a pipeline, as entities to replay."""
    out = runtime.read([
        p4runtime_pb2.Entity(action_profile_member=p4runtime_pb2.ActionProfileMember()),
        p4runtime_pb2.Entity(action_profile_group=p4runtime_pb2.ActionProfileGroup())])
    out += [p4runtime_pb2.Entity(table_entry=entry) for entry in runtime.tables.written()]
    pre = p4runtime_pb2.Entity()
    pre.packet_replication_engine_entry.SetInParent()
    out.extend(runtime.read([pre]))
    out.extend(runtime.read([p4runtime_pb2.Entity(
        digest_entry=p4runtime_pb2.DigestEntry())]))
    return out
