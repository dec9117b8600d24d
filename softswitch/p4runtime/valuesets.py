"""Parser value sets (``value_set<T>(N)``) over P4Runtime.

A value set is written whole: the only update is MODIFY, whose members replace the
current ones (the specification's rule), validated like table match keys. The switch
receives the complete member list through its optional ``value_set_set(name,
members)`` method (each member a list of ``KeyMatch`` in P4Info field order).
"""

from __future__ import annotations

from collections.abc import Iterator

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from softswitch.core.control import SwitchControl
from softswitch.p4runtime import errors, matches
from softswitch.p4runtime.p4index import P4InfoIndex, TableIndex
from softswitch.p4runtime.undo import UndoLog


class ValueSets:
    """The value sets of one loaded pipeline and their current members."""

    def __init__(self, switch: SwitchControl, index: P4InfoIndex) -> None:
        self.switch = switch
        self.index = index
        self._members: dict[int, list[p4runtime_pb2.ValueSetMember]] = {}

    def _shape(self, info: p4info_pb2.ValueSet) -> TableIndex:
        table = p4info_pb2.Table(preamble=info.preamble, match_fields=info.match)
        return TableIndex(table, fields={f.id: f for f in info.match})

    def write(self, kind: int, entry: p4runtime_pb2.ValueSetEntry, log: UndoLog) -> None:
        info = self.index.get("value_sets", entry.value_set_id)
        name = info.preamble.name
        if kind != p4runtime_pb2.Update.MODIFY:
            raise errors.invalid(f"value set '{name}' can only be modified as a whole")
        if info.size and len(entry.members) > info.size:
            raise errors.resource_exhausted(f"value set '{name}' holds at most {info.size} "
                                            f"members, {len(entry.members)} given")
        shape = self._shape(info)
        parsed = [matches.parse(shape, list(m.match), 0) for m in entry.members]
        setter = getattr(self.switch, "value_set_set", None)
        if setter is None:
            raise errors.unimplemented("this switch cannot program parser value sets")
        vid = info.preamble.id
        previous = self._members.get(vid, [])
        setter(name, [p.switch_keys for p in parsed])
        self._members[vid] = [p4runtime_pb2.ValueSetMember(match=p.fields(shape)) for p in parsed]

        def undo() -> None:
            old = [matches.parse(shape, list(m.match), 0).switch_keys for m in previous]
            setter(name, old)
            self._members[vid] = previous
        log.push(undo)

    def read(self, req: p4runtime_pb2.ValueSetEntry) -> Iterator[p4runtime_pb2.Entity]:
        infos = self.index.all("value_sets") if req.value_set_id == 0 else [
            self.index.get("value_sets", req.value_set_id)]
        for info in infos:
            out = p4runtime_pb2.Entity()
            out.value_set_entry.value_set_id = info.preamble.id
            out.value_set_entry.members.extend(self._members.get(info.preamble.id, []))
            yield out
