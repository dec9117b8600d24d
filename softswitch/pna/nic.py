"""A loaded PNA program: a NIC with host-side and network-side ports.

:class:`Nic` runs one packet pass as main_parser → pre_control → main_control →
main_deparser (p4c's generic ``pna.p4``), then acts on what main_control decided:

* the direction is NET_TO_HOST for a packet from a network port and HOST_TO_NET for
  one from a host port (:class:`PortRoles`); ``input_port`` is the arrival port;
* a parser error does not drop the packet: main_control sees ``istd.parser_error``;
* pre_control gets the parsed headers (read only) and the user metadata; its metadata
  writes are what main_control starts with. Inline decryption (``ostd.decrypt``) is
  not provided: such a packet is dropped (:attr:`Nic.decrypt_refused`);
* forwarding: the last of ``send_to_port``/``drop_packet``/``recirculate`` wins; a
  packet with none, or for a port that is neither a host nor a network port
  (:attr:`Nic.unknown_port_drops`), is dropped. ``recirculate`` re-runs the deparsed
  packet with ``pass`` + 1 and the same direction, up to pass 7 (``PassNumber_t`` is
  3 bits), then drops it (:attr:`Nic.pass_limit_drops`);
* ``mirror_packet(slot, session)``: one copy per slot of the deparsed packet to the
  session's port (P4Runtime ``CloneSessionEntry``), the original still forwarded;
* ``ostd.class_of_service`` goes with the packet to the transmit queues (``pna.tm``);
* the loopback port (optional): a packet sent or mirrored to it re-enters at once with
  ``loopedback`` true, in the other direction, ``pass`` 0 and the loopback port as
  ``input_port``; re-entries count against the same limit of 8 passes per packet.

The control-plane side is the shared :class:`~softswitch.core.target.Target`, as for a
v1model switch, so the same P4Runtime server and STF runner drive a NIC.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from softswitch.core.bits import BitWriter, PacketReader
from softswitch.core.blocks import REJECT_CODE
from softswitch.core.control import PacketOut
from softswitch.core.execution import ParserError, SwitchAbort
from softswitch.core.target import Target, build_program
from softswitch.diagnostics import P4Error
from softswitch.frontend import elaborate as E
from softswitch.frontend import types as T
from softswitch.pna.build import PnaProgramBuilder
from softswitch.pna.runtime import DROP, PORT, RECIRCULATE, PnaRuntime

ROLES = ("main_parser", "pre_control", "main_control", "main_deparser")
NET_TO_HOST, HOST_TO_NET = "NET_TO_HOST", "HOST_TO_NET"
MAX_PASS = 7


@dataclass
class PortRoles:
    """Which ports face the host (vports, HOST_TO_NET traffic enters there) and which
    the network. With neither given every port is a network port."""

    host: set[int] = field(default_factory=set)
    net: set[int] = field(default_factory=set)
    loopback: int | None = None

    def __post_init__(self) -> None:
        both = self.host & self.net
        if both:
            raise P4Error(f"port(s) {sorted(both)} given as both host and network ports")
        if self.loopback is not None and self.loopback in self.host | self.net:
            raise P4Error(f"loopback port {self.loopback} is also a host or network port")

    def direction(self, port: int) -> str | None:
        if port in self.host:
            return HOST_TO_NET
        if port in self.net or not (self.host or self.net):
            return NET_TO_HOST
        return None


class Nic(Target):
    """One PNA pipeline; all packet processing is synchronous in :meth:`inject`."""

    rt: PnaRuntime
    pb: PnaProgramBuilder

    def __init__(self, pb: PnaProgramBuilder, roles: dict[str, Any],
                 types: dict[str, Any]) -> None:
        super().__init__(pb, roles, types)
        self.types = types
        self.ports = PortRoles()
        self.directions = types["directions"]
        self.decrypt_refused = 0
        self.unknown_port_drops = 0
        self.pass_limit_drops = 0

    # ------------------------------------------------------------ loading
    @classmethod
    def from_file(cls, path: str | Path, include_dirs: Sequence[str] = (),
                  defines: dict[str, str] | None = None,
                  fastpath: str | None = None) -> Nic:
        from softswitch.frontend.compiler import compile_program
        return cls.from_program(compile_program(str(path), include_dirs, defines), fastpath)

    @classmethod
    def from_program(cls, checked: Any, fastpath: str | None = None) -> Nic:
        """The loaded NIC. It runs in the interpreter: softswitch's C fast path is
        v1model only, so ``fastpath`` (default ``$SOFTSWITCH_FASTPATH``) ``require`` is
        refused and ``auto`` notes why in ``.fastpath``, as a v1model switch does."""
        from softswitch.fastpath import mode

        if mode(fastpath) == "require":
            raise P4Error("the C fast path runs v1model programs only; PNA programs run "
                          "in the interpreter (SOFTSWITCH_FASTPATH=auto or off)")
        pb, roles = build_program(checked, "PNA_NIC", "PNA", ROLES, PnaProgramBuilder)
        nic = cls(pb, roles, _pipeline_types(pb.elab, pb))
        nic.fastpath = "interpreter: the C fast path runs v1model programs only"
        return nic

    def set_ports(self, host: Iterable[int] = (), net: Iterable[int] = (),
                  loopback: int | None = None) -> None:
        self.ports = PortRoles(set(host), set(net), loopback)

    def set_expire_profile(self, profile: int, timeout_us: int) -> None:
        """The idle time after which entries added with this expire-time profile are
        deleted (0: never). PNA leaves profiles to the target's control plane."""
        if not 0 <= profile <= 255 or timeout_us < 0:
            raise P4Error(f"expire profile {profile}: id must be 0..255 and the timeout "
                          ">= 0 µs")
        self.rt.set_expire_profile(profile, timeout_us)

    def queued_view(self, tm: Any) -> Any:
        """This NIC behind per-class transmit queues (``softswitch run``)."""
        from softswitch.pna.tm import NicQueues
        return NicQueues(self, tm)

    # ------------------------------------------------------------ packets
    def inject(self, port: int, data: bytes) -> list[PacketOut]:
        out: list[PacketOut] = []
        direction = self.ports.direction(port)
        if direction is None:
            self.unknown_port_drops += 1
            return out
        self.rt.expire(self.clock.now_us())
        work: deque[_Arrival] = deque([_Arrival(bytes(data), port, direction)])
        passes = 0
        while work:
            a = work.popleft()
            passes += 1
            if passes > MAX_PASS + 1:
                self.pass_limit_drops += 1
                break
            sent: list[PacketOut] = []
            try:
                again = self._pass(a, sent)
            except SwitchAbort:
                raise
            except ParserError:
                continue   # a stack fault outside the parser: the packet is dropped
            if again is not None:
                work.append(_Arrival(again, a.port, a.direction, a.pass_no + 1, a.loopedback))
            for o in sent:
                if self.ports.loopback is not None and o.port == self.ports.loopback:
                    work.append(_Arrival(o.data, o.port, _OTHER[a.direction], 0, True))
                else:
                    out.append(o)
        return out

    def _pass(self, a: _Arrival, out: list[PacketOut]) -> bytes | None:
        """One pass; returns the packet to recirculate, or None."""
        t = self.types
        data, port, direction, pass_no = a.data, a.port, a.direction, a.pass_no
        dcode = self.directions[direction]
        for obj in self.pb.per_packet:
            obj.clear()
        state = self.rt.begin_pass(len(data))
        hdr, meta = self.hdr_cls(), self.meta_cls()
        pistd = t["parser_istd"]()
        _set(pistd, direction=dcode, pass_=pass_no, loopedback=a.loopedback, input_port=port)
        reader = PacketReader(data)
        error = 0
        try:
            hdr, meta = self.roles["main_parser"](reader, hdr, meta, pistd)
        except ParserError as e:
            if e.values is not None:
                hdr, meta = e.values
            if e.code != REJECT_CODE:
                error = e.code
        payload = data[reader.bit_pos >> 3:]
        self.rt.payload = payload
        pre_in, pre_out = t["pre_istd"](), t["pre_ostd"]()
        _set(pre_in, input_port=port, parser_error=error, direction=dcode, pass_=pass_no,
             loopedback=a.loopedback)
        meta, pre_out = self._run_control("pre_control", hdr, meta, pre_in, pre_out)
        if getattr(pre_out, "f_decrypt", False):
            self.decrypt_refused += 1
            return None
        istd, ostd = t["main_istd"](), t["main_ostd"]()
        _set(istd, direction=dcode, pass_=pass_no, loopedback=a.loopedback,
             timestamp=self.clock.now_us() * 1000, parser_error=error, class_of_service=0,
             input_port=port)
        hdr, meta, ostd = self._run_control("main_control", hdr, meta, istd, ostd)
        writer = BitWriter()
        self._run_control("main_deparser", writer, hdr, meta, ostd)
        packet = writer.to_bytes() + payload
        cos = int(getattr(ostd, "f_class_of_service", 0))
        for session in state.mirrors.values():
            self._mirror(session, packet, cos, out)
        if state.dest == RECIRCULATE:
            return packet
        if state.dest == PORT:
            if self.ports.direction(state.port) is None and state.port != self.ports.loopback:
                self.unknown_port_drops += 1
            else:
                out.append(PacketOut(state.port, packet, {"class_of_service": cos}))
        assert state.dest in (DROP, PORT)
        return None

    def _mirror(self, session: int, packet: bytes, cos: int, out: list[PacketOut]) -> None:
        target = self.mirror.get(session)
        if target is None:
            return
        kind, where = target
        ports = [where] if kind == "port" else [
            p for node in self.mc_groups.get(where, []) for p in self.mc_nodes[node][1]]
        for p in ports:
            out.append(PacketOut(p, packet, {"class_of_service": self.mirror_cos.get(
                session, cos), "mirror_session": session}))

    def _run_control(self, role: str, *args: Any) -> Any:
        values = super()._run_control(role, *args)
        return values if values is not None else ()


_OTHER = {NET_TO_HOST: HOST_TO_NET, HOST_TO_NET: NET_TO_HOST}


@dataclass
class _Arrival:
    """A packet entering the pipeline: from a port, recirculated or looped back."""

    data: bytes
    port: int
    direction: str
    pass_no: int = 0
    loopedback: bool = False


def _set(obj: Any, **fields: Any) -> None:
    """Fill architecture metadata (``pass_`` is P4's ``pass``)."""
    for name, value in fields.items():
        a = "f_" + name.rstrip("_")
        if hasattr(obj, a):
            setattr(obj, a, value)


def _pipeline_types(elab: E.Elaboration, pb: PnaProgramBuilder) -> dict[str, Any]:
    """Header/metadata classes and the architecture metadata structs, from the blocks'
    parameter types; PNA_Direction_t's member codes."""
    lay = pb.layouts

    def param_types(role: str, n: int) -> list[Any]:
        blk = elab.top_block(role)
        assert blk is not None
        params = blk.decl.params
        if len(params) != n:
            raise P4Error(f"PNA_NIC's {role} must take {n} parameters", blk.decl.loc)
        return [T.strip_newtype(p.type_ref.resolved) for p in params]

    _, ht, mt, pistd = param_types("main_parser", 4)
    pht, pmt, pre_in, pre_out = param_types("pre_control", 4)
    _, _, istd, ostd = param_types("main_control", 4)
    if pht != ht or pmt != mt:
        raise P4Error("softswitch runs pre_control on main_parser's headers and metadata: "
                      "PNA_NIC's PH/PM must equal MH/MM",
                      elab.main.loc if elab.main is not None else None)
    direction = next((f.type for f in istd.fields if f.name == "direction"), None)
    members = getattr(T.strip_newtype(direction), "members", {}) if direction else {}
    return {"H": lay.cls(ht), "M": lay.cls(mt), "SM": lay.cls(istd), "field_lists": {},
            "parser_istd": lay.cls(pistd), "pre_istd": lay.cls(pre_in),
            "pre_ostd": lay.cls(pre_out), "main_istd": lay.cls(istd),
            "main_ostd": lay.cls(ostd),
            "directions": {NET_TO_HOST: members.get(NET_TO_HOST, 0),
                           HOST_TO_NET: members.get(HOST_TO_NET, 1)}}
