"""The ``simple_pre_lag`` and ``simple_switch`` services: multicast groups and nodes,
mirroring sessions, egress queue rates and depths, the switch's clock.

Multicast and mirroring need ``--runtime-writes`` (their state is P4Runtime's
otherwise). A multicast group's handle is its id; a node's L2 handle is its own handle,
there being no LAGs. Port maps arrive as strings of ``0``/``1`` with port 0 last.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from bm_runtime.simple_pre_lag import SimplePreLAG
from bm_runtime.simple_pre_lag import ttypes as pre
from sswitch_runtime import SimpleSwitch
from sswitch_runtime import ttypes as ss

from softswitch.daemon.cli_channel.commands import RuntimeChannel
from softswitch.daemon.thrift.base import Service, log
from softswitch.diagnostics import P4Error
from softswitch.tm import TrafficManager


class PreLagHandler(Service):
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
        return self._run(lambda c: c.mc_node_create(rid, _ports(port_map, lag_map)),
                         self._error())

    def bm_mc_node_update(self, cxt_id: int, l1_handle: int, port_map: str,
                          lag_map: str) -> None:
        self._run(lambda c: c.mc_node_update(l1_handle, _ports(port_map, lag_map)),
                  self._error())

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


class SimpleSwitchHandler(Service):
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

    def mirroring_mapping_get_egress_port(self, mirror_id: int) -> int:
        """A session's port; -1 where there is no such session or it sends to a group."""
        def get(control: Any) -> int:
            kind, target = control.mirror.get(mirror_id, ("none", -1))
            return int(target) if kind == "port" else -1
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


def _ports(port_map: str, lag_map: str) -> list[int]:
    """The ports of a port map (a string of ``0``/``1``, port 0 last); a node with LAGs
    is refused, softswitch having none."""
    if "1" in lag_map:
        raise P4Error("softswitch has no LAGs: a multicast node takes ports only")
    return [i for i, bit in enumerate(reversed(port_map)) if bit == "1"]
