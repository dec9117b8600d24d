"""Meter configuration (indirect ``MeterEntry``, direct ``DirectMeterEntry`` and the
``meter_config`` of table entries).

P4Runtime gives rates per second and bursts in the meter's unit; the v1model target,
like BMv2, takes a committed and a peak (rate per microsecond, burst) pair. The server
remembers each cell's configuration so that Read returns what was written (BMv2's
PI does the same through its target). The switch's optional ``meter_set_rates`` /
``meter_reset_rates`` methods do the work; a switch without them answers UNIMPLEMENTED.
"""

from __future__ import annotations

import grpc
from p4.v1 import p4runtime_pb2

from softswitch.core.control import SwitchControl
from softswitch.p4runtime import errors
from softswitch.p4runtime.undo import UndoLog

MeterConfig = p4runtime_pb2.MeterConfig
# PI's limit of a burst (its target takes 32-bit bursts): larger is UNIMPLEMENTED.
_MAX_BURST = (1 << 32) - 1


class MeterDriver:
    """Configures meter cells of one switch and remembers their configuration."""

    def __init__(self, switch: SwitchControl) -> None:
        self.switch = switch
        self._configs: dict[tuple[str, int], MeterConfig] = {}

    @staticmethod
    def check_config(config: MeterConfig, refused: str = "Error when writing meter spec"
                     ) -> None:
        """PI's checks of a meter config; ``refused``: the words of a committed rate
        above the peak rate, which BMv2 refuses (UNKNOWN, as PI reports its target's
        refusals) in the message of the write that carried it."""
        for value, name in ((config.cir, "CIR"), (config.cburst, "CBurst"),
                            (config.pir, "PIR"), (config.pburst, "PBurst")):
            if value < 0:
                raise errors.invalid(f"Negative meter {name}")
        for value, name in ((config.cburst, "CBurst"), (config.pburst, "Pburst")):
            if value > _MAX_BURST:
                raise errors.unimplemented(f"{name} too large")
        if config.cir > config.pir:
            raise errors.P4RuntimeError(grpc.StatusCode.UNKNOWN, refused)

    def configure(self, name: str, index: int, config: MeterConfig | None, log: UndoLog,
                  direct: bool = False) -> None:
        """Set (or with None reset) one cell; the previous state is pushed to ``log``."""
        key = (name, index)
        previous = self._configs.get(key)
        self._apply(name, index, config, "Error when writing direct meter spec" if direct
                    else "Error when writing meter spec")
        if config is None:
            self._configs.pop(key, None)
        else:
            self._configs[key] = config

        def undo() -> None:
            self._apply(name, index, previous)
            if previous is None:
                self._configs.pop(key, None)
            else:
                self._configs[key] = previous
        log.push(undo)

    def config(self, name: str, index: int) -> MeterConfig | None:
        return self._configs.get((name, index))

    def _apply(self, name: str, index: int, config: MeterConfig | None,
               refused: str = "Error when writing meter spec") -> None:
        if config is None:
            reset = getattr(self.switch, "meter_reset_rates", None)
            if reset is None:
                raise errors.unimplemented("this switch cannot reset meters")
            reset(name, index)
            return
        self.check_config(config, refused)
        set_rates = getattr(self.switch, "meter_set_rates", None)
        if set_rates is None:
            raise errors.unimplemented("this switch cannot configure meters")
        set_rates(name, index, [(config.cir / 1e6, config.cburst),
                                (config.pir / 1e6, config.pburst)])
