"""TLS for the controller's P4Runtime sessions, as ``simple_switch_grpc`` serves it.

A switch started with ``--grpc-server-ssl --grpc-server-cert C --grpc-server-key K``
(and ``--grpc-server-cacert CA --grpc-server-with-client-auth`` for mutual TLS) needs a
client that checks its certificate against ``ca`` and, for mutual TLS, shows its own
``cert``/``key``. The same three files are what the intent's ``switches[].tls`` and the
``--tls-*`` options name. ``server_name`` overrides the name checked against the
server's certificate (the address's host by default), for certificates issued to a
name while the switch is reached by address.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import grpc

from controlplane.p4rt.errors import P4RuntimeClientError


@dataclass(frozen=True)
class TlsConfig:
    ca: Path | None = None           # None: the system's trusted roots
    cert: Path | None = None         # client certificate (mutual TLS), with key
    key: Path | None = None
    server_name: str | None = None

    def credentials(self) -> grpc.ChannelCredentials:
        """gRPC channel credentials; unreadable files are a clear error."""
        if (self.cert is None) != (self.key is None):
            raise P4RuntimeClientError("TLS: a client certificate needs its key and the "
                                       "key its certificate (give both or neither)")
        return grpc.ssl_channel_credentials(root_certificates=_read(self.ca, "CA"),
                                            private_key=_read(self.key, "key"),
                                            certificate_chain=_read(self.cert, "certificate"))

    @classmethod
    def from_paths(cls, ca: str | None, cert: str | None, key: str | None,
                   server_name: str | None, base: Path | None) -> TlsConfig:
        """Paths as an intent or command line gives them, relative to ``base``."""
        def resolve(name: str | None) -> Path | None:
            if name is None:
                return None
            path = Path(name).expanduser()
            return path if path.is_absolute() or base is None else base / path
        return cls(resolve(ca), resolve(cert), resolve(key), server_name)

    def options(self) -> list[tuple[str, str]]:
        return ([("grpc.ssl_target_name_override", self.server_name)]
                if self.server_name else [])


def _read(path: Path | None, what: str) -> bytes | None:
    if path is None:
        return None
    try:
        return path.read_bytes()
    except OSError as exc:
        raise P4RuntimeClientError(f"TLS {what} {path}: {exc.strerror or exc}") from None
