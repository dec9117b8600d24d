"""Stateful v1model externs: counters, registers and meters, with BMv2 semantics.

These are arrays of cells owned by the switch and shared by every packet, so they live
outside the lowered code: the generated closures hold a reference and call the small
methods here. Out-of-range indices behave like BMv2 (a register read yields 0 and a
write or count is ignored) rather than aborting the packet.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from softswitch.core.values import copy_value
from softswitch.diagnostics import P4Error

GREEN, YELLOW, RED = 0, 1, 2


class Clock:
    """Microsecond time for meters and timestamps; tests may freeze and advance it."""

    def __init__(self) -> None:
        self._origin = time.monotonic()
        self._fixed: int | None = None

    def now_us(self) -> int:
        if self._fixed is not None:
            return self._fixed
        return int((time.monotonic() - self._origin) * 1e6)

    def freeze(self, at_us: int = 0) -> None:
        self._fixed = at_us

    def advance(self, us: int) -> None:
        if self._fixed is None:
            self._fixed = self.now_us()
        self._fixed += us


def _check_index(name: str, index: int, size: int) -> None:
    if not 0 <= index < size:
        raise P4Error(f"index {index} out of range for '{name}' (size {size})")


@dataclass
class CounterArray:
    """``counter``: packets and/or bytes per index (``kind`` packets|bytes|packets_and_bytes)."""

    name: str
    size: int
    kind: str = "packets_and_bytes"
    packets: list[int] = field(default_factory=list)
    bytes: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.packets = [0] * self.size
        self.bytes = [0] * self.size

    def count(self, index: int, length: int) -> None:
        if 0 <= index < self.size:
            self.packets[index] += 1
            self.bytes[index] += length

    def read(self, index: int) -> tuple[int, int]:
        _check_index(self.name, index, self.size)
        return self.packets[index], self.bytes[index]

    def write(self, index: int, packets: int, bytes_: int) -> None:
        _check_index(self.name, index, self.size)
        self.packets[index] = packets
        self.bytes[index] = bytes_


@dataclass
class RegisterArray:
    """``register<T>``: ``size`` cells of ``width`` bits (signed for ``int<W>``)."""

    name: str
    size: int
    width: int
    signed: bool = False
    default: Any = 0
    cells: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.cells = [copy_value(self.default) for _ in range(self.size)]

    def read(self, index: int) -> Any:
        if 0 <= index < self.size:
            return copy_value(self.cells[index])
        return copy_value(self.default)

    def write(self, index: int, value: Any) -> None:
        if 0 <= index < self.size:
            self.cells[index] = self._fit(value)

    def _fit(self, value: Any) -> Any:
        if not self.width:
            return copy_value(value)
        value &= (1 << self.width) - 1
        if self.signed and value >> (self.width - 1):
            value -= 1 << self.width
        return value

    def cp_read(self, index: int) -> int:
        _check_index(self.name, index, self.size)
        return self.cells[index]

    def cp_write(self, index: int, value: int) -> None:
        _check_index(self.name, index, self.size)
        self.cells[index] = self._fit(value)


@dataclass
class MeterRate:
    info_rate: float       # tokens per microsecond
    burst_size: int
    tokens: float = 0
    tokens_last: int = 0


class Meter:
    """One two-rate three-colour meter cell, computed like BMv2's ``Meter::execute``.

    Unconfigured meters colour every packet GREEN. Rates are (CIR, PIR) in tokens per
    microsecond; exceeding the first gives YELLOW, the second RED.
    """

    __slots__ = ("rates", "clock", "origin", "by_packets")

    def __init__(self, clock: Clock, by_packets: bool) -> None:
        self.rates: list[MeterRate] = []
        self.clock = clock
        self.origin = 0
        self.by_packets = by_packets

    def configure(self, rates: list[tuple[float, int]]) -> None:
        if len(rates) != 2:
            raise P4Error("a meter takes two rates: committed and peak (rate:burst each)")
        if rates[0][0] > rates[1][0]:
            raise P4Error("meter committed rate exceeds its peak rate")
        self.origin = self.clock.now_us()
        # BMv2 stores the rates reversed: the peak bucket is checked first (RED when
        # empty), then the committed one (YELLOW).
        self.rates = [MeterRate(r, b, b, 0) for r, b in reversed(rates)]

    def execute(self, length: int) -> int:
        if not self.rates:
            return GREEN
        since = self.clock.now_us() - self.origin
        amount = 1 if self.by_packets else length
        n = len(self.rates)
        for i, rate in enumerate(self.rates):
            color = n - i
            total = int(since * rate.info_rate)
            new = total - rate.tokens_last
            rate.tokens_last = total
            rate.tokens = min(rate.tokens + new, rate.burst_size)
            if rate.tokens < amount:
                return color
            rate.tokens -= amount
        return GREEN


@dataclass
class MeterArray:
    name: str
    size: int
    by_packets: bool
    clock: Clock
    cells: list[Meter] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cells = [Meter(self.clock, self.by_packets) for _ in range(self.size)]

    def execute(self, index: int, length: int) -> int:
        if 0 <= index < self.size:
            return self.cells[index].execute(length)
        return GREEN

    def set_rates(self, index: int, rates: list[tuple[float, int]]) -> None:
        _check_index(self.name, index, self.size)
        self.cells[index].configure(rates)
