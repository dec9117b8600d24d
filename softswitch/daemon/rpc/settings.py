"""gRPC core settings for a ``softswitch run`` server, made before gRPC starts.

grpcio >= 1.5x accepts connections and reads and writes their sockets on EventEngine
threads of its own, which then hand each completed operation to the thread polling the
completion queue: for the unary lane (:mod:`rpc.unary`) that is one more wake-up of
another thread per step of every call. With the listener experiment off, accepted
connections use gRPC's poller endpoints, whose I/O runs on the threads that poll:
grpcio's serving thread, which also answers the lane's calls, so a no-op RPC costs the
server less CPU and more calls are answered per second.

gRPC reads ``GRPC_EXPERIMENTS`` once, when its core starts, so :func:`configure` must run
before the first server or channel exists; a value the user set is left alone. The
experiment names are grpcio's: an unknown one makes gRPC log ``Unknown experiment``,
which ``tests/test_p4runtime_run.py`` watches for on the installed grpcio.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

# "-name" turns an experiment off (gRPC's own syntax for GRPC_EXPERIMENTS)
SERVER_EXPERIMENTS = ("-event_engine_listener",)


def configure(env: MutableMapping[str, str] | None = None) -> bool:
    """Set ``GRPC_EXPERIMENTS`` for a server process unless it is set already; True
    when this call set it."""
    env = os.environ if env is None else env
    if "GRPC_EXPERIMENTS" in env:
        return False
    env["GRPC_EXPERIMENTS"] = ",".join(SERVER_EXPERIMENTS)
    return True
