"""Counters, direct counters, registers, meters and direct meters over P4Runtime.

These arrays exist from the moment the pipeline loads, so the only write is MODIFY
(INSERT/DELETE are INVALID_ARGUMENT). An unset index means every cell, for reads and
for writes (P4Runtime's wildcard); a negative index is INVALID_ARGUMENT and an index
past the array OUT_OF_RANGE (P4Runtime 1.4, CounterEntry/MeterEntry/RegisterEntry).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from p4.v1 import p4data_pb2, p4runtime_pb2

from softswitch.core.control import SwitchControl
from softswitch.p4runtime import bytestrings, errors
from softswitch.p4runtime.meters import MeterDriver
from softswitch.p4runtime.p4index import P4InfoIndex
from softswitch.p4runtime.tables import TableEntries
from softswitch.p4runtime.undo import UndoLog

Update = p4runtime_pb2.Update


def _only_modify(kind: int, what: str) -> None:
    """``what``: 'counters' or 'meters' (PI's words)."""
    if kind == Update.MODIFY:
        return
    if kind == Update.UNSPECIFIED:
        raise errors.invalid("Update type is not set")
    if kind in (Update.INSERT, Update.DELETE):
        raise errors.invalid(f"{Update.Type.Name(kind)} update type not supported for {what}")
    raise errors.invalid("Invalid update type")


def _indices(msg: Any, size: int, past: str) -> range:
    """The cells an entry names; ``past``: the message of an index past the array
    (OUT_OF_RANGE, the specification's code; the words are PI's)."""
    if not msg.HasField("index"):
        return range(size)
    index = msg.index.index
    if index < 0:
        raise errors.invalid("A negative number is not a valid index value")
    if index >= size:
        raise errors.out_of_range(past)
    return range(index, index + 1)


def _targets(index: P4InfoIndex, kind: str, obj_id: int) -> list[Any]:
    return index.all(kind) if obj_id == 0 else [index.get(kind, obj_id)]


class Externs:
    """The stateful externs of one loaded pipeline."""

    def __init__(self, switch: SwitchControl, index: P4InfoIndex, meters: MeterDriver,
                 tables: TableEntries) -> None:
        self.switch = switch
        self.index = index
        self.meters = meters
        self.tables = tables

    # ------------------------------------------------------------------ counters
    def write_counter(self, kind: int, entry: p4runtime_pb2.CounterEntry, log: UndoLog) -> None:
        if entry.counter_id == 0:
            raise errors.invalid("Invalid P4 id")
        info = self.index.get("counters", entry.counter_id)
        _only_modify(kind, "counters")
        name = info.preamble.name
        cells = _indices(entry, info.size, "Error when writing to counter")
        olds = [(i, self.switch.counter_read(name, i)) for i in cells]
        for i in cells:
            self.switch.counter_write(name, i, entry.data.packet_count, entry.data.byte_count)

        def undo() -> None:
            for i, (packets, bytes_) in olds:
                self.switch.counter_write(name, i, packets, bytes_)
        log.push(undo)

    def read_counter(self, req: p4runtime_pb2.CounterEntry) -> Iterator[p4runtime_pb2.Entity]:
        for info in _targets(self.index, "counters", req.counter_id):
            name = info.preamble.name
            for i in _indices(req, info.size, "Error when reading counter from target"):
                packets, bytes_ = self.switch.counter_read(name, i)
                out = p4runtime_pb2.Entity()
                ce = out.counter_entry
                ce.counter_id = info.preamble.id
                ce.index.index = i
                ce.data.packet_count = packets
                ce.data.byte_count = bytes_
                yield out

    def _direct_write(self, kind: int, table_entry: p4runtime_pb2.TableEntry,
                      attr: str) -> tuple[str, Any]:
        """The name of the ``attr`` (direct_counter, direct_meter) of the entry's table and
        the entry's record, for a MODIFY (the only update these entities take); PI's
        checks in PI's order."""
        plural = attr.split("_")[1] + "s"
        if table_entry is None:
            raise errors.invalid(f"Missing table_entry field in Direct{plural[:-1].title()}"
                                 "Entry")
        table, record = self.tables.record_for(table_entry)
        extern = getattr(table, attr)
        if extern is None:
            raise errors.invalid(f"Table has no direct {plural}")
        _only_modify(kind, plural)
        return extern.preamble.name, record

    def write_direct_counter(self, kind: int, entry: p4runtime_pb2.DirectCounterEntry,
                             log: UndoLog) -> None:
        te = entry.table_entry if entry.HasField("table_entry") else None
        name, record = self._direct_write(kind, te, "direct_counter")
        old = self.switch.counter_read(name, record.handle)
        self.switch.counter_write(name, record.handle, entry.data.packet_count,
                                  entry.data.byte_count)
        log.push(lambda: self.switch.counter_write(name, record.handle, *old))

    def read_direct_counter(self, req: p4runtime_pb2.DirectCounterEntry
                            ) -> Iterator[p4runtime_pb2.Entity]:
        for table, record in self._direct_records(req.table_entry, "direct_counter"):
            name = table.direct_counter.preamble.name  # type: ignore[union-attr]
            packets, bytes_ = self.switch.counter_read(name, record.handle)
            out = p4runtime_pb2.Entity()
            entry = self.tables.canonical(table, record)
            out.direct_counter_entry.table_entry.CopyFrom(_bare(entry))
            out.direct_counter_entry.data.packet_count = packets
            out.direct_counter_entry.data.byte_count = bytes_
            yield out

    def _direct_records(self, te: p4runtime_pb2.TableEntry, attr: str) -> Iterator[Any]:
        if te.match:
            table, record = self.tables.record_for(te)
            if getattr(table, attr) is not None:
                yield table, record
            return
        tables = self.index.tables.values() if te.table_id == 0 else [
            self.index.table(te.table_id)]
        for table in tables:
            if getattr(table, attr) is None:
                continue
            for record in self.tables.records(table.info.preamble.id):
                yield table, record

    # ------------------------------------------------------------------ registers
    def write_register(self, kind: int, entry: p4runtime_pb2.RegisterEntry,
                       log: UndoLog) -> None:
        _only_modify(kind, "register entries")
        if entry.register_id == 0:
            raise errors.invalid("a register write needs a register id")
        info = self.index.get("registers", entry.register_id)
        name = info.preamble.name
        width, signed = _register_width(info)
        if entry.data.WhichOneof("data") != "bitstring":
            raise errors.invalid(f"register '{name}' holds bit strings: data must be a "
                                 "bitstring")
        value = bytestrings.decode(entry.data.bitstring, width, f"register '{name}' value")
        if signed and value >> (width - 1):
            value -= 1 << width
        cells = _indices(entry, info.size, f"index out of range for '{name}' (size {info.size})")
        olds = [(i, self.switch.register_read(name, i)) for i in cells]
        for i in cells:
            self.switch.register_write(name, i, value)

        def undo() -> None:
            for i, v in olds:
                self.switch.register_write(name, i, v)
        log.push(undo)

    def read_register(self, req: p4runtime_pb2.RegisterEntry) -> Iterator[p4runtime_pb2.Entity]:
        for info in _targets(self.index, "registers", req.register_id):
            name = info.preamble.name
            width, _ = _register_width(info)
            for i in _indices(req, info.size,
                              f"index out of range for '{name}' (size {info.size})"):
                out = p4runtime_pb2.Entity()
                re = out.register_entry
                re.register_id = info.preamble.id
                re.index.index = i
                re.data.CopyFrom(p4data_pb2.P4Data(
                    bitstring=bytestrings.encode(self.switch.register_read(name, i), width)))
                yield out

    # ------------------------------------------------------------------ meters
    def write_meter(self, kind: int, entry: p4runtime_pb2.MeterEntry, log: UndoLog) -> None:
        if entry.meter_id == 0:
            raise errors.invalid("Invalid P4 id")
        info = self.index.get("meters", entry.meter_id)
        _only_modify(kind, "meters")
        config = entry.config if entry.HasField("config") else None
        for i in _indices(entry, info.size, "Error when writing meter spec"):
            self.meters.configure(info.preamble.name, i, config, log)

    def read_meter(self, req: p4runtime_pb2.MeterEntry) -> Iterator[p4runtime_pb2.Entity]:
        for info in _targets(self.index, "meters", req.meter_id):
            for i in _indices(req, info.size, "Error when reading meter from target"):
                out = p4runtime_pb2.Entity()
                out.meter_entry.meter_id = info.preamble.id
                out.meter_entry.index.index = i
                config = self.meters.config(info.preamble.name, i)
                if config is not None:
                    out.meter_entry.config.CopyFrom(config)
                yield out

    def write_direct_meter(self, kind: int, entry: p4runtime_pb2.DirectMeterEntry,
                           log: UndoLog) -> None:
        te = entry.table_entry if entry.HasField("table_entry") else None
        name, record = self._direct_write(kind, te, "direct_meter")
        config = entry.config if entry.HasField("config") else None
        self.meters.configure(name, record.handle, config, log, direct=True)

    def read_direct_meter(self, req: p4runtime_pb2.DirectMeterEntry
                          ) -> Iterator[p4runtime_pb2.Entity]:
        for table, record in self._direct_records(req.table_entry, "direct_meter"):
            out = p4runtime_pb2.Entity()
            out.direct_meter_entry.table_entry.CopyFrom(_bare(self.tables.canonical(table, record)))
            config = self.meters.config(table.direct_meter.preamble.name, record.handle)
            if config is not None:
                out.direct_meter_entry.config.CopyFrom(config)
            yield out


def _bare(entry: p4runtime_pb2.TableEntry) -> p4runtime_pb2.TableEntry:
    """The key part of an entry (table, match, priority) that names it."""
    out = p4runtime_pb2.TableEntry(table_id=entry.table_id, priority=entry.priority)
    out.match.extend(entry.match)
    return out


def _register_width(info: Any) -> tuple[int, bool]:
    spec = info.type_spec
    which = spec.WhichOneof("type_spec")
    if which != "bitstring":
        raise errors.unimplemented(f"register '{info.preamble.name}': only bit<W>/int<W> "
                                   "registers are supported over P4Runtime")
    bs = spec.bitstring
    kind = bs.WhichOneof("type_spec")
    if kind == "bit":
        return bs.bit.bitwidth, False
    if kind == "int":
        return bs.int.bitwidth, True
    return bs.varbit.max_bitwidth, False
