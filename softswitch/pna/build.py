"""Builds a PNA program's blocks and extern objects on the shared lowering.

:class:`PnaProgramBuilder` is the core :class:`~softswitch.core.build.ProgramBuilder`
with PNA's hooks: PNA's extern table (:mod:`softswitch.pna.externs`), its
extern constructors (``Counter(n_counters, type)``, ``Register(size[, initial])``,
``Hash(algo)`` …), direct counters and meters that act only when an action calls them
(PNA/PSA) instead of on every hit (v1model), and tables that tell the runtime which
entry matched or which key missed (add-on-miss, expire timers, direct resources).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from softswitch.core import hashes
from softswitch.core.build import Opaque, ProgramBuilder, enum_arg, int_arg, type_arg
from softswitch.core.externs import CounterArray, MeterArray, RegisterArray
from softswitch.diagnostics import P4Error
from softswitch.frontend import ast
from softswitch.frontend import elaborate as E
from softswitch.frontend import types as T
from softswitch.pna.externs import EXTERNS
from softswitch.pna.runtime import AccumulatingHash, OnesComplement16, PnaRuntime, meter_color

#: PNA_HashAlgorithm_t members (generic pna.p4: TARGET_DEFAULT; dpdk/pna.p4 adds the
#: rest) -> softswitch's hash functions. TARGET_DEFAULT is CRC32 here.
HASH_ALGORITHMS: dict[str, str] = {
    "TARGET_DEFAULT": "crc32", "CRC32": "crc32", "CRC16": "crc16",
    "CRC32_CUSTOM": "crc32_custom", "CRC16_CUSTOM": "crc16_custom",
    "ONES_COMPLEMENT16": "csum16", "IDENTITY": "identity",
}

_COUNTER_KINDS = {"PACKETS": "packets", "BYTES": "bytes",
                  "PACKETS_AND_BYTES": "packets_and_bytes"}


class DigestSink:
    """A ``Digest<T>`` instance: its control-plane name, for the digest queue."""

    def __init__(self, name: str) -> None:
        self.name = name


class PnaProgramBuilder(ProgramBuilder):
    target_name = "pna"
    externs = EXTERNS
    runtime_class = PnaRuntime
    direct_resources_on_hit = False
    table_context = True
    selector_type = "ActionSelector"
    meter_packets = "PACKETS"

    def __init__(self, program: ast.Program, elab: E.Elaboration) -> None:
        super().__init__(program, elab)
        self.runtime.clock = self.clock
        self._base["_meter_color"] = meter_color
        # checksum objects: their state is per packet, cleared before each pass
        self.per_packet: list[Any] = []

    def selector_hash(self, ext: E.ExternInstance) -> tuple[Callable[[bytes], int], int]:
        fn = _hash_fn(ext, "algo")
        return fn, int_arg(ext, "outputWidth") or 32

    def _make_extern(self, inst: E.ExternInstance) -> Any:
        name = inst.name or inst.local_name
        tname = inst.type_name
        obj: Any
        if tname == "Counter":
            kind = _COUNTER_KINDS.get(enum_arg(inst.args.get("type")), "packets_and_bytes")
            obj = CounterArray(name, int(int_arg(inst, "n_counters") or 0), kind)
            self.counters[name] = obj
        elif tname == "Meter":
            obj = MeterArray(name, int(int_arg(inst, "n_meters") or 0),
                             enum_arg(inst.args.get("type")) == "PACKETS", self.clock)
            self.meters[name] = obj
        elif tname == "Register":
            obj = self._register(inst, name)
        elif tname == "Hash":
            obj = _hash_fn(inst, "algo")
        elif tname == "Checksum":
            obj = AccumulatingHash(_hash_fn(inst, "hash"))
            self.per_packet.append(obj)
        elif tname == "InternetChecksum":
            obj = OnesComplement16()
            self.per_packet.append(obj)
        elif tname == "Random":
            obj = (int_arg(inst, "min") or 0, int_arg(inst, "max") or 0)
        elif tname == "Digest":
            obj = DigestSink(name)
        elif tname in ("ActionProfile", "ActionSelector", "DirectCounter", "DirectMeter"):
            obj = Opaque(name, tname)
        else:
            raise P4Error(f"extern '{tname}' is not supported by softswitch's PNA target",
                          inst.loc)
        return obj

    def _register(self, inst: E.ExternInstance, name: str) -> RegisterArray:
        size = int(int_arg(inst, "size") or 0)
        t = type_arg(inst, 0)
        if isinstance(t, T.EnumType) and t.underlying is not None:
            t = t.underlying
        initial = inst.args.get("initial_value")
        if isinstance(t, T.BitsType):
            init = initial if isinstance(initial, int) else 0
            obj = RegisterArray(name, size, t.width, t.signed, default=init)
        else:
            obj = RegisterArray(name, size, 0,
                                default=self.layouts.default_value(t) if t else 0)
        self.registers[name] = obj
        return obj


def _hash_fn(inst: E.ExternInstance, param: str) -> Callable[[bytes], int]:
    algo = enum_arg(inst.args.get(param))
    fn = hashes.ALGORITHMS.get(HASH_ALGORITHMS.get(algo, ""))
    if fn is None:
        raise P4Error(f"{inst.type_name} '{inst.name or inst.local_name}': hash algorithm "
                      f"'{algo}' is not supported by softswitch's PNA target", inst.loc)
    return fn
