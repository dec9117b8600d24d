"""DCQCN host reaction (BRIEF §4): the baseline congestion control the lab's senders run.

Reaction point (sender, per QP): on a CNP the target rate takes the current rate, the
current rate drops by alpha/2 and alpha grows by g; without CNPs alpha decays every
55 µs, and the rate recovers every 55 µs or every 10 MB sent — five fast-recovery steps
halving towards the target, then additive (+R_AI) and hyper (+R_HAI) increase.
Notification point (receiver, per QP): at most one CNP per 50 µs for CE-marked packets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ALPHA_G = 1 / 256
TIMER_US = 55.0
BYTE_COUNTER = 10 * 1024 * 1024
FAST_RECOVERY_STEPS = 5
CNP_INTERVAL_US = 50.0


@dataclass
class ReactionPoint:
    """Sending rate of one QP in bits/s, driven by CNPs and the recovery timers."""

    line_rate: float
    rate_ai: float = 40e6      # additive increase (bits/s)
    rate_hai: float = 200e6    # hyper increase (bits/s)
    min_rate: float = 10e6
    current: float = field(init=False)
    target: float = field(init=False)
    alpha: float = 1.0
    _last_cnp_us: float = -1e18
    _last_alpha_us: float = 0.0
    _last_timer_us: float = 0.0
    _bytes_since: int = 0
    _timer_steps: int = 0
    _byte_steps: int = 0
    cnps: int = 0

    def __post_init__(self) -> None:
        self.current = self.line_rate
        self.target = self.line_rate

    def on_cnp(self, now_us: float) -> None:
        self.cnps += 1
        self.target = self.current
        self.current = max(self.current * (1 - self.alpha / 2), self.min_rate)
        self.alpha = (1 - ALPHA_G) * self.alpha + ALPHA_G
        self._last_cnp_us = self._last_alpha_us = self._last_timer_us = now_us
        self._bytes_since = self._timer_steps = self._byte_steps = 0

    def on_sent(self, nbytes: int, now_us: float) -> None:
        """Account sent bytes and run the timers up to ``now_us``."""
        while now_us - self._last_alpha_us >= TIMER_US:
            self._last_alpha_us += TIMER_US
            self.alpha *= 1 - ALPHA_G
        while now_us - self._last_timer_us >= TIMER_US:
            self._last_timer_us += TIMER_US
            self._timer_steps += 1
            self._increase()
        self._bytes_since += nbytes
        if self._bytes_since >= BYTE_COUNTER:
            self._bytes_since = 0
            self._byte_steps += 1
            self._increase()

    def _increase(self) -> None:
        if self.current >= self.line_rate:
            return
        steps = max(self._timer_steps, self._byte_steps)
        if steps > FAST_RECOVERY_STEPS:
            if min(self._timer_steps, self._byte_steps) > FAST_RECOVERY_STEPS:
                self.target += self.rate_hai
            else:
                self.target += self.rate_ai
        self.target = min(self.target, self.line_rate)
        self.current = min((self.target + self.current) / 2, self.line_rate)


@dataclass
class NotificationPoint:
    """Receiver side: decides when a CE-marked packet of a QP triggers a CNP."""

    interval_us: float = CNP_INTERVAL_US
    _last: dict[int, float] = field(default_factory=dict)
    sent: int = 0

    def on_ce(self, qp: int, now_us: float) -> bool:
        last = self._last.get(qp)
        if last is not None and now_us - last < self.interval_us:
            return False
        self._last[qp] = now_us
        self.sent += 1
        return True
