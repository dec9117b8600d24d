"""The handlers of BMv2's runtime services; here the ``standard`` service's.

Each call runs on the same :class:`~softswitch.core.control.SwitchControl` the line
protocol uses (:mod:`.base`): table writes are P4Runtime writes
(:mod:`softswitch.daemon.cli_channel.control`), so P4Runtime reads them back; values
are converted by :mod:`.values`. A table write P4Runtime's checks refuse answers BMv2's
code for the same reason (a duplicate key, a full table, no such entry). The
``simple_pre_lag`` and ``simple_switch`` services are in :mod:`.replication`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from bm_runtime.standard import Standard
from bm_runtime.standard import ttypes as std
from p4.v1 import p4runtime_pb2
from thrift.Thrift import TApplicationException

from softswitch.core.control import SwitchControl
from softswitch.daemon.cli_channel.commands import RuntimeChannel
from softswitch.daemon.cli_channel.control import Refused
from softswitch.daemon.thrift.base import index_code
from softswitch.daemon.thrift.config_json import config_json
from softswitch.daemon.thrift.profiles import ProfileCalls, indirect_action, indirect_table
from softswitch.daemon.thrift.replication import PreLagHandler, SimpleSwitchHandler
from softswitch.daemon.thrift.values import (
    data_bytes,
    entry_of,
    keys_of,
    params_of,
    priority,
    to_int,
)
from softswitch.diagnostics import P4Error
from softswitch.tm import TrafficManager

_REFUSAL_CODES = {"ALREADY_EXISTS": std.TableOperationErrorCode.DUPLICATE_ENTRY,
                  "RESOURCE_EXHAUSTED": std.TableOperationErrorCode.TABLE_FULL,
                  "NOT_FOUND": std.TableOperationErrorCode.INVALID_HANDLE}


class StandardHandler(ProfileCalls):
    """The ``standard`` service: tables, counters, registers, value sets, the program's
    JSON; action profiles by :class:`ProfileCalls`."""

    service = Standard

    def __init__(self, channel: RuntimeChannel,
                 config: Callable[[], p4runtime_pb2.ForwardingPipelineConfig | None],
                 device_id: int = 0, thrift_port: int = 0) -> None:
        super().__init__(channel)
        self._config = config
        self._device_id, self._thrift_port = device_id, thrift_port
        self._vset_bytes: dict[tuple[str, int], bytes] = {}   # value set value → as added

    def _table_error(self, code: int = std.TableOperationErrorCode.ERROR
                     ) -> Callable[[Exception], Exception]:
        """BMv2's code for what P4Runtime's checks said (a duplicate key, a full table,
        no such entry), else ``code``."""
        def error(err: Exception) -> Exception:
            said = _REFUSAL_CODES.get(err.code) if isinstance(err, Refused) else None
            return std.InvalidTableOperation(code if said is None else said)
        return error

    # --- the program
    def bm_get_config(self) -> str:
        config = self._config()
        return "" if config is None else config_json(config)

    def bm_get_config_md5(self) -> bytes:
        return hashlib.md5(self.bm_get_config().encode()).digest()

    def bm_mgmt_get_info(self) -> Any:
        """``switch_info``: the device id and Thrift port (no other sockets)."""
        return std.BmConfig(device_id=self._device_id, thrift_port=self._thrift_port)

    def bm_dev_mgr_show_ports(self) -> list[Any]:
        """The ports, with ``show_ports``'s extra info (the kernel's drops)."""
        def extra(port: Any) -> dict[str, str]:
            info = {"kernel_drops": str(port.kernel_drops)}
            if port.urgent_kernel_drops is not None:
                info["urgent_kernel_drops"] = str(port.urgent_kernel_drops)
            return info
        try:
            ports = self._channel.port_status()
        except P4Error:
            ports = []
        return [std.DevMgrPortInfo(port_num=p.number, iface_name=p.iface, is_up=p.up,
                                   extra=extra(p)) for p in ports]

    # --- match tables
    def bm_mt_add_entry(self, cxt_id: int, table_name: str, match_key: list[Any],
                        action_name: str, action_data: list[bytes], options: Any) -> int:
        def add(control: SwitchControl) -> int:
            table = control.table_info(table_name)
            return control.table_add(table.name, keys_of(table, match_key), action_name,
                                     [to_int(d) for d in action_data], priority(table, options))
        return self._run(add, self._table_error())

    def bm_mt_modify_entry(self, cxt_id: int, table_name: str, entry_handle: int,
                           action_name: str, action_data: list[bytes]) -> None:
        self._run(lambda c: c.table_modify(table_name, entry_handle, action_name,
                                           [to_int(d) for d in action_data]),
                  self._table_error(std.TableOperationErrorCode.INVALID_HANDLE))

    def bm_mt_delete_entry(self, cxt_id: int, table_name: str, entry_handle: int) -> None:
        self._run(lambda c: c.table_delete(table_name, entry_handle),
                  self._table_error(std.TableOperationErrorCode.INVALID_HANDLE))

    def bm_mt_clear_entries(self, cxt_id: int, table_name: str, reset_default: bool) -> None:
        self._run(lambda c: c.table_clear(table_name), self._table_error())

    def bm_mt_set_default_action(self, cxt_id: int, table_name: str, action_name: str,
                                 action_data: list[bytes]) -> None:
        self._run(lambda c: c.table_set_default(table_name, action_name,
                                                [to_int(d) for d in action_data]),
                  self._table_error())

    def bm_mt_reset_default_entry(self, cxt_id: int, table_name: str) -> None:
        def reset(control: Any) -> None:
            if not hasattr(control, "table_reset_default"):
                raise P4Error("this switch cannot reset a default action")
            control.table_reset_default(control.table_info(table_name).name)
        self._run(reset, self._table_error())

    def bm_mt_get_entries(self, cxt_id: int, table_name: str) -> list[Any]:
        def entries(control: SwitchControl) -> list[Any]:
            table = control.table_info(table_name)
            return [_entry(control, table, e) for e in control.table_entries(table.name)]
        return self._run(entries, self._table_error(
            std.TableOperationErrorCode.INVALID_TABLE_NAME))

    def bm_mt_get_entry(self, cxt_id: int, table_name: str, entry_handle: int) -> Any:
        def entry(control: SwitchControl) -> Any:
            table = control.table_info(table_name)
            return _entry(control, table, control.table_entry(table.name, entry_handle))
        return self._run(entry, self._table_error(std.TableOperationErrorCode.INVALID_HANDLE))

    def bm_mt_set_entry_ttl(self, cxt_id: int, table_name: str, entry_handle: int,
                            timeout_ms: int) -> None:
        """``table_set_timeout``: the entry's idle timeout, a P4Runtime MODIFY."""
        def ttl(control: Any) -> None:
            if not hasattr(control, "table_set_timeout"):
                raise P4Error("this switch keeps no idle timeouts")
            control.table_set_timeout(control.table_info(table_name).name, entry_handle,
                                      timeout_ms)

        def error(err: Exception) -> Exception:
            codes = std.TableOperationErrorCode
            text = str(getattr(err, "message", err))
            return std.InvalidTableOperation(
                codes.AGEING_DISABLED if "support idle timeouts" in text
                else codes.INVALID_HANDLE if "no entry with handle" in text else codes.ERROR)
        self._run(ttl, error)

    def bm_mt_get_entry_from_key(self, cxt_id: int, table_name: str, match_key: list[Any],
                                 options: Any) -> Any:
        def entry(control: SwitchControl) -> Any:
            table = control.table_info(table_name)
            wanted = params_of(table, keys_of(table, match_key))
            prio = priority(table, options)
            for e in control.table_entries(table.name):
                if params_of(table, e.keys) == wanted and (prio is None or e.priority == prio):
                    return entry_of(table, e)
            raise P4Error(f"table {table.name}: no entry has this key")
        return self._run(entry, self._table_error(std.TableOperationErrorCode.BAD_MATCH_KEY))

    def bm_mt_get_num_entries(self, cxt_id: int, table_name: str) -> int:
        return self._run(lambda c: len(c.table_entries(table_name)), self._table_error(
            std.TableOperationErrorCode.INVALID_TABLE_NAME))

    def bm_mt_get_default_entry(self, cxt_id: int, table_name: str) -> Any:
        def default(control: SwitchControl) -> Any:
            state = control.table_state(table_name)  # type: ignore[attr-defined]
            action = state.default_action
            if action is None or indirect_table(control, table_name):
                return std.BmActionEntry(action_type=std.BmActionEntryType.NONE)
            return std.BmActionEntry(
                action_type=std.BmActionEntryType.ACTION_DATA, action_name=action.name,
                action_data=[data_bytes(v) for v in state.default_cp_args])
        return self._run(default, self._table_error(
            std.TableOperationErrorCode.INVALID_TABLE_NAME))

    def bm_mt_read_counter(self, cxt_id: int, table_name: str, entry_handle: int) -> Any:
        def read(control: SwitchControl) -> Any:
            e = control.table_entry(table_name, entry_handle)
            return std.BmCounterValue(bytes=e.bytes, packets=e.packets)
        return self._run(read, self._table_error(std.TableOperationErrorCode.INVALID_HANDLE))

    def bm_mt_write_counter(self, cxt_id: int, table_name: str, entry_handle: int,
                            value: Any) -> None:
        self._run(lambda c: c.counter_write(self._direct_counter(c, table_name), entry_handle,
                                            value.packets, value.bytes),
                  self._table_error(std.TableOperationErrorCode.INVALID_HANDLE))

    def bm_mt_reset_counters(self, cxt_id: int, table_name: str) -> None:
        self._run(lambda c: c.counter_reset(self._direct_counter(c, table_name)),
                  self._table_error(std.TableOperationErrorCode.COUNTERS_DISABLED))

    def _direct_counter(self, control: SwitchControl, table_name: str) -> str:
        return self._direct(control, table_name, "direct_counters", "counter")

    def _direct(self, control: SwitchControl, table_name: str, kind: str, what: str) -> str:
        """The name of a table's direct counter or meter (P4Info's ``direct_table_id``)."""
        table = control.table_info(table_name).name
        info = self._p4info()
        ids = {t.preamble.name: t.preamble.id for t in info.tables} if info else {}
        for resource in getattr(info, kind) if info else ():
            if resource.direct_table_id == ids.get(table):
                return str(resource.preamble.name)
        raise P4Error(f"table {table} has no direct {what}")

    def _p4info(self) -> Any:
        config = self._config()
        return config.p4info if config is not None else None

    def _size(self, kind: str, name: str) -> int:
        """The number of cells of a register or meter array, from the P4Info."""
        info = self._p4info()
        for item in getattr(info, kind) if info else ():
            if name in (item.preamble.name, item.preamble.alias):
                return int(item.size)
        raise P4Error(f"no {kind[:-1]} named '{name}'")

    def bm_mt_set_meter_rates(self, cxt_id: int, table_name: str, entry_handle: int,
                              rates: list[Any]) -> None:
        """``meter_set_rates`` of a direct meter: the cell of the entry ``entry_handle``."""
        given = [(r.units_per_micros, r.burst_size) for r in rates]
        self._run(lambda c: c.meter_set_rates(  # type: ignore[attr-defined]
            self._direct(c, table_name, "direct_meters", "meter"), entry_handle, given),
            self._table_error(std.TableOperationErrorCode.INVALID_HANDLE))

    def bm_mt_get_meter_rates(self, cxt_id: int, table_name: str,
                              entry_handle: int) -> list[Any]:
        return self._run(lambda c: _rates(c.meter_get_rates(  # type: ignore[attr-defined]
            self._direct(c, table_name, "direct_meters", "meter"), entry_handle)),
            self._table_error(std.TableOperationErrorCode.INVALID_HANDLE))

    # --- counters and registers
    def _counter_error(self) -> Callable[[Exception], Exception]:
        return lambda err: std.InvalidCounterOperation(
            index_code(err, std.CounterOperationErrorCode))

    def bm_counter_read(self, cxt_id: int, counter_name: str, index: int) -> Any:
        def read(control: SwitchControl) -> Any:
            packets, bytes_ = control.counter_read(counter_name, index)
            return std.BmCounterValue(bytes=bytes_, packets=packets)
        return self._run(read, self._counter_error())

    def bm_counter_write(self, cxt_id: int, counter_name: str, index: int, value: Any) -> None:
        self._run(lambda c: c.counter_write(counter_name, index, value.packets, value.bytes),
                  self._counter_error())

    def bm_counter_reset_all(self, cxt_id: int, counter_name: str) -> None:
        self._run(lambda c: c.counter_reset(counter_name), self._counter_error())

    def _meter_error(self) -> Callable[[Exception], Exception]:
        return lambda err: std.InvalidMeterOperation(
            index_code(err, std.MeterOperationErrorCode))

    def bm_meter_set_rates(self, cxt_id: int, meter_array_name: str, index: int,
                           rates: list[Any]) -> None:
        """``meter_set_rates``: (units per µs, burst) for committed then peak."""
        given = [(r.units_per_micros, r.burst_size) for r in rates]
        self._run(lambda c: c.meter_set_rates(  # type: ignore[attr-defined]
            meter_array_name, index, given), self._meter_error())

    def bm_meter_array_set_rates(self, cxt_id: int, meter_array_name: str,
                                 rates: list[Any]) -> None:
        given = [(r.units_per_micros, r.burst_size) for r in rates]
        self._run(lambda c: c.meter_array_set_rates(  # type: ignore[attr-defined]
            meter_array_name, given), self._meter_error())

    def bm_meter_get_rates(self, cxt_id: int, meter_array_name: str,
                           index: int) -> list[Any]:
        """``meter_get_rates``: committed then peak; none for a cell never configured."""
        return self._run(lambda c: _rates(c.meter_get_rates(  # type: ignore[attr-defined]
            meter_array_name, index)), self._meter_error())

    def _register_error(self) -> Callable[[Exception], Exception]:
        return lambda err: std.InvalidRegisterOperation(
            index_code(err, std.RegisterOperationErrorCode))

    def bm_register_read(self, cxt_id: int, register_name: str, idx: int) -> int:
        return self._run(lambda c: c.register_read(register_name, idx), self._register_error())

    def bm_register_write(self, cxt_id: int, register_name: str, index: int,
                          value: int) -> None:
        self._run(lambda c: c.register_write(register_name, index, value),
                  self._register_error())

    def bm_register_reset(self, cxt_id: int, register_name: str) -> None:
        self._run(lambda c: c.register_reset(register_name), self._register_error())

    def bm_register_read_all(self, cxt_id: int, register_name: str) -> list[int]:
        """Every cell, in index order (``register_read`` without an index)."""
        def read(control: SwitchControl) -> list[int]:
            size = self._size("registers", register_name)
            return [control.register_read(register_name, i) for i in range(size)]
        return self._run(read, self._register_error())

    def bm_register_write_range(self, cxt_id: int, register_name: str, start_index: int,
                                end_index: int, value: int) -> None:
        """Cells ``start_index`` up to, not including, ``end_index`` (BMv2's range)."""
        def write(control: SwitchControl) -> None:
            if end_index > self._size("registers", register_name) or start_index > end_index:
                raise P4Error(f"register {register_name}: index range "
                              f"[{start_index}, {end_index}) out of range")
            for i in range(start_index, end_index):
                control.register_write(register_name, i, value)
        self._run(write, self._register_error())

    # --- parser value sets
    def _vset_error(self) -> Callable[[Exception], Exception]:
        def error(err: Exception) -> Exception:
            unknown = "is not a parser value set" in str(getattr(err, "message", err))
            codes = std.ParseVSetOperationErrorCode
            return std.InvalidParseVSetOperation(
                codes.INVALID_PARSE_VSET_NAME if unknown else codes.ERROR)
        return error

    def _vset(self, name: str, change: Callable[[list[int]], list[int]]) -> list[int]:
        """The set's members after ``change`` (written as one MODIFY where it changed)."""
        def run(control: Any) -> list[int]:
            if not hasattr(control, "value_set_members"):
                raise P4Error("this switch's value sets are P4Runtime's only")
            members = control.value_set_members(name)
            changed = change(members)
            if changed != members:
                control.value_set_write(name, changed)
            return changed
        return self._run(run, self._vset_error())

    def bm_parse_vset_add(self, cxt_id: int, parse_vset_name: str, value: bytes) -> None:
        """Add a value (already there: no change, as on BMv2)."""
        number = to_int(value)
        self._vset(parse_vset_name, lambda m: m if number in m else [*m, number])
        self._vset_bytes[(parse_vset_name, number)] = value

    def bm_parse_vset_remove(self, cxt_id: int, parse_vset_name: str, value: bytes) -> None:
        number = to_int(value)
        self._vset(parse_vset_name, lambda m: [v for v in m if v != number])
        self._vset_bytes.pop((parse_vset_name, number), None)

    def bm_parse_vset_get(self, cxt_id: int, parse_vset_name: str) -> list[bytes]:
        """The values, each in the bytes it was added with (BMv2 keeps what it was given),
        or in its field widths' bytes when P4Runtime wrote it."""
        width = self._vset_width(parse_vset_name)
        return [self._vset_bytes.get((parse_vset_name, v), v.to_bytes(width, "big"))
                for v in self._vset(parse_vset_name, lambda m: m)]

    def bm_parse_vset_clear(self, cxt_id: int, parse_vset_name: str) -> None:
        self._vset(parse_vset_name, lambda m: [])
        for key in [k for k in self._vset_bytes if k[0] == parse_vset_name]:
            del self._vset_bytes[key]

    def _vset_width(self, name: str) -> int:
        info = self._p4info()
        for vs in info.value_sets if info else ():
            if name in (vs.preamble.name, vs.preamble.alias):
                return max((sum(f.bitwidth for f in vs.match) + 7) // 8, 1)
        return 1

    # --- the whole state
    def bm_reset_state(self) -> None:
        """``reset_state``: run-time entries, members, groups, meter rates, counters,
        registers and multicast groups go; the program stays."""
        def reset(control: Any) -> None:
            if not hasattr(control, "reset_state"):
                raise P4Error("this switch cannot reset its state")
            control.reset_state()
        self._run(reset, lambda err: TApplicationException(
            TApplicationException.INTERNAL_ERROR, f"reset_state: {err}"))

    # --- names
    def bm_get_id_from_name(self, cxt_id: int, resource_type: int, resource_name: str) -> int:
        """The id the program's BMv2 JSON gives a table, action profile, counter, meter,
        register or learn list of that name."""
        found = resource_id(self.bm_get_config(), resource_type, resource_name)
        if found is None:
            code = (std.IdLookupErrorCode.INVALID_RESOURCE_TYPE
                    if resource_type not in _JSON_LISTS
                    else std.IdLookupErrorCode.INVALID_RESOURCE_NAME)
            raise std.InvalidIdLookup(code)
        return found


R = std.BmResourceType
# resource type → where its objects are in a BMv2 JSON (in each pipeline, or at the top)
_JSON_LISTS = {R.MATCH_TABLE: ("pipelines", "tables"),
               R.ACTION_PROFILE: ("pipelines", "action_profiles"),
               R.COUNTER: (None, "counter_arrays"), R.METER: (None, "meter_arrays"),
               R.REGISTER: (None, "register_arrays"), R.LEARNING_LIST: (None, "learn_lists")}


def resource_id(config: str, resource_type: int, name: str) -> int | None:
    """The id of the object ``name`` of ``resource_type`` in a BMv2 JSON, else None."""
    where = _JSON_LISTS.get(resource_type)
    if where is None or not config:
        return None
    doc = json.loads(config)
    outer, key = where
    holders = doc.get(outer, []) if outer else [doc]
    for holder in holders:
        for item in holder.get(key, []):
            if item.get("name") == name:
                return int(item["id"])
    return None


def _entry(control: Any, table: Any, e: Any) -> Any:
    """An entry as BMv2 gives it: its action, member or group, and its life."""
    entry = entry_of(table, e, _life(control, table.name, e.handle))
    pointed = indirect_action(control, table.name, e.handle)
    if pointed is not None:
        entry.action_entry = pointed
    return entry


def _life(control: Any, table: str, handle: int) -> tuple[int, int] | None:
    life = getattr(control, "table_entry_life", None)
    return life(table, handle) if life is not None else None


def _rates(rates: list[tuple[float, int]]) -> list[Any]:
    return [std.BmMeterRateConfig(units_per_micros=r, burst_size=b) for r, b in rates]


def handlers(channel: RuntimeChannel, tm: TrafficManager | None,
             config: Callable[[], p4runtime_pb2.ForwardingPipelineConfig | None],
             device_id: int = 0, thrift_port: int = 0) -> dict[str, Any]:
    """Service name → handler, for :func:`softswitch.daemon.thrift.services.processor`."""
    return {"standard": StandardHandler(channel, config, device_id, thrift_port),
            "simple_pre_lag": PreLagHandler(channel),
            "simple_switch": SimpleSwitchHandler(channel, tm)}
