"""Traffic-manager settings: queue weights, rates, depths, link rates and PFC.

P4Runtime has no message for them. Both targets take them on the process's
``--thrift-port`` (the intent's ``runtime_address``), in different ways:

- **softswitch**: a JSON-lines TCP channel that speaks ``simple_switch_CLI``'s commands
  plus softswitch's extensions (``softswitch/daemon/cli_channel/commands.py``): DWRR weights, link
  rates and PFC.
- **BMv2** (``target: bmv2``): its Thrift API (:mod:`.bmv2_thrift`), which has only
  per-priority-queue ``set_queue_rate`` (packets/s) and ``set_queue_depth`` (packets).
  BMv2 schedules its priority queues strictly and has no port shaper and no PFC, so a
  DWRR weight, a port speed or PFC thresholds cannot be applied there:
  :func:`plan_tm` lists them as *refused*, and ``apply`` stops before writing anything
  unless ``--allow-partial`` turns the refusals into warnings.

Settings are absolute, so re-sending them on every apply is idempotent.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass, field

from controlplane.compile.state import DesiredState
from controlplane.intent import model as m
from controlplane.p4rt.errors import P4RuntimeClientError


class RuntimeChannelError(P4RuntimeClientError):
    """The channel is unreachable or refused a command."""


@dataclass
class TmPlan:
    """What one switch's traffic manager is sent, and what it cannot take."""

    target: str
    commands: list[str] = field(default_factory=list)   # simple_switch_CLI syntax
    refused: list[str] = field(default_factory=list)    # "setting: reason"


NO_DWRR = ("BMv2 serves its priority queues in strict priority only (DWRR is a "
           "softswitch extension)")
NO_SHAPER = ("BMv2 has no port shaper (set_queue_rate limits each priority queue on its "
             "own, in packets/s)")
NO_PFC = "BMv2 has no PFC (a softswitch extension)"


def plan_tm(switch: m.Switch, desired: DesiredState) -> TmPlan:
    """The traffic-manager commands for ``switch``'s target, and what it refuses (one
    line per reason, naming every setting it covers)."""
    if switch.target != "bmv2":
        return TmPlan(switch.target, desired.tm_commands())
    plan = TmPlan("bmv2")
    schedulers = {p.number: p.scheduler for p in switch.ports}
    speeds = {p.number: p.speed_gbps for p in switch.ports}
    # per reason: port -> what that port is refused (ports refused alike are named once)
    refused: dict[str, dict[int, list[str]]] = {}
    for port, bps in sorted(desired.link_rates.items()):
        refused.setdefault(NO_SHAPER, {})[port] = [
            f"speed_gbps {speeds.get(port) or bps / 1e9:g}"]
    for q in desired.queue_settings:
        if q.mode == "dwrr":
            refused.setdefault(NO_DWRR, {}).setdefault(q.port, []).append(
                f"queue {q.queue} weight {q.weight}")
        if q.rate_pps is not None:
            plan.commands.append(f"set_queue_rate {q.rate_pps} {q.port} {q.queue}")
        if q.depth_pkts is not None:
            plan.commands.append(f"set_queue_depth {q.depth_pkts} {q.port} {q.queue}")
    pfc: dict[int, dict[tuple[int, int], list[int]]] = {}
    for (port, prio), thresholds in sorted(desired.pfc.items()):
        if thresholds is not None:       # "PFC off" is all BMv2 knows: nothing to send
            pfc.setdefault(port, {}).setdefault(tuple(thresholds), []).append(prio)
    for port, by_threshold in pfc.items():
        refused.setdefault(NO_PFC, {})[port] = [
            f"{'priorities' if len(prios) > 1 else 'priority'} "
            f"{', '.join(map(str, prios))} xoff {xoff} xon {xon}"
            for (xoff, xon), prios in by_threshold.items()]
    kinds = {NO_SHAPER: "link rates", NO_DWRR: "DWRR weights", NO_PFC: "PFC thresholds"}
    scheduled = {NO_DWRR, NO_PFC}        # settings that come from the port's scheduler
    plan.refused = [
        f"{kinds[reason]} {_by_ports(items, schedulers if reason in scheduled else None)}: "
        f"{reason}" for reason, items in refused.items()]
    return plan


def _by_ports(items: dict[int, list[str]], schedulers: dict[int, str] | None) -> str:
    """``port 1 queue 4 weight 50, …; ports 2-4 …``: ports with the same settings (and
    scheduler) named together, so a fabric's refusal is a line, not a page."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for port, what in sorted(items.items()):
        sched = f"(scheduler {schedulers.get(port)})" if schedulers is not None else ""
        groups.setdefault((sched, *what), []).append(port)
    parts = []
    for (sched, *what), ports in groups.items():
        named = (f"port {ports[0]}" if len(ports) == 1 else f"ports {_ranges(ports)}")
        parts.append(" ".join(x for x in (named, sched) if x) + " " + ", ".join(what))
    return "; ".join(parts)


def _ranges(numbers: list[int]) -> str:
    """``1-4, 7``: sorted numbers with runs shortened."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}-{r[-1]}" if len(r) > 2 else ", ".join(map(str, r))
                     for r in runs)


def check_target(switch: m.Switch, timeout: float = 10.0) -> None:
    """Fail early (before any write) when BMv2's Thrift port does not answer as BMv2
    (softswitch's channel is left as it was: it reports at the first command)."""
    if switch.runtime_address is None or switch.target != "bmv2":
        return
    from controlplane.reconcile.bmv2_thrift import Bmv2Thrift
    with Bmv2Thrift(switch.runtime_address, timeout) as bm:
        bm.check()


def send_tm(switch: m.Switch, commands: list[str], timeout: float = 10.0,
            token: str | None = None) -> int:
    """Send the commands of :func:`plan_tm` to the switch's ``runtime_address``
    (``token``: softswitch's runtime channel token, see credentials.switch_token)."""
    if switch.runtime_address is None or not commands:
        return 0
    if switch.target == "bmv2":
        from controlplane.reconcile.bmv2_thrift import Bmv2Thrift, run_command
        with Bmv2Thrift(switch.runtime_address, timeout) as bm:
            for cmd in commands:
                run_command(bm, cmd)
        return len(commands)
    return send_commands(switch.runtime_address, commands, timeout, token)


def send_commands(address: str, commands: list[str], timeout: float = 10.0,
                  token: str | None = None) -> int:
    """softswitch's runtime channel: send each command; the first refusal raises
    (naming the command). ``token``: sent first, for a switch started with
    ``--runtime-token-file``."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as sock:
            stream = sock.makefile("rwb")
            if token is not None:
                stream.write((json.dumps({"token": token}) + "\n").encode())
                stream.flush()
                reply = json.loads(stream.readline() or b"{}")
                if not reply.get("ok"):
                    raise RuntimeChannelError(f"{address}: the runtime channel refused the "
                                              "token (runtime_token_file)")
            for cmd in commands:
                stream.write((json.dumps({"cmd": cmd}) + "\n").encode())
                stream.flush()
                line = stream.readline()
                if not line:
                    raise RuntimeChannelError(f"{address}: runtime channel closed")
                reply = json.loads(line)
                if not reply.get("ok"):
                    raise RuntimeChannelError(f"{address}: {cmd!r} refused: "
                                              f"{reply.get('output', '')}")
    except OSError as exc:
        raise RuntimeChannelError(f"{address}: runtime channel: {exc.strerror or exc}") \
            from None
    except json.JSONDecodeError:
        raise RuntimeChannelError(f"{address}: runtime channel answered garbage") from None
    return len(commands)
