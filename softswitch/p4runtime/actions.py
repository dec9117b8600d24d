"""Action calls: P4Runtime ``Action`` ⇄ (action name, argument ints) for the switch.

The checks are those P4Runtime requires before anything reaches the data plane: the
action must belong to the table and be allowed in this position (``@defaultonly`` /
``@tableonly`` scopes), every parameter must be given exactly once and fit its width.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from dataclasses import dataclass

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from softswitch.p4runtime import bytestrings, encoding, errors
from softswitch.p4runtime.p4index import ActionPlan, P4InfoIndex, TableIndex

Scope = p4info_pb2.ActionRef


@dataclass(slots=True)
class ActionCall:
    """A validated action: what the switch needs (name, ints), and the P4Info action
    to build its canonical message from when it is read back (``proto`` only for
    actions the switch reports by name, which have no P4Info action at hand)."""

    name: str
    args: list[int]
    proto: p4runtime_pb2.Action | None
    info: p4info_pb2.Action | None = None
    plan: ActionPlan | None = None     # the action's plan (its encoding prefixes)

    def canonical(self) -> p4runtime_pb2.Action:
        """The canonical Action (built afresh: a stored entry keeps only ints, as a
        parsed message costs many times that, on upb and more so in pure Python)."""
        if self.info is None:
            assert self.proto is not None
            return self.proto
        proto = p4runtime_pb2.Action(action_id=self.info.preamble.id)
        for p, value in zip(self.info.params, self.args, strict=True):
            proto.params.add(param_id=p.id, value=bytestrings.encode(value))
        return proto

    def canonical_bytes(self) -> bytes:
        """The canonical Action, encoded directly (a Read of many entries builds one
        per entry: building message objects costs several times more). Field numbers:
        Action.action_id = 1, params = 4; Param.param_id = 2, value = 3 (p4runtime.proto)."""
        if self.plan is not None:         # the per-parameter prefixes are the plan's
            head, prefixes = self.plan.wire_prefixes
            encode = bytestrings.encode
            parts = [head]
            for prefix, value in zip(prefixes, self.args, strict=True):
                data = encode(value)
                size = len(prefix) + 1 + len(data)   # Param: id prefix, value length, value
                if size >= 128:                       # lengths past one varint byte
                    return self._canonical_bytes_slow()
                parts.append(b"\x22" + bytes((size,)) + prefix + bytes((len(data),)) + data)
            return b"".join(parts)
        return self._canonical_bytes_slow()

    def _canonical_bytes_slow(self) -> bytes:
        if self.info is None:
            assert self.proto is not None
            return self.proto.SerializeToString()
        if len(self.args) != len(self.info.params):
            raise ValueError(f"action '{self.name}': {len(self.args)} arguments for "
                             f"{len(self.info.params)} parameters")
        return _action_bytes(self.info, self.args)


def _action_bytes(info: p4info_pb2.Action, args: list[int]) -> bytes:
    """The canonical Action of ``info`` with ``args`` (paired with its parameters in
    order, negatives masked to their widths), encoded."""
    varint, encode = encoding.varint, bytestrings.encode
    parts = [b"\x08" + varint(info.preamble.id)]
    for p, value in zip(info.params, args, strict=False):
        data = encode(value, p.bitwidth)
        param = b"\x10" + varint(p.id) + b"\x1a" + varint(len(data)) + data
        parts.append(b"\x22" + varint(len(param)) + param)
    return b"".join(parts)


def parse(index: P4InfoIndex, action: p4runtime_pb2.Action,
          table: TableIndex | None = None, default: bool = False,
          profile: bool = False) -> ActionCall:
    """Validate an action (for ``table``'s entries, or its default entry).

    The action's parameters come from its precompiled plan (P4InfoIndex.action_plan):
    the common case (each parameter given once) costs one dict, one set compare and
    one decode per parameter."""
    plan = index.action_plan(action.action_id)
    if table is not None:
        _check_scope(table, plan.info, default, profile)
    params = action.params
    given = {p.param_id: p.value for p in params}
    if len(given) != len(params) or given.keys() != plan.ids:
        _refuse_params(plan, params)
    values = [given[pid] for pid in plan.order]
    args = list(map(int.from_bytes, values))
    # One C-level pass checks every value fits (and none is an empty string); the
    # slow path only runs to name the offending parameter.
    if b"" in values or not all(map(operator.le, args, plan.limits)):
        args = [bytestrings.decode(v, p.width, p.what) for v, p in zip(values, plan.params,
                                                                        strict=True)]
    return ActionCall(plan.name, args, None, plan.info, plan)


def _refuse_params(plan: ActionPlan, params: Iterable[p4runtime_pb2.Action.Param]) -> None:
    """INVALID_ARGUMENT for a wrong number of parameters, an unknown one or one given
    twice (in that order of checks; the first two in PI's words)."""
    name = plan.name
    if len(params) != len(plan.params):
        raise errors.invalid("Unexpected number of action parameters")
    given: dict[int, None] = {}
    for param in params:
        if param.param_id not in plan.ids:
            raise errors.invalid("Unknown action parameter")
        if param.param_id in given:
            raise errors.invalid(f"action '{name}': parameter id {param.param_id} "
                                 "given twice")
        given[param.param_id] = None
    raise errors.internal(f"action '{name}': parameters refused for no reason")


def _check_scope(table: TableIndex, info: p4info_pb2.Action, default: bool,
                 profile: bool = False) -> None:
    ref = table.actions.get(info.preamble.id)
    if ref is None:
        raise errors.invalid("Invalid action for action profile" if profile
                             else "Invalid action for table")
    if default and ref.scope == Scope.TABLE_ONLY:
        raise errors.permission_denied("Cannot use TABLE_ONLY action as default action")
    if not default and ref.scope == Scope.DEFAULT_ONLY:
        raise errors.permission_denied("Cannot use DEFAULT_ONLY action in table entry")


def build(index: P4InfoIndex, name: str, args: list[int]) -> p4runtime_pb2.Action:
    """The canonical Action proto of an action the switch reports by name."""
    return p4runtime_pb2.Action.FromString(build_wire(index, name, args))


def build_wire(index: P4InfoIndex, name: str, args: list[int]) -> bytes:
    """:func:`build`'s Action, encoded (the runtime channel's writes go as bytes)."""
    info = index.action_named(name)
    if info is None:
        raise errors.internal(f"switch reports action '{name}' unknown to the P4Info")
    return _action_bytes(info, args)
