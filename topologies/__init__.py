"""Mininet (or plain-namespace) topologies of P4 switches running tailcc.

``python -m topologies FILE.yaml [--switch softswitch|bmv2] [--cli]`` brings a
topology up with one switch process per switch, programs it (intent, tutorials
runtime JSON or simple_switch_CLI commands), pings every host pair and tears it down.
"""

from topologies.runner import PingResult, Runner, RunnerError, cleanup
from topologies.schema import Topology, TopologyError, load_topology

__all__ = ["PingResult", "Runner", "RunnerError", "Topology", "TopologyError", "cleanup",
           "load_topology"]
