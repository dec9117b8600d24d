"""Which switch a command talks to: ``--intent F --switch S`` or ``--address/--device-id``.

Commands that read or write one switch share these options, and a session that opens
here always arbitrates and always closes (even on errors), so a failed command never
leaves a stale primary behind.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from controlplane.intent import load_intent
from controlplane.p4rt import Client, EntityBuilder, P4InfoIndex
from controlplane.p4rt.errors import P4RuntimeClientError
from controlplane.p4rt.p4info import load_p4info
from controlplane.p4rt.tls import TlsConfig
from controlplane.reconcile.credentials import switch_tls


class UsageError(Exception):
    """A command-line mistake (printed as ``tailcc: error: …``, exit 2)."""


def positive_float(text: str) -> float:
    """argparse type: a number > 0 (timeouts, intervals)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} must be > 0")
    return value


def non_negative_int(text: str) -> int:
    """argparse type: an integer >= 0 (indices, ids; 0x.. accepted)."""
    try:
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} must be >= 0")
    return value


def grpc_address(text: str) -> str:
    """argparse type: ``host:port``."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return text


def add_address_args(g: argparse._ActionsContainer, address: str, device_id: str,
                     election_id: str) -> None:
    """--address, --device-id and --election-id, with their help texts."""
    g.add_argument("--address", "-a", metavar="HOST:PORT", type=grpc_address, help=address)
    g.add_argument("--device-id", type=non_negative_int, default=None, help=device_id)
    g.add_argument("--election-id", type=non_negative_int, default=None, help=election_id)


def add_target_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("switch")
    g.add_argument("--intent", "-i", metavar="FILE", help="intent file naming the switches")
    g.add_argument("--switch", "-s", metavar="NAME", help="switch name in the intent")
    add_address_args(g, "P4Runtime address", "P4Runtime device id (1)",
                     "election id (default: the intent's, else 1)")
    g.add_argument("--p4info", metavar="FILE",
                   help="P4Info to resolve names with (default: the device's)")
    g.add_argument("--timeout", type=positive_float, default=10.0,
                   help="RPC timeout, s (10)")
    t = p.add_argument_group("TLS (with --address; an intent's switches[].tls otherwise)")
    t.add_argument("--tls", action="store_true",
                   help="P4Runtime over TLS, trusting the system's CAs (or --tls-ca)")
    t.add_argument("--tls-ca", metavar="PEM", help="CA that signed the switch's certificate")
    t.add_argument("--tls-cert", metavar="PEM", help="client certificate (mutual TLS)")
    t.add_argument("--tls-key", metavar="PEM", help="client key (mutual TLS)")
    t.add_argument("--tls-server-name", metavar="NAME",
                   help="name to check the switch's certificate against")


@dataclass
class Target:
    name: str
    address: str
    device_id: int
    election_id: int
    tls: TlsConfig | None = None

    def client(self, timeout: float, atomic_writes: bool | None = None) -> Client:
        return Client(self.address, self.device_id, election_id=self.election_id,
                      timeout=timeout, atomic_writes=atomic_writes, tls=self.tls)


def _tls_args(args: argparse.Namespace) -> TlsConfig | None:
    given = [getattr(args, f"tls_{x}", None) for x in ("ca", "cert", "key", "server_name")]
    if not getattr(args, "tls", False) and not any(given):
        return None
    if (given[1] is None) != (given[2] is None):
        raise UsageError("--tls-cert and --tls-key go together")
    return TlsConfig.from_paths(*given, base=None)


def resolve_target(args: argparse.Namespace) -> Target:
    if args.address:
        device_id = 1 if args.device_id is None else args.device_id
        return Target(args.address, args.address, device_id, args.election_id or 1,
                      _tls_args(args))
    if not args.intent:
        raise UsageError("name a switch: --intent FILE --switch NAME, or --address HOST:PORT")
    intent = load_intent(args.intent)
    if not intent.devices:
        raise UsageError(f"{args.intent}: the intent has no switches")
    if args.switch is None:
        if len(intent.devices) > 1:
            names = ", ".join(s.name for s in intent.devices)
            raise UsageError(f"--switch is required: the intent has several ({names})")
        sw = intent.devices[0]
    else:
        matches = [s for s in intent.devices if s.name == args.switch]
        if not matches:
            names = ", ".join(s.name for s in intent.devices)
            raise UsageError(f"no switch {args.switch!r} in {args.intent} (switches: {names})")
        sw = matches[0]
    return Target(sw.name, sw.address,
                  sw.device_id if args.device_id is None else args.device_id,
                  args.election_id or sw.election_id,
                  _tls_args(args) or switch_tls(intent, sw))


@dataclass
class Session:
    client: Client
    index: P4InfoIndex
    builder: EntityBuilder
    target: Target


@contextmanager
def open_session(args: argparse.Namespace, write: bool) -> Iterator[Session]:
    """Connect (as primary when ``write``), find the P4Info, always close."""
    target = resolve_target(args)
    client = target.client(args.timeout)
    try:
        client.connect(require_primary=write)
        if args.p4info:
            p4info = load_p4info(args.p4info)
        else:
            p4info = client.get_p4info()
            if p4info is None:
                raise P4RuntimeClientError(f"{target.address}: no pipeline is loaded "
                                           "(load one with `tailcc apply --pipeline`)")
        index = P4InfoIndex(p4info)
        yield Session(client, index, EntityBuilder(index), target)
    finally:
        client.close()
