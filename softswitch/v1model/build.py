"""The v1model program builder: v1model's externs over the core builder.

:class:`V1ModelProgramBuilder` is :class:`~softswitch.core.build.ProgramBuilder` with
v1model's hooks: its extern table (:mod:`softswitch.v1model.externs`), its
stateful externs (``counter``, ``register``, ``meter`` with BMv2's semantics), and
``action_selector`` with the hash algorithm its constructor names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from softswitch.core import hashes
from softswitch.core.build import Opaque, ProgramBuilder, enum_arg, int_arg, type_arg
from softswitch.core.externs import CounterArray, MeterArray, RegisterArray
from softswitch.diagnostics import P4Error
from softswitch.frontend import elaborate as E
from softswitch.frontend import types as T
from softswitch.v1model.externs import EXTERNS
from softswitch.v1model.runtime import V1ModelRuntime


class V1ModelProgramBuilder(ProgramBuilder):
    """Builds a v1model program's blocks and control-plane objects."""

    target_name = "v1model"
    externs = EXTERNS
    runtime_class = V1ModelRuntime
    direct_resources_on_hit = True
    selector_type = "action_selector"
    meter_packets = "packets"

    def selector_hash(self, ext: E.ExternInstance) -> tuple[Callable[[bytes], int], int]:
        """(hash function, output width) of an ``action_selector`` instance."""
        algo = enum_arg(ext.args.get("algorithm"))
        fn = hashes.ALGORITHMS.get(algo)
        if fn is None:
            raise P4Error(f"action selector '{ext.name or ext.local_name}': hash algorithm "
                          f"'{algo}' is not supported", ext.loc)
        width = int_arg(ext, "outputWidth") or 32
        return fn, width

    def _make_extern(self, inst: E.ExternInstance) -> Any:
        name = inst.name or inst.local_name
        tname = inst.type_name
        size = int_arg(inst, "size")
        if tname == "counter":
            obj: Any = CounterArray(name, int(size or 0), enum_arg(inst.args.get("type")))
            self.counters[name] = obj
        elif tname == "register":
            t = type_arg(inst, 0)
            if isinstance(t, T.EnumType) and t.underlying is not None:
                t = t.underlying
            if isinstance(t, T.BitsType):
                obj = RegisterArray(name, int(size or 0), t.width, t.signed)
            else:
                obj = RegisterArray(name, int(size or 0), 0,
                                    default=self.layouts.default_value(t) if t else 0)
            self.registers[name] = obj
        elif tname == "meter":
            obj = MeterArray(name, int(size or 0),
                             enum_arg(inst.args.get("type")) == "packets", self.clock)
            self.meters[name] = obj
        else:
            obj = Opaque(name, tname)
        return obj
