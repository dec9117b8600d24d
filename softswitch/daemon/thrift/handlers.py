"""The handlers of BMv2's runtime services, on softswitch's switch control.

Each call runs through :meth:`RuntimeChannel.call` (on the port loop, under the device
lock), on the same :class:`~softswitch.core.control.SwitchControl` the line protocol
uses: table writes are P4Runtime writes (:mod:`softswitch.daemon.cli_channel.control`),
multicast and mirroring need ``--runtime-writes`` as there. Values arrive as BMv2 sends
them: big-endian byte strings, BMv2 priorities (lower wins), port maps as strings of
``0``/``1`` with port 0 last. A refusal is BMv2's exception for the call's family with
the code closest to its reason (``ERROR`` where none fits); the reason is logged.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from bm_runtime.simple_pre_lag import SimplePreLAG
from bm_runtime.simple_pre_lag import ttypes as pre
from bm_runtime.standard import Standard
from bm_runtime.standard import ttypes as std
from p4.v1 import p4runtime_pb2
from sswitch_runtime import SimpleSwitch
from sswitch_runtime import ttypes as ss
from thrift.Thrift import TApplicationException

from softswitch.core.control import (
    BMV2_PRIORITY_BASE,
    EntryView,
    KeyInfo,
    KeyMatch,
    SwitchControl,
    TableInfo,
    bmv2_match_type,
    from_bmv2_priority,
)
from softswitch.daemon.cli_channel.commands import RuntimeChannel
from softswitch.daemon.cli_channel.control import Refused
from softswitch.daemon.thrift.config_json import config_json
from softswitch.diagnostics import P4Error
from softswitch.tm import TrafficManager

log = logging.getLogger("softswitch.thrift")
T = TypeVar("T")
P = std.BmMatchParamType
_REFUSAL_CODES = {"ALREADY_EXISTS": std.TableOperationErrorCode.DUPLICATE_ENTRY,
                  "RESOURCE_EXHAUSTED": std.TableOperationErrorCode.TABLE_FULL,
                  "NOT_FOUND": std.TableOperationErrorCode.INVALID_HANDLE}


def _int(data: bytes) -> int:
    return int.from_bytes(data, "big")


def _bytes(value: int, width: int) -> bytes:
    """A key field's value as BMv2 gives it: all the field's bytes."""
    return value.to_bytes(max((width + 7) // 8, 1), "big")


def _data(value: int) -> bytes:
    """An action parameter as BMv2 gives it back: its bytes less the leading zero ones."""
    return value.to_bytes(max((value.bit_length() + 7) // 8, 1), "big")


class _Service:
    """Runs calls on the channel. A method softswitch does not implement raises the
    exception the IDL declares for it (``simple_switch_CLI`` prints it and goes on
    with the next command, as after any refusal), with the code ``ERROR`` where its
    family has one; a method that declares none gets Thrift's ``UNKNOWN_METHOD``. Either
    way the reason is logged."""

    service: Any = None           # the generated module of the service (its *_result)

    def __init__(self, channel: RuntimeChannel) -> None:
        self._channel = channel

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)

        def unknown(*args: Any, **kwargs: Any) -> Any:
            log.warning("Thrift call refused: softswitch does not implement %s", name)
            declared = _declared_exception(self.service, name)
            if declared is not None:
                raise declared
            raise TApplicationException(TApplicationException.UNKNOWN_METHOD,
                                        f"softswitch does not implement {name}")
        return unknown

    def _run(self, fn: Callable[[SwitchControl], T],
             refused: Callable[[Exception], Exception]) -> T:
        """``fn`` on the channel; a refusal raises ``refused(the error)``."""
        try:
            return self._channel.call(fn)
        except (P4Error, ValueError, KeyError) as err:
            log.warning("Thrift call refused: %s", getattr(err, "message", err))
            raise refused(err) from None


def _declared_exception(service: Any, method: str) -> Exception | None:
    """The exception ``method``'s result declares (``ouch``), with its family's ``ERROR``
    code (else its first code); None where it declares none."""
    result = getattr(service, f"{method}_result", None)
    for field in getattr(result, "thrift_spec", None) or ():
        if field is not None and field[0] == 1 and isinstance(field[3], list):
            cls = field[3][0]
            ttypes = sys.modules[cls.__module__]
            stem = cls.__name__.removeprefix("Invalid").removesuffix("Operation")
            codes = getattr(ttypes, stem + "OperationErrorCode",
                            getattr(ttypes, stem + "ErrorCode", None))
            code = getattr(codes, "ERROR", None)
            if code is None and codes is not None:
                code = min(codes._VALUES_TO_NAMES)
            return cls(code)
    return None


class StandardHandler(_Service):
    """The ``standard`` service: tables, counters, registers, the program's JSON."""

    service = Standard

    def __init__(self, channel: RuntimeChannel,
                 config: Callable[[], p4runtime_pb2.ForwardingPipelineConfig | None],
                 device_id: int = 0, thrift_port: int = 0) -> None:
        super().__init__(channel)
        self._config = config
        self._device_id, self._thrift_port = device_id, thrift_port

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
            return control.table_add(table.name, _keys(table, match_key), action_name,
                                     [_int(d) for d in action_data], _priority(table, options))
        return self._run(add, self._table_error())

    def bm_mt_modify_entry(self, cxt_id: int, table_name: str, entry_handle: int,
                           action_name: str, action_data: list[bytes]) -> None:
        self._run(lambda c: c.table_modify(table_name, entry_handle, action_name,
                                           [_int(d) for d in action_data]),
                  self._table_error(std.TableOperationErrorCode.INVALID_HANDLE))

    def bm_mt_delete_entry(self, cxt_id: int, table_name: str, entry_handle: int) -> None:
        self._run(lambda c: c.table_delete(table_name, entry_handle),
                  self._table_error(std.TableOperationErrorCode.INVALID_HANDLE))

    def bm_mt_clear_entries(self, cxt_id: int, table_name: str, reset_default: bool) -> None:
        self._run(lambda c: c.table_clear(table_name), self._table_error())

    def bm_mt_set_default_action(self, cxt_id: int, table_name: str, action_name: str,
                                 action_data: list[bytes]) -> None:
        self._run(lambda c: c.table_set_default(table_name, action_name,
                                                [_int(d) for d in action_data]),
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
            return [_entry(table, e) for e in control.table_entries(table.name)]
        return self._run(entries, self._table_error(
            std.TableOperationErrorCode.INVALID_TABLE_NAME))

    def bm_mt_get_entry(self, cxt_id: int, table_name: str, entry_handle: int) -> Any:
        def entry(control: SwitchControl) -> Any:
            table = control.table_info(table_name)
            return _entry(table, control.table_entry(table.name, entry_handle))
        return self._run(entry, self._table_error(std.TableOperationErrorCode.INVALID_HANDLE))

    def bm_mt_get_entry_from_key(self, cxt_id: int, table_name: str, match_key: list[Any],
                                 options: Any) -> Any:
        def entry(control: SwitchControl) -> Any:
            table = control.table_info(table_name)
            wanted = _params(table, _keys(table, match_key))
            prio = _priority(table, options)
            for e in control.table_entries(table.name):
                if _params(table, e.keys) == wanted and (prio is None or e.priority == prio):
                    return _entry(table, e)
            raise P4Error(f"table {table.name}: no entry has this key")
        return self._run(entry, self._table_error(std.TableOperationErrorCode.BAD_MATCH_KEY))

    def bm_mt_get_num_entries(self, cxt_id: int, table_name: str) -> int:
        return self._run(lambda c: len(c.table_entries(table_name)), self._table_error(
            std.TableOperationErrorCode.INVALID_TABLE_NAME))

    def bm_mt_get_default_entry(self, cxt_id: int, table_name: str) -> Any:
        def default(control: SwitchControl) -> Any:
            state = control.table_state(table_name)  # type: ignore[attr-defined]
            action = state.default_action
            if action is None:
                return std.BmActionEntry(action_type=std.BmActionEntryType.NONE)
            return std.BmActionEntry(
                action_type=std.BmActionEntryType.ACTION_DATA, action_name=action.name,
                action_data=[_data(v) for v in state.default_cp_args])
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
        """The name of the direct counter of a table (P4Info's ``direct_table_id``)."""
        table = control.table_info(table_name).name
        config = self._config()
        info = config.p4info if config is not None else None
        ids = {t.preamble.name: t.preamble.id for t in info.tables} if info else {}
        for counter in info.direct_counters if info else ():
            if counter.direct_table_id == ids.get(table):
                return str(counter.preamble.name)
        raise P4Error(f"table {table} has no direct counter")

    # --- counters and registers
    def _counter_error(self) -> Callable[[Exception], Exception]:
        return lambda err: std.InvalidCounterOperation(
            _index_code(err, std.CounterOperationErrorCode))

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
            _index_code(err, std.MeterOperationErrorCode))

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

    def _register_error(self) -> Callable[[Exception], Exception]:
        return lambda err: std.InvalidRegisterOperation(
            _index_code(err, std.RegisterOperationErrorCode))

    def bm_register_read(self, cxt_id: int, register_name: str, idx: int) -> int:
        return self._run(lambda c: c.register_read(register_name, idx), self._register_error())

    def bm_register_write(self, cxt_id: int, register_name: str, index: int,
                          value: int) -> None:
        self._run(lambda c: c.register_write(register_name, index, value),
                  self._register_error())

    def bm_register_reset(self, cxt_id: int, register_name: str) -> None:
        self._run(lambda c: c.register_reset(register_name), self._register_error())


def _index_code(err: Exception, codes: Any) -> int:
    """``INVALID_INDEX`` of a counter, meter or register family where the switch refused
    an index (its words: "index N out of range", "has no cell N"), else ``ERROR``."""
    text = str(getattr(err, "message", err))
    return codes.INVALID_INDEX if "out of range" in text or "has no cell" in text \
        else codes.ERROR


def _priority(table: TableInfo, options: Any) -> int | None:
    """The SwitchControl priority of BMv2 entry options; None for a table whose entries
    have none (BMv2 ignores the priority the CLI sends for those: 0)."""
    prio = getattr(options, "priority", None)
    if prio is None or prio < 0 or bmv2_match_type(table) not in ("ternary", "range"):
        return None
    return from_bmv2_priority(prio)


def _keys(table: TableInfo, params: list[Any]) -> list[KeyMatch]:
    """A table's key from BMv2 match parameters, in key order."""
    if len(params) != len(table.keys):
        raise P4Error(f"table {table.name} has {len(table.keys)} key field(s), "
                      f"{len(params)} given")
    return [_key(k, p) for k, p in zip(table.keys, params, strict=True)]


def _key(key: KeyInfo, p: Any) -> KeyMatch:
    if p.type == P.EXACT:
        return KeyMatch(key.name, key.match_kind, _int(p.exact.key))
    if p.type == P.LPM:
        return KeyMatch(key.name, "lpm", _int(p.lpm.key), prefix_len=p.lpm.prefix_length)
    if p.type == P.TERNARY:
        value, mask = _int(p.ternary.key), _int(p.ternary.mask)
        if key.match_kind == "optional":
            return KeyMatch(key.name, "optional", value, wildcard=mask == 0)
        return KeyMatch(key.name, "ternary", value, mask=mask)
    if p.type == P.RANGE:
        return KeyMatch(key.name, "range", _int(p.range.start), high=_int(p.range.end_))
    raise P4Error(f"key {key.name}: match parameter type {p.type} is not supported")


def _params(table: TableInfo, keys: list[KeyMatch]) -> list[Any]:
    """A key as BMv2 gives it back (what two keys are compared on)."""
    return [_param(k, m) for k, m in zip(table.keys, keys, strict=True)]


def _param(key: KeyInfo, k: KeyMatch) -> Any:
    w = key.width
    if k.kind == "lpm":
        return std.BmMatchParam(type=P.LPM, lpm=std.BmMatchParamLPM(
            _bytes(k.value, w), k.prefix_len or 0))
    if k.kind == "ternary":
        return std.BmMatchParam(type=P.TERNARY, ternary=std.BmMatchParamTernary(
            _bytes(k.value, w), _bytes(k.mask or 0, w)))
    if k.kind == "optional":
        mask = 0 if k.wildcard else (1 << w) - 1
        return std.BmMatchParam(type=P.TERNARY, ternary=std.BmMatchParamTernary(
            _bytes(k.value, w), _bytes(mask, w)))
    if k.kind == "range":
        return std.BmMatchParam(type=P.RANGE, range=std.BmMatchParamRange(
            _bytes(k.value, w), _bytes(k.high or 0, w)))
    return std.BmMatchParam(type=P.EXACT, exact=std.BmMatchParamExact(_bytes(k.value, w)))


def _entry(table: TableInfo, e: EntryView) -> Any:
    data = [_data(v) for v in e.args]
    return std.BmMtEntry(
        match_key=_params(table, e.keys),
        entry_handle=e.handle,
        options=std.BmAddEntryOptions(
            priority=-1 if e.priority is None else BMV2_PRIORITY_BASE - e.priority),
        action_entry=std.BmActionEntry(action_type=std.BmActionEntryType.ACTION_DATA,
                                       action_name=e.action, action_data=data))


class PreLagHandler(_Service):
    """The ``simple_pre_lag`` service: multicast groups and nodes (group handle = id)."""

    service = SimplePreLAG

    def _error(self) -> Callable[[Exception], Exception]:
        return lambda _err: pre.InvalidMcOperation(pre.McOperationErrorCode.ERROR)

    def bm_mc_mgrp_create(self, cxt_id: int, mgrp: int) -> int:
        self._run(lambda c: c.mc_mgrp_create(mgrp), self._error())
        return mgrp

    def bm_mc_mgrp_destroy(self, cxt_id: int, mgrp_handle: int) -> None:
        self._run(lambda c: c.mc_mgrp_destroy(mgrp_handle), self._error())

    def bm_mc_node_create(self, cxt_id: int, rid: int, port_map: str, lag_map: str) -> int:
        ports = [i for i, bit in enumerate(reversed(port_map)) if bit == "1"]
        return self._run(lambda c: c.mc_node_create(rid, ports), self._error())

    def bm_mc_node_associate(self, cxt_id: int, mgrp_handle: int, l1_handle: int) -> None:
        self._run(lambda c: c.mc_node_associate(mgrp_handle, l1_handle), self._error())

    def bm_mc_node_dissociate(self, cxt_id: int, mgrp_handle: int, l1_handle: int) -> None:
        self._run(lambda c: c.mc_node_dissociate(mgrp_handle, l1_handle), self._error())

    def bm_mc_node_destroy(self, cxt_id: int, l1_handle: int) -> None:
        self._run(lambda c: c.mc_node_destroy(l1_handle), self._error())

    def bm_mc_get_entries(self, cxt_id: int) -> str:
        """BMv2's JSON of the groups and nodes (``mc_dump``); a node's L2 handle is its
        own handle, there being no LAGs."""
        def dump(control: Any) -> str:
            groups, nodes = dict(control.mc_groups), dict(control.mc_nodes)
            return json.dumps({
                "mgrps": [{"id": g, "l1_handles": list(n)} for g, n in sorted(groups.items())],
                "l1_handles": [{"handle": h, "rid": rid, "l2_handle": h}
                               for h, (rid, _) in sorted(nodes.items())],
                "l2_handles": [{"handle": h, "ports": sorted(ports), "lags": []}
                               for h, (_, ports) in sorted(nodes.items())],
                "lags": []})
        return self._run(dump, self._error())


class SimpleSwitchHandler(_Service):
    """The ``simple_switch`` service: mirroring sessions, queue rates and depths, time."""

    service = SimpleSwitch

    def __init__(self, channel: RuntimeChannel, tm: TrafficManager | None) -> None:
        super().__init__(channel)
        self._tm = tm
        self._started = time.monotonic()

    def _mirror_error(self) -> Callable[[Exception], Exception]:
        return lambda _err: ss.InvalidMirroringOperation(ss.MirroringOperationErrorCode
                                                    .SESSION_NOT_FOUND)

    def mirroring_session_add(self, mirror_id: int, config: Any) -> int:
        if config.mgid is not None and config.port is None:
            self._run(lambda c: c.mirroring_add_mc(mirror_id, config.mgid), self._mirror_error())
        else:
            self._run(lambda c: c.mirroring_add(mirror_id, config.port or 0),
                      self._mirror_error())
        return 0

    def mirroring_mapping_add(self, mirror_id: int, egress_port: int) -> int:
        return self.mirroring_session_add(mirror_id, ss.MirroringSessionConfig(port=egress_port))

    def mirroring_session_delete(self, mirror_id: int) -> int:
        self._run(lambda c: c.mirroring_delete(mirror_id), self._mirror_error())
        return 0

    def mirroring_mapping_delete(self, mirror_id: int) -> int:
        return self.mirroring_session_delete(mirror_id)

    def mirroring_session_get(self, mirror_id: int) -> Any:
        def get(control: Any) -> Any:
            if mirror_id not in control.mirror:
                raise P4Error(f"no mirroring session {mirror_id}")
            kind, target = control.mirror[mirror_id]
            return ss.MirroringSessionConfig(port=target if kind == "port" else None,
                                             mgid=target if kind == "mc" else None)
        return self._run(get, self._mirror_error())

    def _queues(self, fn: Callable[[TrafficManager], None]) -> int:
        """0, or (a refusal, logged) 1: BMv2 answers these calls with a code, not an
        exception, and simple_switch_CLI prints nothing either way."""
        tm = self._tm
        try:
            if tm is None:
                raise P4Error("this switch has no traffic manager")
            self._channel.call(lambda _control: fn(tm))
        except (P4Error, ValueError) as err:
            log.warning("Thrift call refused: %s", getattr(err, "message", err))
            return 1
        return 0

    def set_egress_queue_depth(self, port_num: int, depth_pkts: int) -> int:
        return self._queues(lambda tm: tm.set_queue_depth(depth_pkts, port=port_num))

    def set_all_egress_queue_depths(self, depth_pkts: int) -> int:
        return self._queues(lambda tm: tm.set_queue_depth(depth_pkts))

    def set_egress_priority_queue_depth(self, port_num: int, priority: int,
                                        depth_pkts: int) -> int:
        return self._queues(lambda tm: tm.set_queue_depth(depth_pkts, port=port_num,
                                                          priority=priority))

    def set_egress_queue_rate(self, port_num: int, rate_pps: int) -> int:
        return self._queues(lambda tm: tm.set_queue_rate(rate_pps, port=port_num))

    def set_all_egress_queue_rates(self, rate_pps: int) -> int:
        return self._queues(lambda tm: tm.set_queue_rate(rate_pps))

    def set_egress_priority_queue_rate(self, port_num: int, priority: int,
                                       rate_pps: int) -> int:
        return self._queues(lambda tm: tm.set_queue_rate(rate_pps, port=port_num,
                                                         priority=priority))

    def get_time_elapsed_us(self) -> int:
        return int((time.monotonic() - self._started) * 1e6)

    def get_time_since_epoch_us(self) -> int:
        return int(time.time() * 1e6)


def handlers(channel: RuntimeChannel, tm: TrafficManager | None,
             config: Callable[[], p4runtime_pb2.ForwardingPipelineConfig | None],
             device_id: int = 0, thrift_port: int = 0) -> dict[str, Any]:
    """Service name → handler, for :func:`softswitch.daemon.thrift.services.processor`."""
    return {"standard": StandardHandler(channel, config, device_id, thrift_port),
            "simple_pre_lag": PreLagHandler(channel),
            "simple_switch": SimpleSwitchHandler(channel, tm)}
