"""A CPU of its own for the port loop (``softswitch run --dataplane-cpu N``; a softswitch
extension, as OVS-DPDK's ``pmd-cpu-mask`` and VPP's ``main-core`` are theirs; BMv2 has
none).

On a host where the switch shares its CPUs with other busy processes, the port loop is
a runnable thread like any other: when a frame wakes it and every CPU is busy, it waits
for the scheduler to give it one (several milliseconds on a loaded host), and every
frame behind it waits too, urgent ones included. Ingress priority
(``ingress_priority.py``) orders the frames once the loop runs; it cannot make the loop
run. So the loop may get a CPU of its own: the process's other threads (P4Runtime,
the runtime channel, idle timeouts, the memory reclaimer) are kept off it, and the loop
is kept on it. Other processes are not moved: that is the host's business (``taskset``,
``isolcpus``, cpusets); ``bench/urgent_latency.py`` keeps its generator off that CPU.

Linux's affinity is per thread and a new thread inherits its creator's. So
:meth:`DataplaneCpu.confine_control` runs first, on the main thread before any other
thread exists: every thread started afterwards (gRPC's pool included) inherits the
control CPUs. :meth:`DataplaneCpu.enter_loop` then moves the calling thread, the port
loop, onto its CPU. Work other threads hand to the loop (``loop_calls.py``: runtime
channel commands) runs there, one call per turn.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from softswitch.diagnostics import P4Error


@dataclass(frozen=True)
class DataplaneCpu:
    """The port loop's CPU, and the CPUs left to the process's other threads."""

    cpu: int
    control: frozenset[int]

    @classmethod
    def plan(cls, cpu: int, allowed: set[int] | None = None) -> DataplaneCpu:
        """The split for ``cpu`` among ``allowed`` (default: the CPUs this process may
        use); P4Error when ``cpu`` is not one of them or is the only one (the control
        threads would then share it, which is what this is meant to avoid)."""
        allowed = set(os.sched_getaffinity(0)) if allowed is None else set(allowed)
        listed = ",".join(str(c) for c in sorted(allowed))
        if cpu not in allowed:
            raise P4Error(f"--dataplane-cpu {cpu}: this process may use CPUs {listed} only")
        control = frozenset(allowed - {cpu})
        if not control:
            raise P4Error(f"--dataplane-cpu {cpu}: it is the only CPU this process may use;"
                          " the control threads need another one")
        return cls(cpu, control)

    def describe(self) -> str:
        others = ",".join(str(c) for c in sorted(self.control))
        return f"port loop on CPU {self.cpu}, other threads on CPU(s) {others}"

    def confine_control(self) -> None:
        """Keep the calling thread, and every thread it starts from now on, off the
        loop's CPU. Call on the main thread before any other thread starts."""
        os.sched_setaffinity(0, self.control)

    def enter_loop(self) -> None:
        """Move the calling thread (the port loop) onto its CPU."""
        os.sched_setaffinity(0, {self.cpu})
