"""Traffic-manager settings: queue weights, rates, depths, link rates and PFC.

P4Runtime has no message for them. Both targets take them on the process's
``--thrift-port`` (the intent's ``runtime_address``), in different ways:

- **softswitch**: a JSON-lines TCP channel that speaks ``simple_switch_CLI``'s commands
  plus softswitch's extensions (``softswitch/runtime_channel.py``): DWRR weights, link
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
    refused: dict[str, list[str]] = {}
    for port, bps in sorted(desired.link_rates.items()):
        refused.setdefault(NO_SHAPER, []).append(
            f"port {port} speed_gbps {speeds.get(port) or bps / 1e9:g}")
    for q in desired.queue_settings:
        if q.mode == "dwrr":
            refused.setdefault(NO_DWRR, []).append(
                f"port {q.port} queue {q.queue} weight {q.weight} (scheduler "
                f"{schedulers.get(q.port)})")
        if q.rate_pps is not None:
            plan.commands.append(f"set_queue_rate {q.rate_pps} {q.port} {q.queue}")
        if q.depth_pkts is not None:
            plan.commands.append(f"set_queue_depth {q.depth_pkts} {q.port} {q.queue}")
    for (port, prio), thresholds in sorted(desired.pfc.items()):
        if thresholds is not None:       # "PFC off" is all BMv2 knows: nothing to send
            refused.setdefault(NO_PFC, []).append(
                f"port {port} priority {prio} xoff {thresholds[0]} xon {thresholds[1]} "
                f"(scheduler {schedulers.get(port)})")
    kinds = {NO_SHAPER: "link rates", NO_DWRR: "DWRR weights", NO_PFC: "PFC thresholds"}
    plan.refused = [f"{kinds[reason]} {', '.join(items)}: {reason}"
                    for reason, items in refused.items()]
    return plan


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
