"""What the three services' handlers share: running a call, and refusing one.

A call runs through :meth:`RuntimeChannel.call` (on the port loop, under the device
lock); a refusal is logged with its reason and answered with BMv2's exception for the
call's family. A method softswitch does not implement answers the exception its IDL
declares (found in the generated module's ``<method>_result``), so ``simple_switch_CLI``
prints it and goes on, or Thrift's ``UNKNOWN_METHOD`` where it declares none.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from thrift.Thrift import TApplicationException

from softswitch.core.control import SwitchControl
from softswitch.daemon.cli_channel.commands import RuntimeChannel
from softswitch.diagnostics import P4Error

log = logging.getLogger("softswitch.thrift")
T = TypeVar("T")


class Service:
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
            declared = declared_exception(self.service, name)
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


def declared_exception(service: Any, method: str) -> Exception | None:
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


def index_code(err: Exception, codes: Any) -> int:
    """``INVALID_INDEX`` of a counter, meter or register family where the switch refused
    an index (its words: "index N out of range", "has no cell N"), else ``ERROR``."""
    text = str(getattr(err, "message", err))
    return codes.INVALID_INDEX if "out of range" in text or "has no cell" in text \
        else codes.ERROR
