"""What a switch should hold: the output of compilation, the input of reconciliation."""

from __future__ import annotations

from dataclasses import dataclass, field

from p4.v1 import p4runtime_pb2


@dataclass(frozen=True)
class QueueSetting:
    """Traffic-manager configuration that P4Runtime cannot carry (BMv2's
    ``simple_switch_CLI`` ``set_queue_*``; DWRR weights are a softswitch extension)."""

    port: int
    queue: int
    mode: str
    weight: int | None
    rate_pps: int | None
    depth_pkts: int | None

    def cli_commands(self) -> list[str]:
        """Absolute settings, so sending them again changes nothing (idempotent)."""
        cmds = [f"set_queue_weight {self.weight if self.mode == 'dwrr' else 0} "
                f"{self.port} {self.queue}"]
        if self.rate_pps is not None:
            cmds.append(f"set_queue_rate {self.rate_pps} {self.port} {self.queue}")
        if self.depth_pkts is not None:
            cmds.append(f"set_queue_depth {self.depth_pkts} {self.port} {self.queue}")
        return cmds


@dataclass
class DesiredState:
    """Every entity the intent puts on one switch, and which parts of the switch the
    controller owns (entries there that the intent does not name are deleted)."""

    entities: list[p4runtime_pb2.Entity] = field(default_factory=list)
    defaults: list[p4runtime_pb2.Entity] = field(default_factory=list)
    managed_tables: set[int] = field(default_factory=set)
    additive_tables: set[int] = field(default_factory=set)
    managed_profiles: set[int] = field(default_factory=set)
    managed_clone_sessions: range = range(0)
    queue_settings: list[QueueSetting] = field(default_factory=list)
    link_rates: dict[int, int] = field(default_factory=dict)   # port -> bits/s
    pfc: dict[tuple[int, int], tuple[int, int] | None] = field(default_factory=dict)
    """(ingress port, priority) -> (xoff, xon), or None to turn PFC off there."""

    def tm_commands(self) -> list[str]:
        """The traffic-manager half of the intent as runtime-channel commands."""
        cmds = [f"set_link_rate {bps} {port}" for port, bps in sorted(self.link_rates.items())]
        for q in self.queue_settings:
            cmds += q.cli_commands()
        for (port, prio), thresholds in sorted(self.pfc.items()):
            cmds.append(f"set_pfc {port} {prio} {thresholds[0]} {thresholds[1]}"
                        if thresholds else f"clear_pfc {port} {prio}")
        return cmds
