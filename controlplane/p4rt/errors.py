"""P4Runtime failures as exceptions whose text a user can act on.

A failed batch Write comes back as gRPC ``UNKNOWN`` with one ``p4.v1.Error`` per update
in the status details; :class:`P4RuntimeWriteError` decodes them so the controller can
say *which* entry the switch refused and why.
"""

from __future__ import annotations

import grpc
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2


class P4RuntimeClientError(Exception):
    """Any P4Runtime-side failure (connection, arbitration, a refused request)."""

    def __init__(self, message: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(message)
        self.code = code


class UnknownNameError(P4RuntimeClientError):
    """A name (table, action, field, ...) the P4Info does not have."""


class BadValueError(P4RuntimeClientError):
    """A value that cannot be parsed or does not fit the field."""


class P4RuntimeWriteError(P4RuntimeClientError):
    """A Write the server refused; :attr:`errors` is (update index, code name, message)."""

    def __init__(self, message: str, errors: list[tuple[int, str, str]],
                 code: grpc.StatusCode | None = None) -> None:
        super().__init__(message, code)
        self.errors = errors


def from_rpc_error(err: grpc.RpcError, what: str) -> P4RuntimeClientError:
    """Convert a gRPC error, decoding per-update Write errors when present."""
    code = err.code() if hasattr(err, "code") else None
    details = err.details() if hasattr(err, "details") else str(err)
    per_update = _write_errors(err)
    if per_update:
        failed = [e for e in per_update if e[1] != "OK"]
        # The cause first: under ROLLBACK_ON_ERROR every other update says ABORTED.
        failed.sort(key=lambda e: e[1] == "ABORTED")
        lines = "; ".join(f"update {i}: {c}: {m}" for i, c, m in failed[:3])
        more = f" (+{len(failed) - 3} more)" if len(failed) > 3 else ""
        return P4RuntimeWriteError(f"{what} failed: {lines}{more}", per_update, code)
    name = code.name if code is not None else "ERROR"
    return P4RuntimeClientError(f"{what} failed: {name}: {details}", code)


def _write_errors(err: grpc.RpcError) -> list[tuple[int, str, str]]:
    metadata = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
    for key, value in metadata or ():
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status()
        status.ParseFromString(value)
        out = []
        for index, detail in enumerate(status.details):
            error = p4runtime_pb2.Error()
            if detail.Unpack(error):
                out.append((index, code_pb2.Code.Name(error.canonical_code), error.message))
        return out
    return []
